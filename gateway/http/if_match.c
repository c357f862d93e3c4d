/* If-Match as RFC 9110 defines it (if_match.h). */
#include "if_match.h"

#include <stdio.h>
#include <string.h>

void gw_epoch_etag(char out[GW_EPOCH_HEX_LEN + 3], const char *epoch)
{
    snprintf(out, GW_EPOCH_HEX_LEN + 3, "\"%s\"", epoch);
}

static const char *skip_ows(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* etagc: %x21 / %x23-7E / obs-text. */
static int etagc(unsigned char c)
{
    return c == 0x21 || (c >= 0x23 && c <= 0x7e) || c >= 0x80;
}

/* One entity tag at p: its opaque part (between the quotes) in *tag, *len, *weak; the byte
 * after it, or NULL when there is none. */
static const char *entity_tag(const char *p, const char **tag, size_t *len, int *weak)
{
    *weak = strncmp(p, "W/", 2) == 0;
    if (*weak)
        p += 2;
    if (*p != '"')
        return NULL;
    const char *start = ++p;
    while (etagc((unsigned char)*p))
        p++;
    if (*p != '"')
        return NULL;
    *tag = start;
    *len = (size_t)(p - start);
    return p + 1;
}

/* Walks the list; with `epoch`, returns 1 as soon as a strong tag equals it. -1 when the value
 * is not well formed. */
static int walk(const char *value, const char *epoch)
{
    const char *p = skip_ows(value);
    if (*p == '*' && *skip_ows(p + 1) == '\0')
        return 1;
    int tags = 0, found = 0;
    while (*p) {
        if (*p == ',') { /* an empty element */
            p = skip_ows(p + 1);
            continue;
        }
        const char *tag;
        size_t len;
        int weak;
        p = entity_tag(p, &tag, &len, &weak);
        if (!p)
            return -1;
        tags++;
        found |= epoch && !weak && len == strlen(epoch) && memcmp(tag, epoch, len) == 0;
        p = skip_ows(p);
        if (*p && *p != ',')
            return -1;
    }
    return tags ? found : -1;
}

int gw_if_match_parse(const char *value)
{
    return walk(value, NULL) < 0 ? -1 : 0;
}

int gw_if_match_matches(const char *value, const char *epoch)
{
    return walk(value, epoch) == 1;
}
