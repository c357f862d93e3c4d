/* shardgate-health: the CLI (check, serve); the only place that prints and picks exit codes. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "arena.h"
#include "contract.h"
#include "files.h"
#include "journal.h"
#include "membership.h"
#include "pg.h"
#include "report.h"
#include "serve.h"
#include "store.h"
#include "verify.h"

#ifndef SHARDGATE_VERSION
#error "SHARDGATE_VERSION is set by health/CMakeLists.txt"
#endif

enum {
    EXIT_PASS = 0,
    EXIT_INTERNAL = 1,
    EXIT_FAIL = 2,
    EXIT_UNUSABLE = 3,
    EXIT_USAGE = 64,
};

static const char hc_usage[] =
    "usage: shardgate-health check --conf FILE --shards FILE\n"
    "                              (--receipt FILE | --journal FILE | --store URL)\n"
    "                              [--max-changes N] [--archive-dir D | --accept-archived]\n"
    "       shardgate-health serve [--listen 127.0.0.1:8081] --conf FILE --shards FILE\n"
    "                              (--journal FILE | --store URL)\n"
    "                              [--max-changes N] [--reverify-interval SECONDS]\n"
    "                              [--archive-dir D | --accept-archived]\n"
    "                              [--allow-origin ORIGIN]\n"
    "       shardgate-health --help | --version\n"
    "\n"
    "Rebuilds the ketama ring from the contract and shards file with its own code and\n"
    "re-derives every fact of every receipt (docs/operations.md §1).\n"
    "\n"
    "check  prints {\"status\",\"checks\",\"receipts\",\"issues\"} on one line.\n"
    "       exit 0 pass; 2 any issue, no check ran, or the receipt/journal/store unreadable;\n"
    "       3 contract or shards file unusable; 64 usage.\n"
    "serve  GET /healthz: application/health+json, 200 pass, 503 fail (new journal lines are\n"
    "       verified on each request); GET /livez: 200. Listens on 127.0.0.1:8081 by default.\n"
    "       The whole journal is re-verified every --reverify-interval seconds (1..60, 60).\n"
    "       --allow-origin http://HOST[:PORT] lets a page from that origin (the gateway's\n"
    "       status page) read /healthz: CORS, that origin only.\n"
    "--store postgres://USER@HOST:PORT/DB (or postgresql://) reads the gateway's PostgreSQL\n"
    "store in one read-only snapshot, SELECTs only: the journal it holds and its own facts\n"
    "(docs/operations.md §1.7). serve reads it again when it moved and every interval.\n"
    "--max-changes mirrors the gateway's option (1..10000000, default 100000).\n"
    "The sealed segments, checkpoints and archive.jsonl beside the journal are verified too\n"
    "(docs/operations.md §1.6): --archive-dir D reads archived segments (plain or .zst) from D;\n"
    "without it each is an issue unless --accept-archived.\n"
    "\n"
    "--conf defaults to $SHARDGATE_CONF. Issues read \"<criterion>: <subject>: <detail>\".\n";

static int hc_usage_error(const char *fmt, const char *arg);

struct hc_args {
    const char *cmd;
    const char *conf, *shards, *receipt, *journal, *listen, *max_changes, *reverify, *archive_dir,
        *store, *allow_origin;
    int accept_archived;
    size_t max_changes_n;
    unsigned reverify_s;
};

/* A decimal integer lo..hi, no sign or leading zero; returns 0 or -1. */
static int hc_parse_uint(const char *text, unsigned long lo, unsigned long hi, unsigned long *out)
{
    size_t n = strlen(text);
    if (n == 0 || n > 9 || strspn(text, "0123456789") != n || (text[0] == '0' && n > 1))
        return -1;
    unsigned long v = strtoul(text, NULL, 10);
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Fills the numeric options (defaults: the gateway's --max-changes, a 60 s re-verification). */
static int hc_parse_numbers(struct hc_args *a)
{
    unsigned long v = HC_MAX_CHANGES_DEFAULT;
    if (a->max_changes != NULL && hc_parse_uint(a->max_changes, 1, 10000000, &v) != 0)
        return hc_usage_error("--max-changes %s: must be 1..10000000", a->max_changes);
    a->max_changes_n = v;
    v = 60;
    if (a->reverify != NULL && hc_parse_uint(a->reverify, 1, 60, &v) != 0)
        return hc_usage_error("--reverify-interval %s: must be 1..60 seconds", a->reverify);
    a->reverify_s = (unsigned)v;
    return -1;
}

static int hc_usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "shardgate-health: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", hc_usage);
    return EXIT_USAGE;
}

