/* Contract reader (docs/contract.md §1): strict KEY=VALUE lines, 4 required keys, no defaults. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"

enum { K_RING, K_VNODES, K_TABLE, K_SLOTS, K_HASH, K_POLICY, K_COUNT };

#define HC_LINE_MAX 4095 /* bytes of a line without its newline */

static const char *const hc_contract_keys[K_COUNT] = {
    "DISPATCH_HASH_RING",  "DISPATCH_VNODES",    "DISPATCH_MAGLEV_TABLE",
    "DISPATCH_JUMP_SLOTS", "DISPATCH_RING_HASH", "DISPATCH_CAPACITY_POLICY",
};

const char *hc_ring_name(enum hc_ring_kind k)
{
    return k == HC_RING_MAGLEV ? "maglev" : k == HC_RING_JUMP ? "jump" : "ketama";
}

/* The key that sizes a ring of this kind. */
static int hc_own_key(enum hc_ring_kind k)
{
    return k == HC_RING_MAGLEV ? K_TABLE : k == HC_RING_JUMP ? K_SLOTS : K_VNODES;
}

static int hc_is_size_key(int k)
{
    return k == K_VNODES || k == K_TABLE || k == K_SLOTS;
}

/* The first sizing key in key order that this contract must not hold but does, or -1. */
static int hc_foreign_key(const struct hc_contract *c, const int seen[K_COUNT])
{
    for (int k = 0; k < K_COUNT; k++)
        if (hc_is_size_key(k) && k != hc_own_key(c->ring) && seen[k])
            return k;
    return -1;
}

/* A key the contract must hold: not a sizing key, or the one of its ring. */
static int hc_required(const struct hc_contract *c, int k)
{
    return !hc_is_size_key(k) || k == hc_own_key(c->ring);
}

const char *hc_size_key(const struct hc_contract *c)
{
    return hc_contract_keys[hc_own_key(c->ring)];
}

unsigned hc_size(const struct hc_contract *c)
{
    return c->ring == HC_RING_KETAMA ? c->vnodes : c->table;
}

const char *hc_hash_name(enum hc_hash h)
{
    return h == HC_HASH_MD5 ? "md5" : "sha1";
}

const char *hc_policy_name(enum hc_policy p)
{
    return p == HC_POLICY_SPILL ? "spill" : p == HC_POLICY_REJECT ? "reject" : "report";
}

static int hc_key_index(const char *key)
{
    for (int i = 0; i < K_COUNT; i++)
        if (strcmp(key, hc_contract_keys[i]) == 0)
            return i;
    return -1;
}

/* Parses a count: decimal digits only, 1..max. Returns 0 or -EINVAL / -ERANGE. */
static int hc_parse_count(const char *s, long long max, unsigned *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 18 || strspn(s, "0123456789") != n)
        return -EINVAL;
    long long v = strtoll(s, NULL, 10);
    if (v < 1 || v > max)
        return -ERANGE;
    *out = (unsigned)v;
    return 0;
}

/* Parses a table size: decimal digits, a prime 2..HC_TABLE_MAX. Returns 0 or -EINVAL. */
static int hc_parse_table(const char *s, unsigned *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 9 || strspn(s, "0123456789") != n || (s[0] == '0' && n > 1))
        return -EINVAL;
    unsigned long v = strtoul(s, NULL, 10);
    if (v < 2 || v > HC_TABLE_MAX)
        return -EINVAL;
    for (unsigned long d = 2; d * d <= v; d++)
        if (v % d == 0)
            return -EINVAL;
    *out = (unsigned)v;
    return 0;
}

