/* `shardgate admin` (docs/tools.md §1.2): a client of a running server, for people (text) and
 * scripts (--json): its status, its epochs, the plan of a membership change, the change applied
 * with If-Match, and a shard's assignments followed. */
#include "cli.h"
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "admin_http.h"
#include "admin.h"
#include "buf.h"
#include "fileio.h"
#include "number.h"
#include "shard.h"

const char gw_usage_admin[] =
    "usage: shardgate admin status [--url URL] [--token-file FILE] [--json]\n"
    "       shardgate admin epochs [--url URL] [--token-file FILE] [--json]\n"
    "       shardgate admin plan   --to FILE [--url URL] [--admin-token-file FILE] [--json]\n"
    "       shardgate admin apply  --to FILE [--max-movement F [--force]] [--url URL]\n"
    "                              [--admin-token-file FILE] [--json]\n"
    "       shardgate admin tail   --shard ID [--after N] [--url URL] [--token-file FILE]\n"
    "                              [--json]\n"
    "A client of a running `shardgate serve`. status: the epoch, readiness and every shard with\n"
    "its loads and share of the ring; epochs: the epoch chain; plan: what a PUT of the\n"
    "membership FILE would move (the server's dry run); apply: the plan, then the change, made\n"
    "only if the membership is still the one planned against (If-Match), past --max-movement\n"
    "only with --force; the membership in force again changes nothing; tail: a shard's\n"
    "assignments from cursor N (default 0), followed until interrupted. Text for people,\n"
    "--json for scripts (the server's JSON).\n"
    "--url defaults to $SHARDGATE_URL, else http://127.0.0.1:8080. The token comes from\n"
    "--token-file, else $SHARDGATE_TOKEN; the admin token (plan, apply) from\n"
    "--admin-token-file, else $SHARDGATE_ADMIN_TOKEN.\n"
    "exit: 0 done, 2 the server refused (its status, code and message on stderr: 412 the\n"
    "      membership changed since the plan, 422 a membership it refuses), 3 the server cannot\n"
    "      be reached or a file cannot be used, 64 usage, 1 internal error.\n";

enum {
    OPT_URL = 'u',
    OPT_TOKEN = 't',
    OPT_ADMIN = 'a',
    OPT_JSON = 'j',
    OPT_TO = 'T',
    OPT_MAX = 'm',
    OPT_SHARD = 's',
    OPT_AFTER = 'A',
    OPT_FORCE = 'f',
    OPT_HELP = 'h'
};

struct subcommand {
    const char *name;
    const char *allowed; /* its options' short codes */
    int (*run)(struct gw_admin_client *c, const struct gw_admin_args *a);
};

static int admin_usage(const char *what)
{
    fprintf(stderr, "shardgate: %s\n%s", what, gw_usage_admin);
    return GW_EXIT_USAGE;
}

/* Stores one option's value; a message for a bad one. */
static const char *take_option(int c, struct gw_admin_args *a)
{
    const char **slot = c == OPT_URL     ? &a->url
                        : c == OPT_TOKEN ? &a->token_file
                        : c == OPT_ADMIN ? &a->admin_file
                        : c == OPT_TO    ? &a->to
                        : c == OPT_MAX   ? &a->max_movement
                        : c == OPT_SHARD ? &a->shard
                                         : NULL;
    double f;
    if (slot)
        *slot = optarg;
    else if (c == OPT_JSON)
        a->json = 1;
    else if (c == OPT_FORCE)
        a->force = 1;
    else if (c == OPT_AFTER && gw_parse_u64(optarg, 0, UINT64_MAX, &a->after) != 0)
        return "--after must be a cursor: digits, 0..18446744073709551615";
    if (c == OPT_SHARD && !gw_name_valid(optarg, strlen(optarg), GW_SHARD_ID_MAX))
        return "--shard must be a shard id (1..64 of A-Z a-z 0-9 . _ : -)";
    if (c == OPT_MAX && gw_parse_fraction(optarg, &f) != 0)
        return "--max-movement must be a decimal 0..1 (0.25, 1.0)";
    return NULL;
}

