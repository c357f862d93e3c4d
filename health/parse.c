/* Parallel JSON parsing of journal lines: parsing dominates verification time (~80%). */
#include <pthread.h>
#include <unistd.h>

#include "parse.h"

#define HC_PARSE_MAX_THREADS 4
/* Below this many bytes a second thread costs more than it saves. */
#define HC_PARSE_MIN_SPLIT (256 * 1024)

struct hc_parse_job {
    struct hc_line *lines;
    size_t n;
};

static void *hc_parse_run(void *arg)
{
    struct hc_parse_job *job = arg;
    for (size_t i = 0; i < job->n; i++) {
        struct hc_line *l = &job->lines[i];
        l->doc = json_loadb(l->p, l->n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &l->err);
    }
    return NULL;
}

unsigned hc_parse_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > HC_PARSE_MAX_THREADS ? HC_PARSE_MAX_THREADS : (unsigned)n;
}

void hc_parse_lines(struct hc_line *lines, size_t n, unsigned threads)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += lines[i].n;
    if (threads > HC_PARSE_MAX_THREADS)
        threads = HC_PARSE_MAX_THREADS;
    if (threads < 2 || n < 2 || total < HC_PARSE_MIN_SPLIT) {
        struct hc_parse_job all = {lines, n};
        hc_parse_run(&all);
        return;
    }
    /* Cut the batch into `threads` runs of about equal bytes; run 0 stays on this thread. */
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
    }
    for (unsigned t = 1; t < k; t++)
        started[t] = pthread_create(&tids[t], NULL, hc_parse_run, &jobs[t]) == 0;
    hc_parse_run(&jobs[0]);
    for (unsigned t = 1; t < k; t++) {
        if (started[t])
            pthread_join(tids[t], NULL);
        else
            hc_parse_run(&jobs[t]);
    }
}
