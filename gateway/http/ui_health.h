/* The status page's link to the health service (`serve --health-url`, docs/api.md §19): the URL
 * checked, the page's Content-Security-Policy that lets it read that service, and what the page
 * is told at /ui/config.json. */
#ifndef SHARDGATE_GW_UI_HEALTH_H
#define SHARDGATE_GW_UI_HEALTH_H

#include <stddef.h>

#define GW_HEALTH_URL_MAX 200

/* What the page is served with: its policy and its configuration document. */
struct gw_ui_config {
    char csp[GW_HEALTH_URL_MAX + 160];
    char json[GW_HEALTH_URL_MAX + 40];
};

/* Checks `url`: "http://HOST[:PORT]" or "https://HOST[:PORT]", then nothing or a path of
 * [A-Za-z0-9._~/-] ending in '/'; HOST a name of letters, digits, '.' and '-', or "[IPv6]".
 * Returns 0, or -1 with a message naming the option in msg. */
int gw_ui_health_url_check(const char *url, char *msg, size_t cap);

/* Fills c for `health_url` (checked), or for none when it is NULL. */
void gw_ui_config_make(struct gw_ui_config *c, const char *health_url);

#endif
