/* The queue of either store's writer (commit_item.h). */
#include "commit_item.h"

#include <assert.h>
#include <errno.h>

void gw_commit_finish(struct gw_commit_item *list, int rc)
{
    while (list) {
        struct gw_commit_item *next = list->next;
        list->next = NULL;
        list->done(list, rc);
        list = next;
    }
}

void gw_commit_enqueue(struct gw_worker *w, struct gw_commit_item **head,
                       struct gw_commit_item **tail, struct gw_commit_item *item)
{
    assert(item->done != NULL);
    item->next = NULL;
    pthread_mutex_lock(&w->lock);
    int refuse = !w->started || w->stopping;
    if (!refuse) {
        assert(item != *tail && (!*tail) == (!*head)); /* queued once, list well formed */
        if (*tail)
            (*tail)->next = item;
        else
            *head = item;
        *tail = item;
        gw_worker_wake(w);
    }
    pthread_mutex_unlock(&w->lock);
    if (refuse)
        item->done(item, -EIO);
}