/* Takes the option at argv[*i] (and its value); returns -1 to go on, else the exit code. */
static int hc_parse_option(int argc, char **argv, int *i, struct hc_args *a)
{
    const char *opt = argv[*i];
    if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
        fputs(hc_usage, stdout);
        return EXIT_PASS;
    }
    if (strcmp(opt, "--accept-archived") == 0) {
        if (a->accept_archived)
            return hc_usage_error("%s given twice", opt);
        a->accept_archived = 1;
        return -1;
    }
    static const char *const names[] = {
        "--conf",   "--shards",      "--receipt",           "--journal",
        "--listen", "--max-changes", "--reverify-interval", "--archive-dir",
        "--store",  "--allow-origin"};
    const char **slots[] = {&a->conf,   &a->shards,      &a->receipt,  &a->journal,
                            &a->listen, &a->max_changes, &a->reverify, &a->archive_dir,
                            &a->store,  &a->allow_origin};
    int k = -1;
    const char *value = NULL;
    for (int n = 0; n < (int)(sizeof names / sizeof names[0]); n++) {
        size_t len = strlen(names[n]);
        if (strcmp(opt, names[n]) == 0) {
            k = n;
            if (*i + 1 >= argc)
                return hc_usage_error("%s needs a value", opt);
            value = argv[++*i];
        } else if (strncmp(opt, names[n], len) == 0 && opt[len] == '=') {
            k = n;
            value = opt + len + 1;
        }
        if (k >= 0)
            break;
    }
    if (k < 0)
        return hc_usage_error("unknown option %s", opt);
    if (*slots[k] != NULL)
        return hc_usage_error("%s given twice", names[k]);
    *slots[k] = value;
    return -1;
}

/* The options each command needs and refuses; returns -1 when they fit, else the exit code. */
static int hc_check_args(struct hc_args *a)
{
    if (a->conf == NULL)
        a->conf = getenv("SHARDGATE_CONF");
    int check = strcmp(a->cmd, "check") == 0;
    if (a->shards == NULL)
        return hc_usage_error("%s", "--shards FILE is required");
    int sources = (a->receipt != NULL) + (a->journal != NULL) + (a->store != NULL);
    if (check && sources != 1)
        return hc_usage_error(
            "%s", "check needs exactly one of --receipt FILE, --journal FILE, --store URL");
    if (a->store != NULL && !hc_pg_is_url(a->store))
        return hc_usage_error("--store %s: must be a postgres:// or postgresql:// URL", a->store);
    if ((a->archive_dir != NULL || a->accept_archived) && a->journal == NULL)
        return hc_usage_error("%s", "--archive-dir and --accept-archived need --journal FILE");
    if (a->archive_dir != NULL && a->accept_archived)
        return hc_usage_error("%s", "give --archive-dir D or --accept-archived, not both");
    if (check && a->listen != NULL)
        return hc_usage_error("%s", "--listen is for serve");
    if (check && a->reverify != NULL)
        return hc_usage_error("%s", "--reverify-interval is for serve");
    if (check && a->allow_origin != NULL)
        return hc_usage_error("%s", "--allow-origin is for serve");
    if (a->allow_origin != NULL && !hc_is_origin(a->allow_origin))
        return hc_usage_error("--allow-origin %s: expected http://HOST[:PORT] or "
                              "https://HOST[:PORT], no path (a page's origin)",
                              a->allow_origin);
    if (!check && (sources != 1 || a->receipt != NULL))
        return hc_usage_error("%s",
                              "serve needs exactly one of --journal FILE, --store URL (and no "
                              "--receipt)");
    if (!check && a->listen == NULL)
        a->listen = "127.0.0.1:8081";
    return -1;
}

