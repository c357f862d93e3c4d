/* A request's query parameters and numeric headers, read strictly (docs/api.md §1.1): a value
 * that holds a NUL byte is refused, never read as the C string before it. */
#include "request.h"

#include <errno.h>
#include <string.h>

#include "number.h"

int gw_param_value(struct gw_req *r, enum MHD_ValueKind kind, const char *name, const char **value)
{
    size_t len = 0;
    *value = NULL;
    if (MHD_lookup_connection_value_n(r->conn, kind, name, strlen(name), value, &len) != MHD_YES)
        *value = NULL;
    return !*value || strlen(*value) == len ? 0 : -EINVAL;
}

int gw_param(struct gw_req *r, const char *name, const char **value)
{
    return gw_param_value(r, MHD_GET_ARGUMENT_KIND, name, value);
}

int gw_param_u64(struct gw_req *r, const char *name, uint64_t min, uint64_t max, uint64_t def,
                 uint64_t *out)
{
    const char *v;
    *out = def;
    if (gw_param(r, name, &v) != 0)
        return -EINVAL;
    return v ? gw_parse_u64(v, min, max, out) : 0;
}

int gw_param_svg(struct gw_req *r)
{
    const char *v;
    if (gw_param(r, "format", &v) != 0)
        return -1;
    return !v || strcmp(v, "json") == 0 ? 0 : strcmp(v, "svg") == 0 ? 1 : -1;
}

int gw_param_flag(struct gw_req *r, const char *name)
{
    const char *v;
    if (gw_param(r, name, &v) != 0)
        return -1;
    return !v || strcmp(v, "0") == 0 ? 0 : strcmp(v, "1") == 0 ? 1 : -1;
}
