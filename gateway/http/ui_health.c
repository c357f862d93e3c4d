/* `serve --health-url`: the health service the status page reads and links (docs/api.md §19). */
#include "ui_health.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GW_UI_CSP_REST "; form-action 'none'; frame-ancestors 'none'"

static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/* The length of the HOST at p; 0: none. */
static size_t host_length(const char *p)
{
    if (p[0] != '[') {
        size_t n = 0;
        while (p[n] && (strchr(letters, p[n]) || p[n] == '.' || p[n] == '-'))
            n++;
        return n;
    }
    size_t n = strspn(p + 1, "0123456789abcdefABCDEF:.");
    return n > 0 && p[1 + n] == ']' ? n + 2 : 0;
}

/* The length of the origin at the start of url ("http://HOST[:PORT]"); 0: none. */
static size_t origin_length(const char *url)
{
    size_t scheme = strncmp(url, "http://", 7) == 0 ? 7 : strncmp(url, "https://", 8) == 0 ? 8 : 0;
    size_t host = scheme ? host_length(url + scheme) : 0;
    if (host == 0)
        return 0;
    size_t n = scheme + host;
    if (url[n] == ':') { /* a port a browser connects to: 1 to 65535 */
        size_t digits = strspn(url + n + 1, "0123456789");
        unsigned long port = digits >= 1 && digits <= 5 ? strtoul(url + n + 1, NULL, 10) : 0;
        if (port < 1 || port > 65535)
            return 0;
        n += 1 + digits;
    }
    return n;
}

static int path_ok(const char *path)
{
    if (path[0] == '\0')
        return 1;
    for (const char *p = path; *p; p++)
        if (!strchr(letters, *p) && !strchr("._~/-", *p))
            return 0;
    return path[0] == '/' && path[strlen(path) - 1] == '/';
}

int gw_ui_health_url_check(const char *url, char *msg, size_t cap)
{
    size_t origin = strlen(url) <= GW_HEALTH_URL_MAX ? origin_length(url) : 0;
    if (origin > 0 && path_ok(url + origin))
        return 0;
    snprintf(msg, cap,
             "--health-url %.*s: expected http://HOST[:PORT]/ or https://HOST[:PORT]/PATH/ (the "
             "health service's base: the page reads URL healthz and links URL ui/)",
             GW_HEALTH_URL_MAX, url);
    return -1;
}

void gw_ui_config_make(struct gw_ui_config *c, const char *health_url)
{
    if (!health_url) {
        snprintf(c->csp, sizeof(c->csp), "default-src 'self'" GW_UI_CSP_REST);
        snprintf(c->json, sizeof(c->json), "{\"health_url\":null}\n");
        return;
    }
    size_t origin = origin_length(health_url);
    snprintf(c->csp, sizeof(c->csp), "default-src 'self'; connect-src 'self' %.*s" GW_UI_CSP_REST,
             (int)origin, health_url);
    snprintf(c->json, sizeof(c->json), "{\"health_url\":\"%s%s\"}\n", health_url,
             health_url[origin] ? "" : "/");
}
