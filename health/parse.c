/* Parallel JSON parsing of journal lines: parsing dominates verification time (~80%). */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "parse.h"

/* Below this many bytes a second thread costs more than it saves. */
#define HC_PARSE_MIN_SPLIT (256 * 1024)

struct hc_parse_job {
    struct hc_line *lines;
    size_t n;
    struct hc_arena *arena; /* NULL: plain malloc */
};

static void *hc_parse_run(void *arg)
{
    struct hc_parse_job *job = arg;
    if (job->arena != NULL)
        hc_arena_enter(job->arena);
    for (size_t i = 0; i < job->n; i++) {
        struct hc_line *l = &job->lines[i];
        l->doc = json_loadb(l->p, l->n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &l->err);
    }
    if (job->arena != NULL)
        hc_arena_leave();
    return NULL;
}

void hc_parser_init(struct hc_parser *p)
{
    memset(p, 0, sizeof *p);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    p->threads = n < 1 ? 1 : n > HC_PARSE_MAX_THREADS ? HC_PARSE_MAX_THREADS : (unsigned)n;
    p->use_arenas = hc_arena_installed();
}

void hc_parser_free(struct hc_parser *p)
{
    for (unsigned t = 0; t < HC_PARSE_MAX_THREADS; t++)
        hc_arena_free(&p->arenas[t]);
}

void hc_parse_lines(struct hc_parser *p, struct hc_line *lines, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += lines[i].n;
    unsigned threads = p->threads;
    if (n < 2 || total < HC_PARSE_MIN_SPLIT)
        threads = 1;
    /* Cut the batch into runs of about equal bytes; run 0 stays on this thread. */
    struct hc_parse_job jobs[HC_PARSE_MAX_THREADS];
    pthread_t tids[HC_PARSE_MAX_THREADS];
    int started[HC_PARSE_MAX_THREADS] = {0};
    size_t at = 0, bytes = 0;
    unsigned k = 0;
    for (; k < threads && at < n; k++) {
        size_t first = at, goal = total / threads * (k + 1);
        do
            bytes += lines[at++].n;
        while (at < n && (k == threads - 1 || bytes < goal));
        jobs[k].lines = lines + first;
        jobs[k].n = at - first;
        jobs[k].arena = p->use_arenas ? &p->arenas[k] : NULL;
    }
    for (unsigned t = 1; t < k; t++)
        started[t] = pthread_create(&tids[t], NULL, hc_parse_run, &jobs[t]) == 0;
    if (k > 0)
        hc_parse_run(&jobs[0]);
    for (unsigned t = 1; t < k; t++) {
        if (started[t])
            pthread_join(tids[t], NULL);
        else
            hc_parse_run(&jobs[t]);
    }
}

void hc_parse_release(struct hc_parser *p, struct hc_line *lines, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!p->use_arenas)
            json_decref(lines[i].doc);
        lines[i].doc = NULL;
    }
    if (p->use_arenas)
        for (unsigned t = 0; t < HC_PARSE_MAX_THREADS; t++)
            hc_arena_reset(&p->arenas[t]);
}