/* Returns -1 when the subcommand should run, else the exit code. */
static int parse_admin_args(int argc, char **argv, const struct subcommand *sub,
                            struct gw_admin_args *a)
{
    static const struct option options[] = {{"url", required_argument, 0, OPT_URL},
                                            {"token-file", required_argument, 0, OPT_TOKEN},
                                            {"admin-token-file", required_argument, 0, OPT_ADMIN},
                                            {"json", no_argument, 0, OPT_JSON},
                                            {"to", required_argument, 0, OPT_TO},
                                            {"max-movement", required_argument, 0, OPT_MAX},
                                            {"shard", required_argument, 0, OPT_SHARD},
                                            {"after", required_argument, 0, OPT_AFTER},
                                            {"force", no_argument, 0, OPT_FORCE},
                                            {"help", no_argument, 0, OPT_HELP},
                                            {0, 0, 0, 0}};
    char msg[200];
    int c, index = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+", options, &index)) != -1) {
        if (c == OPT_HELP) {
            fputs(gw_usage_admin, stdout);
            return GW_EXIT_OK;
        }
        if (c == '?') {
            gw_cli_bad_option(options, argv, msg, sizeof(msg));
            return admin_usage(msg);
        }
        if (!strchr(sub->allowed, c)) {
            snprintf(msg, sizeof(msg), "--%s is not an option of `shardgate admin %s`",
                     options[index].name, sub->name);
            return admin_usage(msg);
        }
        const char *bad = take_option(c, a);
        if (bad)
            return admin_usage(bad);
    }
    if (optind < argc) {
        gw_cli_unexpected(argv[optind], msg, sizeof(msg));
        return admin_usage(msg);
    }
    if (strchr(sub->allowed, OPT_TO) && !a->to)
        return admin_usage("--to FILE is required");
    if (strchr(sub->allowed, OPT_SHARD) && !a->shard)
        return admin_usage("--shard ID is required");
    return -1;
}

/* A token: trimmed of spaces, tabs, CRs and LFs at either end, one line of printable bytes. */
static int token_from(const char *text, size_t len, const char *where, char **out)
{
    while (len && strchr(" \t\r\n", text[0])) {
        text++;
        len--;
    }
    while (len && strchr(" \t\r\n", text[len - 1]))
        len--;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f) {
            fprintf(stderr,
                    "shardgate: admin: %s: the token must be one line of printable "
                    "characters\n",
                    where);
            return GW_EXIT_UNUSABLE;
        }
    if (!len) {
        fprintf(stderr, "shardgate: admin: %s: holds no token\n", where);
        return GW_EXIT_UNUSABLE;
    }
    *out = strndup(text, len);
    return *out ? GW_EXIT_OK : GW_EXIT_INTERNAL;
}

/* The token of `file`, else of environment variable `var`, else none. */
static int load_token(const char *file, const char *var, char **out)
{
    *out = NULL;
    if (file) {
        char *data = NULL;
        size_t len = 0;
        int rc = gw_file_read(file, &data, &len);
        if (rc != 0) {
            fprintf(stderr, "shardgate: admin: %s: cannot read: %s\n", file, strerror(-rc));
            return gw_exit_for(rc, GW_EXIT_UNUSABLE);
        }
        rc = token_from(data, len, file, out);
        free(data);
        return rc;
    }
    const char *v = getenv(var);
    return v && v[0] ? token_from(v, strlen(v), var, out) : GW_EXIT_OK;
}

/* The server's base URL without a trailing slash, in buf. */
static const char *base_url(const char *option, char *buf, size_t cap)
{
    const char *env = getenv("SHARDGATE_URL");
    snprintf(buf, cap, "%s", option ? option : env && env[0] ? env : "http://127.0.0.1:8080");
    size_t n = strlen(buf);
    while (n && buf[n - 1] == '/')
        buf[--n] = '\0';
    return buf;
}

static const struct subcommand subcommands[] = {
    {"status", "utj", gw_admin_status}, {"epochs", "utj", gw_admin_epochs},
    {"plan", "uajT", gw_admin_plan},    {"apply", "uajTmf", gw_admin_apply},
    {"tail", "utjsA", gw_admin_tail},
};

static int run(const struct subcommand *sub, const struct gw_admin_args *a)
{
    char url[2048];
    struct gw_admin_client c = {.url = base_url(a->url, url, sizeof(url))};
    int rc = load_token(a->token_file, "SHARDGATE_TOKEN", &c.token);
    if (rc == GW_EXIT_OK)
        rc = load_token(a->admin_file, "SHARDGATE_ADMIN_TOKEN", &c.admin_token);
    if (rc == GW_EXIT_OK && gw_admin_client_open(&c) != 0) {
        fprintf(stderr, "shardgate: admin: cannot start the HTTP client\n");
        rc = GW_EXIT_INTERNAL;
    }
    if (rc == GW_EXIT_OK)
        rc = sub->run(&c, a);
    gw_admin_client_close(&c);
    free(c.token);
    free(c.admin_token);
    return rc;
}

int gw_cmd_admin(int argc, char **argv)
{
    if (argc < 2)
        return admin_usage("admin needs a subcommand: status, epochs, plan, apply or tail");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(gw_usage_admin, stdout);
        return GW_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++) {
        if (strcmp(argv[1], subcommands[i].name) != 0)
            continue;
        struct gw_admin_args a = {0};
        int rc = parse_admin_args(argc - 1, argv + 1, &subcommands[i], &a);
        return rc >= 0 ? rc : run(&subcommands[i], &a);
    }
    char msg[200];
    snprintf(msg, sizeof(msg), "unknown admin subcommand \"%.100s\"", argv[1]);
    return admin_usage(msg);
}