/* Applies one key's value. Returns 0 or -EINVAL with err->msg holding only the description. */
static int hc_contract_set(struct hc_contract *c, int k, const char *value, struct hc_err *err)
{
    switch (k) {
    case K_RING:
        if (strcmp(value, "ketama") == 0)
            c->ring = HC_RING_KETAMA;
        else if (strcmp(value, "maglev") == 0)
            c->ring = HC_RING_MAGLEV;
        else if (strcmp(value, "jump") == 0)
            c->ring = HC_RING_JUMP;
        else
            return hc_err_set(err, -EINVAL,
                              "DISPATCH_HASH_RING: must be ketama, maglev or jump, got '%s'",
                              value);
        return 0;
    case K_SLOTS: {
        unsigned slots;
        int rc = hc_parse_count(value, HC_JUMP_SLOTS_MAX, &slots);
        if (rc == -EINVAL || (value[0] == '0' && value[1]))
            return hc_err_set(err, -EINVAL, "DISPATCH_JUMP_SLOTS: not an integer: '%s'", value);
        if (rc != 0)
            return hc_err_set(err, -EINVAL, "DISPATCH_JUMP_SLOTS: %s is out of range 1..%u", value,
                              HC_JUMP_SLOTS_MAX);
        c->table = slots;
        return 0;
    }
    case K_TABLE:
        if (hc_parse_table(value, &c->table) != 0)
            return hc_err_set(err, -EINVAL,
                              "DISPATCH_MAGLEV_TABLE: must be a prime 2..%u, got '%s'",
                              HC_TABLE_MAX, value);
        return 0;
    case K_VNODES: {
        int rc = hc_parse_count(value, HC_VNODES_MAX, &c->vnodes);
        if (rc == -EINVAL)
            return hc_err_set(err, -EINVAL, "DISPATCH_VNODES: not an integer: '%s'", value);
        if (rc != 0)
            return hc_err_set(err, -EINVAL, "DISPATCH_VNODES: %s is out of range 1..%d", value,
                              HC_VNODES_MAX);
        return 0;
    }
    case K_HASH:
        if (strcmp(value, "sha1") == 0)
            c->hash = HC_HASH_SHA1;
        else if (strcmp(value, "md5") == 0)
            c->hash = HC_HASH_MD5;
        else
            return hc_err_set(err, -EINVAL, "DISPATCH_RING_HASH: must be sha1 or md5, got '%s'",
                              value);
        return 0;
    default:
        if (strcmp(value, "report") == 0)
            c->policy = HC_POLICY_REPORT;
        else if (strcmp(value, "reject") == 0)
            c->policy = HC_POLICY_REJECT;
        else if (strcmp(value, "spill") == 0)
            c->policy = HC_POLICY_SPILL;
        else
            return hc_err_set(err, -EINVAL,
                              "DISPATCH_CAPACITY_POLICY: must be report, reject or spill, got '%s'",
                              value);
        return 0;
    }
}

/* Checks one non-blank, non-comment line and splits it at '='. Returns 0 or -EINVAL. */
static int hc_contract_line(char *line, char **key, char **value, struct hc_err *err)
{
    if (strncmp(line, "export", 6) == 0 && (line[6] == ' ' || line[6] == '\t'))
        return hc_err_set(err, -EINVAL, "'export' is not allowed");
    char *eq = strchr(line, '=');
    if (eq == NULL)
        return hc_err_set(err, -EINVAL, "expected KEY=VALUE");
    *eq = '\0';
    *key = line;
    *value = eq + 1;
    if (**key == '\0')
        return hc_err_set(err, -EINVAL, "empty key");
    if (strpbrk(*key, " \t") != NULL || (eq > line && (eq[-1] == ' ' || eq[-1] == '\t')) ||
        **value == ' ' || **value == '\t')
        return hc_err_set(err, -EINVAL, "no spaces allowed around '=' or in the key");
    if (strspn(*key, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != strlen(*key))
        return hc_err_set(err, -EINVAL, "invalid key '%s'", *key);
    if (strpbrk(*value, "\"'") != NULL)
        return hc_err_set(err, -EINVAL, "%s: quotes are not allowed", *key);
    if (strpbrk(*value, " \t") != NULL)
        return hc_err_set(err, -EINVAL, "%s: spaces are not allowed in the value", *key);
    if (**value == '\0')
        return hc_err_set(err, -EINVAL, "%s: empty value", *key);
    return 0;
}

/* One line of the contract file (its newline cut off, `n` bytes): comments and blank lines
 * are skipped, anything else must be a new, known KEY=VALUE. */
static int hc_contract_take_line(const char *path, long lineno, char *buf, size_t n,
                                 int seen[K_COUNT], struct hc_contract *c, struct hc_err *err)
{
    struct hc_err what;
    if (memchr(buf, '\0', n) != NULL)
        return hc_err_set(err, -EINVAL, "%s:%ld: NUL byte in line", path, lineno);
    if (n == 0 || buf[0] == '#')
        return 0;
    /* As strict as docs/contract.md §1: a CRLF line or a blank-looking line of spaces is
     * refused, never silently trimmed into something the gateway would not accept. */
    if (strchr(" \t\r", buf[n - 1]) != NULL || buf[0] == ' ' || buf[0] == '\t')
        return hc_err_set(err, -EINVAL, "%s:%ld: whitespace at the start or end of a line", path,
                          lineno);
    char *key = NULL, *value = NULL;
    int rc = hc_contract_line(buf, &key, &value, &what);
    if (rc != 0)
        return hc_err_set(err, rc, "%s:%ld: %s", path, lineno, what.msg);
    int k = hc_key_index(key);
    if (k < 0)
        return hc_err_set(err, -EINVAL, "%s:%ld: unknown key %s", path, lineno, key);
    if (seen[k])
        return hc_err_set(err, -EINVAL, "%s:%ld: duplicate key %s (first on line %d)", path, lineno,
                          key, seen[k]);
    seen[k] = (int)lineno;
    rc = hc_contract_set(c, k, value, &what);
    if (rc != 0)
        return hc_err_set(err, rc, "%s:%ld: %s", path, lineno, what.msg);
    return 0;
}

/* Every key of the algorithm was given and none of the other's, after the last line; spill
 * walks ring points, so it needs ketama (docs/contract.md §1, §9). `seen` holds lines. */
static int hc_contract_complete(const char *path, long lineno, const int seen[K_COUNT],
                                const struct hc_contract *c, struct hc_err *err)
{
    if (!seen[K_RING])
        return hc_err_set(err, -EINVAL, "%s:%ld: missing required key %s", path, lineno,
                          hc_contract_keys[K_RING]);
    int other = hc_foreign_key(c, seen);
    if (other >= 0)
        return hc_err_set(err, -EINVAL, "%s:%d: %s: not a key of DISPATCH_HASH_RING=%s", path,
                          seen[other], hc_contract_keys[other], hc_ring_name(c->ring));
    for (int k = 0; k < K_COUNT; k++)
        if (hc_required(c, k) && !seen[k])
            return hc_err_set(err, -EINVAL, "%s:%ld: missing required key %s", path, lineno,
                              hc_contract_keys[k]);
    if (c->ring != HC_RING_KETAMA && c->policy == HC_POLICY_SPILL)
        return hc_err_set(err, -EINVAL, "%s:%d: DISPATCH_CAPACITY_POLICY: spill needs ketama", path,
                          seen[K_POLICY]);
    return 0;
}

int hc_contract_load(const char *path, struct hc_contract *c, struct hc_err *err)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        int e = errno;
        return hc_err_set(err, -e, "%s: cannot open: %s", path, strerror(e));
    }
    int seen[K_COUNT] = {0};
    memset(c, 0, sizeof *c);
    /* getline, not fgets: it counts the bytes it read, so a NUL inside a line is seen
     * (with fgets, strlen stopped at the NUL, and "16<NUL>0" was read as 16). */
    char *buf = NULL;
    size_t cap = 0;
    ssize_t got;
    long lineno = 0;
    int rc = 0;
    while (rc == 0 && (got = getline(&buf, &cap, f)) != -1) {
        lineno++;
        size_t n = (size_t)got;
        if (n - (buf[n - 1] == '\n') >= HC_LINE_MAX) {
            rc = hc_err_set(err, -EINVAL, "%s:%ld: line too long", path, lineno);
            break;
        }
        if (n > 0 && buf[n - 1] == '\n')
            buf[--n] = '\0';
        rc = hc_contract_take_line(path, lineno, buf, n, seen, c, err);
    }
    if (rc == 0 && ferror(f))
        rc = hc_err_set(err, -EIO, "%s:%ld: read error", path, lineno);
    if (rc == 0)
        rc = hc_contract_complete(path, lineno, seen, c, err);
    free(buf);
    fclose(f);
    return rc;
}