/* Parses argv into a; returns -1 when parsed, else the exit code to leave with. */
static int hc_parse_args(int argc, char **argv, struct hc_args *a)
{
    memset(a, 0, sizeof *a);
    if (argc < 2)
        return hc_usage_error("%s", "missing command");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(hc_usage, stdout);
        return EXIT_PASS;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("shardgate-health %s\n", SHARDGATE_VERSION);
        return EXIT_PASS;
    }
    a->cmd = argv[1];
    if (strcmp(a->cmd, "check") != 0 && strcmp(a->cmd, "serve") != 0)
        return hc_usage_error("unknown command %s", a->cmd);
    for (int i = 2; i < argc; i++) {
        int rc = hc_parse_option(argc, argv, &i, a);
        if (rc != -1)
            return rc;
    }
    int rc = hc_check_args(a);
    return rc != -1 ? rc : hc_parse_numbers(a);
}

/* Reads the contract and shards file into own; returns -1 on success or the exit code. */
static int hc_load_own(const struct hc_args *a, struct hc_files *files, struct hc_epoch *own)
{
    struct hc_err err;
    if (a->conf == NULL) {
        fprintf(stderr, "contract: (none):0: no contract: give --conf FILE or SHARDGATE_CONF\n");
        return EXIT_UNUSABLE;
    }
    memset(files, 0, sizeof *files);
    files->conf = a->conf;
    files->shards = a->shards;
    int rc = hc_files_load(files, own, &err);
    if (rc == -ENOMEM || rc == -EIO) {
        fprintf(stderr, "shardgate-health: %s\n", err.msg);
        return EXIT_INTERNAL;
    }
    if (rc != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return EXIT_UNUSABLE;
    }
    return -1;
}

/* The test hook of docs/tools.md §5: SHARDGATE_HEALTH_TEST_EMPTY_CRITERIA=1 runs none of the table,
 * which must turn every verdict into "no checks ran" (fail), never into a pass. */
static size_t hc_criteria_to_run(void)
{
    const char *e = getenv("SHARDGATE_HEALTH_TEST_EMPTY_CRITERIA");
    if (e != NULL && strcmp(e, "1") == 0) {
        fprintf(stderr, "shardgate-health: test hook: criteria table emptied\n");
        return 0;
    }
    return hc_criteria_count;
}

static int hc_check_receipt(const char *path, struct hc_verifier *v, struct hc_epoch *own,
                            struct hc_err *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        int e = errno;
        hc_report_issue(v->report, -1, "input", path, "cannot open: %s", strerror(e));
        return 0;
    }
    json_error_t jerr;
    json_t *doc = json_loadf(f, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    fclose(f);
    if (doc == NULL) {
        v->report->receipts++;
        hc_report_issue(v->report, HC_SLOT_SCHEMA, "schema", path,
                        "not JSON: %s (line %d column %d)", jerr.text, jerr.line, jerr.column);
        return 0;
    }
    int rc = hc_verify_receipt(v, doc, own, NULL, path, err);
    json_decref(doc);
    return rc;
}

/* Verifies the journal file, or the store's journal and facts, into j's report. */
static int hc_read_source(const struct hc_args *a, struct hc_journal *j, struct hc_err *err)
{
    if (a->journal != NULL)
        return hc_journal_update(j, err);
    struct hc_store st;
    hc_store_init(&st, a->store, j);
    int rc = hc_store_verify(&st, err);
    hc_store_free(&st);
    return rc;
}

