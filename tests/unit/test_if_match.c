/* If-Match (gateway/http/if_match.c, RFC 9110): "*" matches any current epoch; a list
 * matches when one of its strong tags is the epoch; a weak tag never matches; anything that is
 * not "*" or a list of entity tags is malformed. */
#include "check.h"
#include "if_match.h"

#define EPOCH "f60a5fb19effc4cfa95aed0af45997f72905f6ae"
#define OTHER "0000000000000000000000000000000000000000"

static void test_matches(void)
{
    CHECK_EQ_U64(gw_if_match_matches("\"" EPOCH "\"", EPOCH), 1);
    CHECK_EQ_U64(gw_if_match_matches("*", EPOCH), 1);
    CHECK_EQ_U64(gw_if_match_matches(" * ", EPOCH), 1);
    CHECK_EQ_U64(gw_if_match_matches("\"" OTHER "\", \"" EPOCH "\"", EPOCH), 1);
    CHECK_EQ_U64(gw_if_match_matches("\"" OTHER "\",\t\"" EPOCH "\" ,", EPOCH), 1);
    CHECK_EQ_U64(gw_if_match_matches(", \"" EPOCH "\"", EPOCH), 1);
}

static void test_does_not_match(void)
{
    CHECK_EQ_U64(gw_if_match_matches("\"" OTHER "\"", EPOCH), 0);
    CHECK_EQ_U64(gw_if_match_matches("W/\"" EPOCH "\"", EPOCH), 0); /* strong comparison */
    CHECK_EQ_U64(gw_if_match_matches("\"" OTHER "\", W/\"" EPOCH "\"", EPOCH), 0);
    CHECK_EQ_U64(gw_if_match_matches("\"" EPOCH "0\"", EPOCH), 0);
    CHECK_EQ_U64(gw_if_match_matches("\"f60a5fb19effc4cfa95aed0af45997f72905f6a\"", EPOCH), 0);
    CHECK_EQ_U64(gw_if_match_matches("\"\"", EPOCH), 0);
}

static void test_well_formed(void)
{
    const char *good[] = {
        "*", "\"\"", "\"" EPOCH "\"", "W/\"x\"", "\"a\", \"b\"", "\"a\",,\"b\"", " \"a\" "};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        CHECK_EQ_U64(gw_if_match_parse(good[i]) + 1, 1);
    const char *bad[] = {"",         " ",        ",",           EPOCH,     "\"" EPOCH,
                         EPOCH "\"", "*, \"a\"", "\"a\" \"b\"", "w/\"a\"", "W/ \"a\"",
                         "\"a\"x",   "\"a b\"",  "**",          "\"a\";"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_EQ_U64(gw_if_match_parse(bad[i]) + 1, 0);
        CHECK_EQ_U64(gw_if_match_matches(bad[i], EPOCH), 0);
    }
}

int main(void)
{
    test_matches();
    test_does_not_match();
    test_well_formed();
    return CHECK_DONE();
}
