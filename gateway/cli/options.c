/* What a command says about an option getopt_long refused (options.h). */
#include "options.h"

#include <stdio.h>
#include <string.h>

#define NEAR_EDITS 2
#define NAME_MAX_LEN 64

/* Levenshtein distance of a[0..n) and b[0..m), both at most NAME_MAX_LEN. */
static size_t edits(const char *a, size_t n, const char *b, size_t m)
{
    size_t row[NAME_MAX_LEN + 1];
    for (size_t j = 0; j <= m; j++)
        row[j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[m];
}

/* The closest option of `opts` to name[0..len), within two edits; NULL when none is. */
static const char *nearest(const struct option *opts, const char *name, size_t len)
{
    const char *best = NULL;
    size_t best_edits = NEAR_EDITS + 1;
    if (len > NAME_MAX_LEN)
        return NULL;
    for (const struct option *o = opts; o->name; o++) {
        size_t olen = strlen(o->name);
        if (olen > NAME_MAX_LEN)
            continue;
        size_t d = edits(name, len, o->name, olen);
        if (d < best_edits) {
            best = o->name;
            best_edits = d;
        }
    }
    return best;
}

static const struct option *named(const struct option *opts, const char *name, size_t len)
{
    for (const struct option *o = opts; o->name; o++)
        if (strlen(o->name) == len && memcmp(o->name, name, len) == 0)
            return o;
    return NULL;
}

void gw_cli_bad_option(const struct option *opts, char **argv, char *msg, size_t cap)
{
    const char *arg = argv[optind - 1];
    if (strncmp(arg, "--", 2) != 0) {
        snprintf(msg, cap, "unknown option %.80s", arg);
        return;
    }
    const char *name = arg + 2;
    size_t len = strcspn(name, "=");
    const struct option *o = named(opts, name, len);
    if (o && o->has_arg == required_argument) {
        snprintf(msg, cap, "--%s needs a value", o->name);
        return;
    }
    const char *near = nearest(opts, name, len);
    if (o) /* --NAME=VALUE for an option that takes none */
        snprintf(msg, cap, "--%s takes no value", o->name);
    else if (near)
        snprintf(msg, cap, "unknown option --%.*s (did you mean --%s?)", (int)(len < 80 ? len : 80),
                 name, near);
    else
        snprintf(msg, cap, "unknown option --%.*s", (int)(len < 80 ? len : 80), name);
}

void gw_cli_unexpected(const char *arg, char *msg, size_t cap)
{
    snprintf(msg, cap, "unexpected argument \"%.80s\"", arg);
}
