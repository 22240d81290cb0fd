/* cli_agent.h — what the front ends that run turns share (run, chat, exec,
 * web): a profile, a host with the enabled built-in plugins, the session
 * store and an agent; printing agent events for a terminal or as JSON
 * lines; and SIGINT routed to the running turn's cancel token. */
#ifndef CDSH_CLI_CLI_AGENT_H
#define CDSH_CLI_CLI_AGENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "agent/agent.h"

typedef struct cdsh_cli_agent {
    cdsh_profile *profile;
    cdsh_host *host;
    cdsh_session_store *store;
    cdsh_agent *agent;
} cdsh_cli_agent;

/* Opens everything (profile NULL: "default"). 0, or exit status 1 with the
 * reason on stderr as `cdsh <sub>: ...`. */
int cdsh_cli_agent_open(const char *sub, const char *profile, cdsh_cli_agent *out);
void cdsh_cli_agent_close(cdsh_cli_agent *a);

/* Resolves --session: an existing id (checked), or a new session titled
 * after `title_hint`. Owned id, or NULL with the reason on stderr. */
char *cdsh_cli_session_pick(const char *sub, cdsh_cli_agent *a, const char *id,
                            const char *title_hint);

/* Options of run, exec and chat: --session ID, --profile NAME, --json
 * (only with CDSH_CLI_OPT_JSON), --engine ID and --cwd DIR (only with
 * CDSH_CLI_OPT_ENGINE), --approve allow|reject (only with
 * CDSH_CLI_OPT_APPROVE), -h/--help. Positional
 * arguments stay in argv from optind on. Returns -1 when the caller should
 * go on, else the exit status (0 after --help, 2 on a usage error, with
 * usage printed). */
enum { CDSH_CLI_OPT_JSON = 1u << 0, CDSH_CLI_OPT_ENGINE = 1u << 1, CDSH_CLI_OPT_APPROVE = 1u << 2 };
typedef struct cdsh_cli_session_opts {
    const char *session;
    const char *profile;
    int json;
    const char *engine;
    const char *cwd;
    const char *approve;
} cdsh_cli_session_opts;
int cdsh_cli_session_opts_parse(int argc, char **argv, unsigned flags, void (*usage)(FILE *),
                                cdsh_cli_session_opts *o);

/* Event printer state for cdsh_cli_print_event. */
typedef struct cdsh_cli_printer {
    FILE *out;  /* streamed answer text */
    FILE *info; /* tool calls, notices, reasoning */
    bool json;  /* print every event as one JSON line on out instead */
    bool color; /* ANSI dim/bold for info lines */
    int mode;   /* internal: 0 nothing open, 1 text, 2 reasoning */
} cdsh_cli_printer;

/* A cdsh_agent_event_fn: arg is a cdsh_cli_printer. */
void cdsh_cli_print_event(void *arg, const json_t *event);

/* Exit status for a finished turn: 0 done, 1 error, 3 a limit was hit,
 * 130 cancelled. */
int cdsh_cli_turn_status(const cdsh_agent_outcome *out);

/* SIGINT handling for terminal front ends: installs a handler (no
 * SA_RESTART) and a watcher thread. While a turn token is set, Ctrl-C fires
 * it (the program keeps running); otherwise Ctrl-C counts prompt interrupts
 * and the second one in a row exits with status 130 (restoring the
 * terminal). One per process; cdsh_cli_sigint_stop undoes it. */
int cdsh_cli_sigint_start(bool interactive);
void cdsh_cli_sigint_stop(void);
/* Sets (or clears with NULL) the token Ctrl-C fires; also resets the
 * prompt interrupt count (call it with NULL after reading a line). */
void cdsh_cli_sigint_set_turn(cdsh_cancel *token);
/* Number of Ctrl-C presses at the prompt since the last reset. */
int cdsh_cli_sigint_take_prompt_count(void);

#endif
