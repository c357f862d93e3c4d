/* Contract loading: every key required, nothing defaulted, every fault named by file:line. */
#include "contract.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "number.h"

enum contract_key { KEY_RING, KEY_VNODES, KEY_TABLE, KEY_SLOTS, KEY_HASH, KEY_POLICY, KEY_COUNT };

static const char *const key_names[KEY_COUNT] = {
    [KEY_RING] = "DISPATCH_HASH_RING",     [KEY_VNODES] = "DISPATCH_VNODES",
    [KEY_TABLE] = "DISPATCH_MAGLEV_TABLE", [KEY_SLOTS] = "DISPATCH_JUMP_SLOTS",
    [KEY_HASH] = "DISPATCH_RING_HASH",     [KEY_POLICY] = "DISPATCH_CAPACITY_POLICY",
};

/* The key that sizes each algorithm's ring (docs/contract.md §1). */
static enum contract_key size_key(enum ring_algorithm a)
{
    return a == RING_MAGLEV ? KEY_TABLE : a == RING_JUMP ? KEY_SLOTS : KEY_VNODES;
}

static int is_size_key(int k)
{
    return k == KEY_VNODES || k == KEY_TABLE || k == KEY_SLOTS;
}

struct contract_parse {
    const char *name;
    size_t lineno;
    size_t seen_on[KEY_COUNT]; /* line of each key, 0 while unseen */
    struct gw_contract *out;
    struct gw_error *err;
};

static int fail(struct contract_parse *p, size_t line, const char *what, const char *detail)
{
    gw_error_set(p->err, "", "contract: %s:%zu: %s%s", p->name, line, what, detail);
    return -EINVAL;
}

const char *gw_policy_name(enum gw_policy policy)
{
    static const char *const names[] = {
        [GW_POLICY_REPORT] = "report", [GW_POLICY_REJECT] = "reject", [GW_POLICY_SPILL] = "spill"};
    return names[policy];
}

const char *gw_contract_size_key(const struct gw_contract *c)
{
    return key_names[size_key(c->algorithm)];
}

uint32_t gw_contract_size(const struct gw_contract *c)
{
    return c->algorithm == RING_KETAMA ? c->vnodes : c->table;
}

int gw_policy_refuses_over_capacity(enum gw_policy policy)
{
    return policy != GW_POLICY_REPORT;
}

/* Decimal integer lo..hi with no sign, spaces or leading zeros (docs/contract.md §1): the one
 * integer parser, plus the contract's own rule against leading zeros. Returns 0 or -1. */
static int parse_range(const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (v[0] == '0' && v[1])
        return -1;
    return gw_parse_u64(v, lo, hi, out) == 0 ? 0 : -1;
}

static int set_value(struct contract_parse *p, enum contract_key key, const char *v)
{
    char detail[160];
    snprintf(detail, sizeof(detail), "%s: \"%.100s\" is not ", key_names[key], v);
    uint64_t n;
    switch (key) {
    case KEY_RING:
        if (ring_algorithm_parse(v, &p->out->algorithm) != 0)
            return fail(p, p->lineno, detail, "one of ketama, maglev, jump");
        return 0;
    case KEY_VNODES:
        if (parse_range(v, 1, RING_VNODES_MAX, &n) != 0)
            return fail(p, p->lineno, detail, "an integer 1..4096");
        p->out->vnodes = (uint32_t)n;
        return 0;
    case KEY_TABLE:
        if (parse_range(v, 2, RING_MAGLEV_TABLE_MAX, &n) != 0 || !ring_maglev_prime((uint32_t)n))
            return fail(p, p->lineno, detail, "a prime 2..16777213");
        p->out->table = (uint32_t)n;
        return 0;
    case KEY_SLOTS:
        if (parse_range(v, 1, RING_JUMP_SLOTS_MAX, &n) != 0)
            return fail(p, p->lineno, detail, "an integer 1..16777216");
        p->out->table = (uint32_t)n;
        return 0;
    case KEY_HASH:
        if (ring_digest_parse(v, &p->out->digest) != 0)
            return fail(p, p->lineno, detail, "one of sha1, md5");
        return 0;
    case KEY_POLICY:
        if (strcmp(v, "report") == 0)
            p->out->policy = GW_POLICY_REPORT;
        else if (strcmp(v, "reject") == 0)
            p->out->policy = GW_POLICY_REJECT;
        else if (strcmp(v, "spill") == 0)
            p->out->policy = GW_POLICY_SPILL;
        else
            return fail(p, p->lineno, detail, "one of report, reject, spill");
        return 0;
    default:
        return -EINVAL;
    }
}

