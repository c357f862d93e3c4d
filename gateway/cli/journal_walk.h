/* Reading a state dir's journal line by line, as `journal verify` orders it (docs/journal.md §8):
 * the commands that read a journal without replaying it (`plan --journal`, `moves`). */
#ifndef SHARDGATE_GW_JOURNAL_WALK_H
#define SHARDGATE_GW_JOURNAL_WALK_H

#include <stddef.h>

/* Called with each complete line (without its newline) once its checksum has been checked when
 * its segment's lines carry one. Returns NULL to go on, GW_CLI_WALK_STOP to stop there,
 * GW_CLI_WALK_NO_MEMORY, or what is wrong with the line. */
typedef const char *(*gw_cli_line_fn)(void *ctx, const char *line, size_t len);

/* What a line function returns to stop, or when memory ran out (compared by address). */
extern const char GW_CLI_WALK_STOP[], GW_CLI_WALK_NO_MEMORY[];

/* Walks the sealed segments present in the directory of `journal` (the active journal.jsonl),
 * in order, then `journal` itself; archived segments are not at hand and not read. An
 * unterminated last line is an append in progress and is not read (docs/decisions.md §8), so the
 * journal may be a live gateway's; nothing is locked or written. Returns GW_EXIT_OK;
 * GW_EXIT_NOT_OK after printing `<command>: journal: <file>:<line>: <what>` (or the segments'
 * fault); GW_EXIT_INTERNAL when `fn` ran out of memory (the caller says so). */
int gw_cli_walk_journal(const char *command, const char *journal, gw_cli_line_fn fn, void *ctx);

#endif
