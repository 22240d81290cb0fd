/* cli_lines.h — the lines of a non-terminal stdin, shared by the chat loop
 * and the approval reader so each line goes to exactly one of them, in
 * order: a reader is offered the next line and it stays queued unless the
 * reader takes it (an approval that ended while its answer was being read
 * leaves the line to the chat). Reads fd 0 itself (no stdio buffering).
 * Thread-safe; the offer callback runs under the reader's lock. */
#ifndef CDSH_HOST_CLI_LINES_H
#define CDSH_HOST_CLI_LINES_H

#include <stdbool.h>

typedef struct cdsh_cli_lines cdsh_cli_lines;

/* Lines of file descriptor fd (borrowed, not closed). NULL on ENOMEM. */
cdsh_cli_lines *cdsh_cli_lines_new(int fd);
void cdsh_cli_lines_free(cdsh_cli_lines *l);

/* Returns true when the line (without its newline; borrowed for the call)
 * is taken, false to leave it for the next reader. */
typedef bool (*cdsh_cli_lines_offer_fn)(void *ud, const char *line);

/* Waits up to timeout_ms (< 0: no limit) for a complete line (a last line
 * without a newline counts at end of input) and offers it. Returns 1 when
 * the line was taken, 2 when it was left, 0 at end of input (nothing
 * left), -2 when the wait timed out, -1 when a signal interrupted it
 * (EINTR) or the read failed. */
int cdsh_cli_lines_offer(cdsh_cli_lines *l, int timeout_ms, cdsh_cli_lines_offer_fn fn, void *ud);

/* The next line, owned (NULL at end of input or when interrupted;
 * *interrupted says which). Blocks until there is one. */
char *cdsh_cli_lines_next_dup(cdsh_cli_lines *l, bool *interrupted);

#endif
