/* Minimal assertions for the unit tests: each failure prints both operands and where. */
#ifndef SHARDGATE_TEST_CHECK_H
#define SHARDGATE_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_passes;

#define CHECK_REPORT(ok, fmt, ...)                                                                 \
    do {                                                                                           \
        if (ok) {                                                                                  \
            check_passes++;                                                                        \
        } else {                                                                                   \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: " fmt "\n", __FILE__, __LINE__, __VA_ARGS__);                  \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                         \
    do {                                                                                           \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                           \
        CHECK_REPORT(a_ == b_, "%s == %s: %" PRIu64 " != %" PRIu64, #a, #b, a_, b_);               \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                                         \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        CHECK_REPORT(strcmp(a_, b_) == 0, "%s == %s: \"%s\" != \"%s\"", #a, #b, a_, b_);           \
    } while (0)

#define CHECK_TRUE(c) CHECK_REPORT((c), "%s is false", #c)

/* The closing line ctest shows; the exit code is what counts. */
#define CHECK_DONE()                                                                               \
    (printf("%d passed, %d failed\n", check_passes, check_failures), check_failures ? 1 : 0)

#endif