static int key_lookup(const char *k)
{
    for (int i = 0; i < KEY_COUNT; i++)
        if (strcmp(k, key_names[i]) == 0)
            return i;
    return -1;
}

static int check_line_shape(struct contract_parse *p, const char *line, const char *eq)
{
    size_t len = strlen(line);
    if (strncmp(line, "export ", 7) == 0)
        return fail(p, p->lineno, "'export' is not allowed", "");
    if (!eq)
        return fail(p, p->lineno, "expected KEY=VALUE", "");
    if (line[0] == ' ' || line[0] == '\t')
        return fail(p, p->lineno, "leading whitespace is not allowed", "");
    if ((eq > line && (eq[-1] == ' ' || eq[-1] == '\t')) || eq[1] == ' ' || eq[1] == '\t')
        return fail(p, p->lineno, "no spaces are allowed around '='", "");
    if (len && strchr(" \t\r", line[len - 1]))
        return fail(p, p->lineno, "trailing whitespace is not allowed", "");
    if (strpbrk(eq + 1, "\"'"))
        return fail(p, p->lineno, "quotes are not allowed", "");
    return 0;
}

static int parse_line(struct contract_parse *p, char *line)
{
    if (line[0] == '\0' || line[0] == '#')
        return 0;
    char *eq = strchr(line, '=');
    int rc = check_line_shape(p, line, eq);
    if (rc != 0)
        return rc;
    *eq = '\0';
    int key = key_lookup(line);
    if (key < 0) {
        char detail[128];
        snprintf(detail, sizeof(detail), "%.100s", line);
        return fail(p, p->lineno, "unknown key ", detail);
    }
    if (p->seen_on[key]) {
        char detail[128];
        snprintf(detail, sizeof(detail), "%s (first on line %zu)", key_names[key], p->seen_on[key]);
        return fail(p, p->lineno, "duplicate key ", detail);
    }
    p->seen_on[key] = p->lineno;
    return set_value(p, (enum contract_key)key, eq + 1);
}

/* Every key the algorithm takes is there, and no sizing key of another one, the first in key order
 * named (docs/contract.md §1); spill walks a ring's points, so it needs ketama (docs/contract.md
 * §9). */
static int check_complete(struct contract_parse *p)
{
    if (!p->seen_on[KEY_RING])
        return fail(p, p->lineno, "missing required key ", key_names[KEY_RING]);
    enum contract_key own = size_key(p->out->algorithm);
    char detail[128];
    for (int k = 0; k < KEY_COUNT; k++)
        if (is_size_key(k) && k != (int)own && p->seen_on[k]) {
            snprintf(detail, sizeof(detail), "%s is not a key of DISPATCH_HASH_RING=%s",
                     key_names[k], ring_algorithm_name(p->out->algorithm));
            return fail(p, p->seen_on[k], detail, "");
        }
    for (int k = 0; k < KEY_COUNT; k++)
        if ((!is_size_key(k) || k == (int)own) && !p->seen_on[k])
            return fail(p, p->lineno, "missing required key ", key_names[k]);
    if (p->out->algorithm != RING_KETAMA && p->out->policy == GW_POLICY_SPILL)
        return fail(p, p->seen_on[KEY_POLICY],
                    "DISPATCH_CAPACITY_POLICY: spill needs DISPATCH_HASH_RING=ketama", "");
    return 0;
}

int gw_contract_parse(const char *text, size_t len, const char *name, struct gw_contract *out,
                      struct gw_error *err)
{
    struct contract_parse p = {.name = name, .out = out, .err = err};
    memset(out, 0, sizeof(*out));
    if (memchr(text, '\0', len))
        return fail(&p, 0, "the file holds a NUL byte", "");
    char *copy = malloc(len + 1);
    if (!copy) {
        fail(&p, 0, "out of memory", "");
        return -ENOMEM; /* exit 1, not 3: the file may be fine (docs/decisions.md §28) */
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    int rc = 0;
    char *line = copy;
    while (rc == 0 && line < copy + len) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        p.lineno++;
        rc = parse_line(&p, line);
        line = nl ? nl + 1 : copy + len;
    }
    free(copy);
    return rc ? rc : check_complete(&p);
}

int gw_contract_load(const char *path, struct gw_contract *out, struct gw_error *err)
{
    char *text;
    size_t len;
    int rc = gw_file_read(path, &text, &len);
    if (rc != 0) {
        gw_error_set(err, "", "contract: %s: cannot read: %s", path, strerror(-rc));
        return rc;
    }
    rc = gw_contract_parse(text, len, path, out, err);
    free(text);
    return rc;
}
