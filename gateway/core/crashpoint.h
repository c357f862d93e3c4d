#ifndef SHARDGATE_CRASHPOINT_H
#define SHARDGATE_CRASHPOINT_H

/* Test only (docs/api.md §14): `SHARDGATE_TEST_CRASH_AT=<point>` makes the process kill itself
 * with SIGKILL the first time it reaches that named point of a multi-step write (a rotation, a
 * checkpoint, an index flush, an archive, a membership change), after logging
 * `test_crash_point`; `SHARDGATE_TEST_PAUSE_AT=<point>` makes the thread sleep 1 s there each
 * time, after logging `test_pause_point`, so a test can run something in between. Built into
 * every build but Release (SHARDGATE_CRASH_POINTS); elsewhere a call is nothing. */
#ifdef SHARDGATE_CRASH_POINTS
void gw_crash_point(const char *point);
#else
static inline void gw_crash_point(const char *point)
{
    (void)point;
}
#endif

#endif
