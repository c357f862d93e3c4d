/* A request's framing, checked once its head is read and before any of its body (docs/api.md §1,
 * RFC 9112 section 6): the only Transfer-Encoding read is `chunked`, never beside a Content-Length,
 * and a Content-Length is one run of digits, the same in every copy of the header. Anything else is
 * refused and the connection closed, so no byte after it is read as another request. */
#include "request.h"

#include <string.h>
#include <strings.h>

struct lengths {
    size_t count;
    const char *first;
    int differ;
};

static enum MHD_Result each_length(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    struct lengths *l = cls;
    (void)kind;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) != 0)
        return MHD_YES;
    if (l->count++ == 0)
        l->first = value;
    else if (strcmp(l->first, value) != 0)
        l->differ = 1;
    return MHD_YES;
}

static int all_digits(const char *v)
{
    if (!*v)
        return 0;
    for (; *v; v++)
        if (*v < '0' || *v > '9')
            return 0;
    return 1;
}

unsigned gw_framing_fault(struct MHD_Connection *conn, const char **msg)
{
    const char *te =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    struct lengths l = {0, NULL, 0};
    MHD_get_connection_values(conn, MHD_HEADER_KIND, each_length, &l);
    if (te && strcasecmp(te, "chunked") != 0) {
        *msg = "Transfer-Encoding: only \"chunked\" is read";
        return MHD_HTTP_NOT_IMPLEMENTED;
    }
    if (te && l.count) {
        *msg = "Transfer-Encoding and Content-Length together (RFC 9112 section 6.3)";
        return MHD_HTTP_BAD_REQUEST;
    }
    if (l.differ) {
        *msg = "Content-Length given twice with different values";
        return MHD_HTTP_BAD_REQUEST;
    }
    if (l.count && !all_digits(l.first)) {
        *msg = "Content-Length: not a decimal number of bytes";
        return MHD_HTTP_BAD_REQUEST;
    }
    return 0;
}
