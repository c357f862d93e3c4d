/* process_* from /proc/self (Linux), as the Prometheus client libraries write them. */
#include "metrics_process.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "metrics.h"

#ifndef SHARDGATE_VERSION
#error "SHARDGATE_VERSION is set by gateway/CMakeLists.txt"
#endif

static void number(struct gw_buf *out, const char *name, const char *type, const char *help,
                   double value)
{
    char text[64];
    gw_metrics_header(out, name, type, help);
    snprintf(text, sizeof(text), " %.17g\n", value);
    gw_buf_puts(out, name);
    gw_buf_puts(out, text);
}

/* utime, stime (ticks), vsize (bytes) and rss (pages) of /proc/self/stat: fields 14, 15, 23
 * and 24, counted after the command name's closing parenthesis. */
static int read_stat(double *cpu_s, double *vsize, double *rss)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "re");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long long utime, stime, vs;
    long long pages;
    if (!p || sscanf(p + 2,
                     "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d "
                     "%*d %*d %*d %*u %llu %lld",
                     &utime, &stime, &vs, &pages) != 4)
        return -1;
    long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    *cpu_s = (double)(utime + stime) / (double)(ticks > 0 ? ticks : 100);
    *vsize = (double)vs;
    *rss = (double)pages * (double)(page > 0 ? page : 4096);
    return 0;
}

static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the listing's own descriptor */
}

void gw_metrics_process(struct gw_buf *out, double start_s)
{
    gw_metrics_header(out, "shardgate_build_info", "gauge",
                      "The version of the running shardgate.");
    gw_buf_puts(out, "shardgate_build_info{version=\"" SHARDGATE_VERSION "\"} 1\n");
    double cpu, vsize, rss;
    if (read_stat(&cpu, &vsize, &rss) == 0) {
        number(out, "process_cpu_seconds_total", "counter",
               "Total user and system CPU time spent in seconds.", cpu);
        number(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
               rss);
        number(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
               vsize);
    }
    long fds = open_fds();
    if (fds >= 0)
        number(out, "process_open_fds", "gauge", "Number of open file descriptors.", (double)fds);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        number(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
               (double)rl.rlim_cur);
    number(out, "process_start_time_seconds", "gauge",
           "Start time of the process since unix epoch in seconds.", start_s);
}
