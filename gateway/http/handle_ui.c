/* GET /ui/ (docs/api.md §19): the status page, HTML, CSS and JavaScript compiled into the
 * program (ui/, embedded by ui/embed.cmake). */
#include "request.h"

#include <stdio.h>
#include <string.h>

#include "http.h"

/* Generated: the asset served at /ui/URL. Returns 0, or -1 when there is none. */
int gw_ui_asset(const char *url, const char **type, const unsigned char **data, size_t *len);

enum MHD_Result gw_handle_ui(struct gw_req *r, const char *rest)
{
    if (rest[0] == '\0') { /* /ui: the page's URLs are relative to /ui/ */
        struct gw_buf body;
        gw_buf_init(&body);
        gw_buf_puts(&body, "/ui/\n");
        return gw_serve_respond(r, MHD_HTTP_PERMANENT_REDIRECT, "text/plain; charset=utf-8", &body,
                                MHD_HTTP_HEADER_LOCATION, "/ui/");
    }
    if (strcmp(rest, "/config.json") == 0) /* what the page links: docs/api.md §19 */
        return gw_serve_static(r, "application/json", r->srv->ui.json, strlen(r->srv->ui.json));
    const char *type;
    const unsigned char *data;
    size_t len;
    if (rest[0] == '/' && gw_ui_asset(rest[1] ? rest + 1 : "index.html", &type, &data, &len) == 0)
        return gw_serve_static(r, type, data, len);
    char msg[320];
    snprintf(msg, sizeof(msg), "no such endpoint: %.200s", r->path);
    return gw_serve_error(r, MHD_HTTP_NOT_FOUND, "not_found", msg, "", NULL, NULL);
}
