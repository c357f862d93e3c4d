/* A PUT's shards file staged on its own thread (docs/decisions.md §6): written under its temporary
 * name and synced while the new ring is built; the reload installs it only once the epoch record
 * is durable, or abandons it (docs/journal.md §11). */
#include "request.h"

static void *stage_main(void *arg)
{
    struct gw_shards_write *w = arg;
    w->rc = gw_file_stage(&w->file, w->path, w->text, w->len, 0640);
    return NULL;
}

void gw_shards_write_start(struct gw_shards_write *w, const char *path, const char *text,
                           size_t len)
{
    w->path = path;
    w->text = text;
    w->len = len;
    w->rc = 0;
    w->threaded = pthread_create(&w->thread, NULL, stage_main, w) == 0;
    if (!w->threaded) /* no thread: the same write, here */
        stage_main(w);
}

int gw_shards_write_wait(struct gw_shards_write *w)
{
    if (w->threaded)
        pthread_join(w->thread, NULL);
    w->threaded = 0;
    return w->rc;
}

int gw_shards_write_install(struct gw_shards_write *w)
{
    return gw_durable_install(&w->file);
}

void gw_shards_write_abandon(struct gw_shards_write *w)
{
    gw_shards_write_wait(w);
    gw_durable_abandon(&w->file);
}
