/* `shardgate admin plan` and `apply` (docs/tools.md §1.2): a membership change planned by the
 * server's dry run, then applied only against the epoch it was planned from (If-Match). */
#include "admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fileio.h"
#include "membership.h"

#define HASH_SPACE 4294967296.0
#define MEMBERSHIP "/v1/admin/membership"

static double percent(json_t *obj, const char *key)
{
    return 100.0 * (double)json_integer_value(json_object_get(obj, key)) / HASH_SPACE;
}

/* The plan (docs/tools.md §1.1) as people read it. */
static void print_plan(json_t *plan)
{
    size_t i, w = strlen("shard");
    json_t *s, *shards = json_object_get(plan, "shards");
    printf("epoch   %s -> %s\n", gw_admin_str(plan, "from_epoch", "?"),
           gw_admin_str(plan, "to_epoch", "?"));
    printf("ring    %s -> %s\n", gw_admin_str(plan, "from_ring", "?"),
           gw_admin_str(plan, "to_ring", "?"));
    printf("moves   %.2f%% of the hash space (%lld of 4294967296 hash values)\n",
           percent(plan, "moved_points"),
           json_integer_value(json_object_get(plan, "moved_points")));
    json_array_foreach(shards, i, s)
    {
        size_t n = strlen(gw_admin_str(s, "id", "?"));
        w = n > w ? n : w;
    }
    printf("%-*s  %7s  %7s\n", (int)w, "shard", "before", "after");
    json_array_foreach(shards, i, s)
    {
        printf("%-*s  %6.2f%%  %6.2f%%\n", (int)w, gw_admin_str(s, "id", "?"), percent(s, "before"),
               percent(s, "after"));
    }
    json_array_foreach(json_object_get(plan, "pairs"), i, s)
    {
        printf("from %s to %s: %.2f%%\n", gw_admin_str(s, "from", "?"), gw_admin_str(s, "to", "?"),
               percent(s, "moved_points"));
    }
    fflush(stdout);
}

/* The membership file's bytes, read as the start reads --shards so that its errors name this
 * file, not the server's; GW_EXIT_UNUSABLE when it cannot be read or is no membership. */
static int read_membership(const char *cmd, const char *path, struct gw_buf *out)
{
    char *data = NULL;
    size_t len = 0;
    struct gw_membership m;
    struct gw_error err;
    int rc = gw_file_read(path, &data, &len);
    if (rc != 0) {
        fprintf(stderr, "shardgate: admin %s: --to %s: cannot read: %s\n", cmd, path,
                strerror(-rc));
        return gw_exit_for(rc, GW_EXIT_UNUSABLE);
    }
    if ((rc = gw_membership_parse(data, len, path, &m, &err)) != 0) {
        fprintf(stderr, "shardgate: admin %s: %s\n", cmd, err.msg);
        free(data);
        return gw_exit_for(rc, GW_EXIT_UNUSABLE);
    }
    gw_membership_free(&m);
    gw_buf_init(out);
    gw_buf_append(out, data, len);
    free(data);
    return out->failed ? GW_EXIT_INTERNAL : GW_EXIT_OK;
}

/* The server's dry run of `body` against the epoch `if_match`: printed (text, or its JSON when
 * `json`), and its answer kept in *a. */
static int dry_run(struct gw_admin_client *c, const char *cmd, const struct gw_buf *body,
                   const char *if_match, int json, struct gw_admin_answer *a)
{
    int rc =
        gw_admin_call(c, cmd, "PUT", MEMBERSHIP "?dry_run=1", c->admin_token, if_match, body, a);
    if (rc != GW_EXIT_OK || json)
        return rc;
    json_t *plan = gw_admin_json(a, cmd);
    if (!plan)
        return GW_EXIT_NOT_OK;
    print_plan(plan);
    json_decref(plan);
    return GW_EXIT_OK;
}

