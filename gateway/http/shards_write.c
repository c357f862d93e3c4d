/* The shards file replacement of a PUT on its own thread (docs/decisions.md §6): the file's
 * fsyncs run while the new ring is built, and the reload joins it before the epoch record, so
 * the order file, record, switch (docs/decisions.md §21) is kept. */
#include "request.h"

#include "fileio.h"

static void *write_main(void *arg)
{
    struct gw_shards_write *w = arg;
    w->rc = gw_file_replace(w->path, w->text, w->len, 0640);
    return NULL;
}

void gw_shards_write_start(struct gw_shards_write *w, const char *path, const char *text,
                           size_t len)
{
    w->path = path;
    w->text = text;
    w->len = len;
    w->rc = 0;
    w->threaded = pthread_create(&w->thread, NULL, write_main, w) == 0;
    if (!w->threaded) /* no thread: the same write, here */
        write_main(w);
}

int gw_shards_write_wait(struct gw_shards_write *w)
{
    if (w->threaded)
        pthread_join(w->thread, NULL);
    w->threaded = 0;
    return w->rc;
}
