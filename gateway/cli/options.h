/* What a command says about an option getopt_long refused (docs/tools.md §1). */
#ifndef SHARDGATE_GW_CLI_OPTIONS_H
#define SHARDGATE_GW_CLI_OPTIONS_H

#include <getopt.h>
#include <stddef.h>

/* After getopt_long returned '?' for argv[optind - 1]: "--NAME needs a value" for an option of
 * `opts` given without its value, else "unknown option ARG", followed by " (did you mean
 * --NAME?)" when an option of `opts` is within two edits of it. Written into msg. */
void gw_cli_bad_option(const struct option *opts, char **argv, char *msg, size_t cap);

/* "unexpected argument \"ARG\"": an operand the command does not take. Written into msg. */
void gw_cli_unexpected(const char *arg, char *msg, size_t cap);

#endif