int gw_admin_plan(struct gw_admin_client *c, const struct gw_admin_args *args)
{
    struct gw_buf body;
    struct gw_admin_answer a = {0};
    int rc = read_membership("plan", args->to, &body);
    if (rc != GW_EXIT_OK)
        return rc;
    rc = dry_run(c, "plan", &body, "*", args->json, &a);
    if (rc == GW_EXIT_OK && args->json)
        rc = gw_admin_print(a.body.data, a.body.len);
    gw_admin_answer_free(&a);
    gw_buf_free(&body);
    return rc;
}

/* The epoch in force, as the ETag of GET /v1/admin/membership gives it (quoted). */
static int current_etag(struct gw_admin_client *c, char *etag, size_t cap)
{
    struct gw_admin_answer a;
    int rc = gw_admin_call(c, "apply", "GET", MEMBERSHIP, c->admin_token, NULL, NULL, &a);
    if (rc == GW_EXIT_OK && !a.etag[0]) {
        fprintf(stderr, "shardgate: admin apply: GET %s: the answer has no ETag\n", MEMBERSHIP);
        rc = GW_EXIT_NOT_OK;
    }
    snprintf(etag, cap, "%s", a.etag);
    gw_admin_answer_free(&a);
    return rc;
}

/* What the PUT did: "applied: epoch E (epoch_seq N)" or "unchanged: ...". */
static int print_outcome(const struct gw_admin_answer *a)
{
    json_t *r = gw_admin_json(a, "apply");
    if (!r)
        return GW_EXIT_NOT_OK;
    printf("%s: epoch %s (epoch_seq %lld)\n",
           json_is_true(json_object_get(r, "changed")) ? "applied" : "unchanged",
           gw_admin_str(r, "epoch", "?"), json_integer_value(json_object_get(r, "epoch_seq")));
    fflush(stdout);
    json_decref(r);
    return GW_EXIT_OK;
}

/* The PUT, made only if the epoch is still `etag`: a 412 says the membership moved on. */
static int put_if_match(struct gw_admin_client *c, const struct gw_admin_args *args,
                        const struct gw_buf *body, const char *etag, struct gw_admin_answer *a)
{
    char path[200];
    snprintf(path, sizeof(path), "%s%s%.40s%s", MEMBERSHIP,
             args->max_movement ? "?max_movement=" : "",
             args->max_movement ? args->max_movement : "",
             !args->force         ? ""
             : args->max_movement ? "&force=1"
                                  : "?force=1");
    int rc = gw_admin_call(c, "apply", "PUT", path, c->admin_token, etag, body, a);
    if (rc == GW_EXIT_NOT_OK && a->status == 412)
        fprintf(stderr,
                "shardgate: admin apply: the membership changed after it was planned "
                "against %s: nothing was applied; plan again\n",
                etag);
    return rc;
}

int gw_admin_apply(struct gw_admin_client *c, const struct gw_admin_args *args)
{
    struct gw_buf body;
    struct gw_admin_answer plan = {0}, put = {0};
    char etag[128];
    int rc = read_membership("apply", args->to, &body);
    if (rc != GW_EXIT_OK)
        return rc;
    rc = current_etag(c, etag, sizeof(etag));
    if (rc == GW_EXIT_OK)
        rc = dry_run(c, "apply", &body, etag, args->json, &plan);
    if (rc == GW_EXIT_OK)
        rc = put_if_match(c, args, &body, etag, &put);
    if (rc == GW_EXIT_OK && args->json) {
        struct gw_buf out;
        gw_buf_init(&out);
        gw_buf_puts(&out, "{\"plan\":");
        gw_buf_append(&out, plan.body.data, plan.body.len - (plan.body.len > 0));
        gw_buf_puts(&out, ",\"result\":");
        gw_buf_append(&out, put.body.data, put.body.len - (put.body.len > 0));
        gw_buf_puts(&out, "}");
        rc = out.failed ? GW_EXIT_INTERNAL : gw_admin_print(out.data, out.len);
        gw_buf_free(&out);
    } else if (rc == GW_EXIT_OK) {
        rc = print_outcome(&put);
    }
    gw_admin_answer_free(&plan);
    gw_admin_answer_free(&put);
    gw_buf_free(&body);
    return rc;
}
