/* terminal.h — the client side of the ACP terminal calls (terminal/create,
 * output, wait_for_exit, kill, release): commands an agent runs through cdsh (argv when args
 * are given, else /bin/sh -c command; scrubbed environment plus the requested variables; own process group), their retained output,
 * exit status, kill and release. Path confinement and capability checks are the connection's job
 * (conn.c); this module trusts the cwd it is handed.
 *
 * Threads: every function is thread-safe. Each terminal has one reader
 * thread that drains the command's stdout and stderr, reaps it and answers
 * the held terminal/wait_for_exit requests; no lock of this module is held
 * while a JSON-RPC answer is written. The table lock is a leaf. */
#ifndef CDSH_PROTO_ACP_TERMINAL_H
#define CDSH_PROTO_ACP_TERMINAL_H

#include <stddef.h>

#include "proto/jsonrpc.h"

/* Output retained per terminal when the agent gives no outputByteLimit, and
 * the most it may ask for (larger limits are clamped to it). */
#define CDSH_ACP_TERMINAL_OUTPUT_DEFAULT ((size_t)1024 * 1024)
#define CDSH_ACP_TERMINAL_OUTPUT_MAX ((size_t)4 * 1024 * 1024)
/* Terminals one connection may hold at once (created and not released). */
#define CDSH_ACP_TERMINALS_MAX 32

typedef struct cdsh_acp_terminals cdsh_acp_terminals;

/* NULL on ENOMEM. */
cdsh_acp_terminals *cdsh_acp_terminals_new(void);

/* Kills every command (SIGKILL to its process group), answers the pending
 * waits with the exit status, joins the readers and frees. NULL-safe. */
void cdsh_acp_terminals_free(cdsh_acp_terminals *t);

/* Answers one terminal/create, terminal/output, terminal/wait_for_exit,
 * terminal/kill or terminal/release request (the method is read from req)
 * for session_id. cwd is the command's working directory for create,
 * already confined and absolute (ignored by the other methods). Unknown
 * terminal ids (or another session's) are -32002; bad params -32602; a
 * command that cannot start -32002 (not found) or -32603 with the reason.
 * wait_for_exit is held and answered when the command exits or the
 * request is cancelled (-32800); the caller's thread never blocks on it. */
void cdsh_acp_terminals_handle(cdsh_acp_terminals *t, cdsh_jsonrpc_request *req,
                               const char *session_id, const char *cwd);

/* Kills and releases every terminal of session_id (the session closed);
 * returns how many there were. No command of the session is left running. */
size_t cdsh_acp_terminals_release_session(cdsh_acp_terminals *t, const char *session_id);

/* Terminals currently held (created and not released). */
size_t cdsh_acp_terminals_count(cdsh_acp_terminals *t);

#endif