static int hc_cmd_check(const struct hc_args *a, struct hc_epoch *own)
{
    struct hc_report report, end;
    struct hc_verifier v;
    struct hc_err err;
    int code = EXIT_INTERNAL, rc;
    hc_report_init(&report);
    hc_report_init(&end);
    if (hc_verifier_init(&v, &report, hc_criteria_to_run(), &err) != 0) {
        fprintf(stderr, "shardgate-health: %s\n", err.msg);
        return EXIT_INTERNAL;
    }
    v.max_changes = a->max_changes_n;
    struct hc_journal j;
    hc_journal_init(&j, a->journal, &v, own);
    j.opts = (struct hc_seg_options){a->archive_dir, a->accept_archived};
    if (a->receipt != NULL) {
        rc = hc_check_receipt(a->receipt, &v, own, &err);
    } else {
        rc = hc_read_source(a, &j, &err);
        if (rc == -ENOMEM || rc == -EIO || rc == -E2BIG) {
            /* internal failure: reported below */
        } else if (rc != 0) { /* cannot judge: an issue, never a pass */
            hc_report_issue(&report, -1, "input", a->journal ? "journal" : "store", "%s", err.msg);
            rc = 0;
        } else {
            struct hc_journal_end state;
            hc_journal_finish(&j);
            hc_journal_end_state(&j, &state);
            hc_verify_end(&v, &end, &state);
        }
    }
    if (rc != 0) {
        fprintf(stderr, "shardgate-health: %s\n", err.msg);
        goto out;
    }
    char *line = hc_report_check_json(&report, &end, j.pending);
    if (line == NULL) {
        fprintf(stderr, "shardgate-health: out of memory\n");
        goto out;
    }
    printf("%s\n", line);
    free(line);
    code = hc_report_pass(&report, &end) ? EXIT_PASS : EXIT_FAIL;
out:
    if (fflush(stdout) != 0)
        code = EXIT_INTERNAL;
    hc_journal_free(&j);
    hc_verifier_free(&v);
    hc_report_free(&report);
    hc_report_free(&end);
    return code;
}

/* One JSON line on stderr: every string escaped by jansson, whatever its bytes, never cut (sized
 * first, then dumped into our own buffer: jansson's allocator here is the arena's). */
static void hc_log_listening(const char *listen, const char *journal)
{
    json_t *o =
        json_pack("{s:s, s:s?, s:s?}", "msg", "listening", "listen", listen, "journal", journal);
    size_t n = o ? json_dumpb(o, NULL, 0, JSON_COMPACT) : 0;
    char *line = n ? malloc(n) : NULL;
    if (line && json_dumpb(o, line, n, JSON_COMPACT) == n)
        fprintf(stderr, "%.*s\n", (int)n, line);
    else
        fprintf(stderr, "{\"msg\":\"listening\"}\n");
    free(line);
    json_decref(o);
}

static int hc_cmd_serve(const struct hc_args *a, struct hc_files *files, struct hc_epoch *own)
{
    /* Block the stop signals before the server thread starts, so only sigwait sees them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct hc_serve_config cfg = {
        a->listen,        a->journal,    a->store,
        *files,           own,           hc_criteria_to_run(),
        a->max_changes_n, a->reverify_s, {a->archive_dir, a->accept_archived},
        a->allow_origin};
    struct hc_server *s;
    struct hc_err err;
    int rc = hc_serve_start(&cfg, &s, &err);
    if (rc == -EINVAL) {
        fprintf(stderr, "shardgate-health: %s\n", err.msg);
        return EXIT_USAGE;
    }
    if (rc != 0) {
        fprintf(stderr, "shardgate-health: %s\n", err.msg);
        return EXIT_INTERNAL;
    }
    hc_log_listening(a->listen, a->journal);
    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "{\"msg\":\"stopping\",\"signal\":%d}\n", sig);
    hc_serve_stop(s);
    return EXIT_PASS;
}

int main(int argc, char **argv)
{
    struct hc_args a;
    hc_arena_install();  /* before any jansson allocation (see arena.h) */
    json_object_seed(0); /* before any thread parses (see parse.h) */
    int code = hc_parse_args(argc, argv, &a);
    if (code >= 0)
        return code;
    struct hc_epoch own;
    struct hc_files files;
    memset(&own, 0, sizeof own);
    code = hc_load_own(&a, &files, &own);
    if (code >= 0)
        return code;
    if (strcmp(a.cmd, "check") == 0)
        code = hc_cmd_check(&a, &own);
    else
        code = hc_cmd_serve(&a, &files, &own);
    hc_epoch_free(&own);
    return code;
}
