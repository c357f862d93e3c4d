/* A shard's state by name, and the names shards and batches may have. */
#include "shard.h"

#include <string.h>

static const char *const state_names[] = {
    [GW_STATE_ONLINE] = "online",
    [GW_STATE_DRAINING] = "draining",
    [GW_STATE_OFFLINE] = "offline",
};

const char *gw_state_name(enum gw_shard_state state)
{
    return state_names[state];
}

int gw_name_valid(const char *s, size_t len, size_t max)
{
    if (len < 1 || len > max)
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-'))
            return 0;
    }
    return 1;
}

int gw_state_parse(const char *s, size_t len, enum gw_shard_state *out)
{
    for (size_t i = 0; s && i < sizeof(state_names) / sizeof(state_names[0]); i++) {
        if (len == strlen(state_names[i]) && memcmp(s, state_names[i], len) == 0) {
            *out = (enum gw_shard_state)i;
            return 0;
        }
    }
    return -1;
}
