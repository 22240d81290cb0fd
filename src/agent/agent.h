/* agent.h — the agent loop and the turn runner every front end shares:
 * prompt assembly, streamed steps, tool calls through the kernel's dispatch
 * and parallel scheduling, limits, every step recorded in the session store
 * and reported as JSON events; also slash commands for a session.
 * Thread-safety and details below the includes; docs/agent.md. */
#ifndef CDSH_AGENT_AGENT_H
#define CDSH_AGENT_AGENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/model_client.h"
#include "agent/model_config.h"
#include "agent/session_store.h"
#include "base/cancel.h"
#include "base/err.h"
#include "host/host.h"

/* A turn assembles the system prompt (base text, plugin segments, skills
 * index, visible tools), streams the model's reply, runs its tool calls
 * through cdsh_dispatch_batch, feeds the results back and repeats until the
 * model stops or a limit is hit.
 *
 * Thread-safety: one cdsh_agent may run turns on different sessions from
 * several threads at once; a session runs one turn at a time (its lease). */

#define CDSH_AGENT_DEFAULT_MAX_STEPS 24
#define CDSH_AGENT_DEFAULT_MAX_TOKENS 400000
#define CDSH_AGENT_DEFAULT_PROMPT                                                                  \
    "You are cdsh, a helpful assistant running inside a local agent harness. Use the tools "       \
    "when they help; answer concisely."

/* Opens the per-turn runtime-context message (a user message appended after
 * the history in every request of the turn; see docs/agent.md). */
#define CDSH_AGENT_CONTEXT_HEAD "Current runtime context.\n\n"

typedef struct cdsh_agent cdsh_agent;

typedef struct cdsh_agent_options {
    cdsh_host *host;                /* required; borrowed, must outlive the agent */
    cdsh_session_store *store;      /* required; borrowed */
    const cdsh_model_config *model; /* profile layer (copied); NULL: environment/defaults */
    cdsh_scope *scope;              /* agent scope for tools, skills, prompt; NULL: global */
    int max_steps;                  /* model calls per turn; 0: default, < 0: invalid */
    int64_t max_tokens;             /* total tokens per turn; 0: default, -1: unlimited */
    size_t max_parallel;            /* parallel tool calls; 0: 10 */
    const char *base_prompt;        /* NULL: CDSH_AGENT_DEFAULT_PROMPT; "" : none */
    int64_t lease_timeout_ms;       /* wait for a session busy elsewhere; 0: refuse at once */
} cdsh_agent_options;

/* Receives each event (borrowed JSON object with a "type"; see docs/agent.md)
 * on the thread running the turn, in order. Must not block for long. */
typedef void (*cdsh_agent_event_fn)(void *arg, const json_t *event);

/* How a turn ended. */
typedef struct cdsh_agent_outcome {
    int64_t turn;
    int steps;       /* model calls made */
    char reason[16]; /* done|cancelled|step-limit|token-limit|error */
    char code[64];   /* for error: the model client's code (e.g. MISSING_CREDENTIAL) */
    cdsh_model_usage usage;
    char *text; /* the last assistant text (owned; may be NULL) */
} cdsh_agent_outcome;

void cdsh_agent_outcome_deinit(cdsh_agent_outcome *out);

/* CDSH_EINVAL "BAD_ARGUMENT" for a missing host/store or a negative limit. */
int cdsh_agent_new(const cdsh_agent_options *opts, cdsh_agent **out, cdsh_error *err);
void cdsh_agent_free(cdsh_agent *agent);

cdsh_host *cdsh_agent_host(const cdsh_agent *agent);
cdsh_session_store *cdsh_agent_store(const cdsh_agent *agent);

/* The system prompt the next request would carry (owned).
 * keep-public: tests/agent/test_agent.c reads the assembled prompt with it. */
char *cdsh_agent_system_prompt_dup(cdsh_agent *agent);

/* Model tools for the request: [{"type":"function","function":{name,
 * description, parameters}}] of the tools visible to the agent's scope. */
json_t *cdsh_agent_request_tools(cdsh_agent *agent);

/* Runs one turn: takes the session's lease, loads (repairing a crashed
 * turn), records turn/start and the user message, then loops. Returns 0 once
 * the turn was recorded, however it ended (out->reason says how: a model
 * failure is a notice plus reason "error", not a failure of this call).
 * Negative before a turn starts: NO_SESSION / BAD_SESSION_ID, SESSION_BUSY
 * (CDSH_EBUSY: another turn holds the session), CDSH_EINVAL "BAD_ARGUMENT"
 * (empty text), or a store failure. cancel may be NULL; firing it ends the
 * turn with reason "cancelled" (a running model stream and tool bodies see
 * it). out may be NULL. */
int cdsh_agent_run_turn(cdsh_agent *agent, const char *session_id, const char *text,
                        cdsh_cancel *cancel, cdsh_agent_event_fn on_event, void *event_arg,
                        cdsh_agent_outcome *out, cdsh_error *err);

/* Runs a slash command line for a session (session_id NULL: not logged)
 * and records command/run and command/done in its log. Returns 0 with an
 * owned *result {commandId, name, kind:"success"|"error", text} or, for a
 * line naming no visible command, {kind:"error", code:"unknown-command",
 * text:<which commands exist>}. CDSH_EINVAL "NOT_A_COMMAND" for a line that
 * does not start with "/name". Emits command/run and command/done events. */
int cdsh_agent_exec_command(cdsh_agent *agent, const char *session_id, const char *line,
                            cdsh_cancel *cancel, cdsh_agent_event_fn on_event, void *event_arg,
                            json_t **result, cdsh_error *err);

#endif
