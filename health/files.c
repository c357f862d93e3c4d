/* Reading the contract + shards files as one version, and noticing a newer one by stat. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "contract.h"
#include "files.h"
#include "membership.h"

static int hc_file_stat(const char *path, struct hc_file_id *id)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -errno;
    memset(id, 0, sizeof *id);
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    id->size = st.st_size;
    id->mtime = st.st_mtim;
    return 0;
}

static int hc_file_same(const struct hc_file_id *a, const struct hc_file_id *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* Whether path is still the version id describes. */
static int hc_file_unchanged(const char *path, const struct hc_file_id *id)
{
    struct hc_file_id now = {0};
    return hc_file_stat(path, &now) == 0 && hc_file_same(&now, id);
}

/* Reads the contract and the membership into ep; err->msg carries the start message. */
static int hc_files_read(const struct hc_files *f, struct hc_epoch *ep, struct hc_err *err)
{
    struct hc_err what;
    struct hc_contract c;
    struct hc_membership m;
    int rc = hc_contract_load(f->conf, &c, &what);
    if (rc != 0)
        return hc_err_set(err, rc, "contract: %s", what.msg);
    rc = hc_membership_load(f->shards, &c, &m, &what);
    if (rc != 0)
        return hc_err_set(err, rc, "shards: %s", what.msg);
    rc = hc_epoch_make(ep, &c, &m, 0, &what);
    if (rc != 0) {
        hc_membership_free(&m);
        hc_epoch_free(ep);
        return hc_err_set(err, rc, "%s", what.msg);
    }
    return 0;
}

int hc_files_load(struct hc_files *f, struct hc_epoch *ep, struct hc_err *err)
{
    struct hc_file_id conf_id = {0}, shards_id = {0};
    /* A file that cannot be stat'ed is read anyway: the reader names the error exactly. */
    int have = hc_file_stat(f->conf, &conf_id) == 0 && hc_file_stat(f->shards, &shards_id) == 0;
    int rc = hc_files_read(f, ep, err);
    if (rc != 0)
        return rc;
    if (!have || !hc_file_unchanged(f->conf, &conf_id) ||
        !hc_file_unchanged(f->shards, &shards_id)) {
        hc_epoch_free(ep);
        return hc_err_set(err, -EAGAIN, "%s, %s: changed while being read", f->conf, f->shards);
    }
    f->conf_id = conf_id;
    f->shards_id = shards_id;
    f->loaded = 1;
    return 0;
}

int hc_files_changed(const struct hc_files *f)
{
    return !f->loaded || !hc_file_unchanged(f->conf, &f->conf_id) ||
           !hc_file_unchanged(f->shards, &f->shards_id);
}