int hc_contract_from_json(const json_t *obj, struct hc_contract *c, struct hc_err *err)
{
    if (!json_is_object(obj))
        return hc_err_set(err, -EINVAL, "contract: must be an object");
    int seen[K_COUNT] = {0};
    const char *key;
    json_t *val;
    struct hc_err what;
    memset(c, 0, sizeof *c);
    json_object_foreach((json_t *)obj, key, val)
    {
        int k = hc_key_index(key);
        if (k < 0)
            return hc_err_set(err, -EINVAL, "contract.%s: unknown key", key);
        seen[k] = 1;
        char num[32];
        const char *text;
        if (hc_is_size_key(k)) {
            if (!json_is_integer(val))
                return hc_err_set(err, -EINVAL, "contract.%s: must be an integer", key);
            snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(val));
            text = num;
        } else {
            if (!json_is_string(val))
                return hc_err_set(err, -EINVAL, "contract.%s: must be a string", key);
            text = json_string_value(val);
        }
        if (hc_contract_set(c, k, text, &what) != 0)
            return hc_err_set(err, -EINVAL, "contract.%s", what.msg);
    }
    int other = seen[K_RING] ? hc_foreign_key(c, seen) : -1;
    if (other >= 0)
        return hc_err_set(err, -EINVAL, "contract.%s: not a key of DISPATCH_HASH_RING=%s",
                          hc_contract_keys[other], hc_ring_name(c->ring));
    for (int k = 0; k < K_COUNT; k++)
        if (hc_required(c, k) && !seen[k])
            return hc_err_set(err, -EINVAL, "contract.%s: missing", hc_contract_keys[k]);
    if (c->ring != HC_RING_KETAMA && c->policy == HC_POLICY_SPILL)
        return hc_err_set(err, -EINVAL, "contract.DISPATCH_CAPACITY_POLICY: spill needs ketama");
    return 0;
}
