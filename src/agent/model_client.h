/* model_client.h — a client for OpenAI-compatible /chat/completions
 * endpoints (DeepSeek by default): builds the request, streams the reply as
 * events, assembles the final message (text, reasoning, several tool calls),
 * accounts usage, and classifies failures with DSH's error codes. It does not
 * keep conversations or run tools — sessions and the agent loop do.
 *
 * Thread-safety: a client may be used from several threads at once (one
 * request per call); each call uses its own connection. */
#ifndef CDSH_AGENT_MODEL_CLIENT_H
#define CDSH_AGENT_MODEL_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/model_config.h"
#include "base/cancel.h"
#include "base/err.h"

typedef struct cdsh_model_client cdsh_model_client;

/* Token counts. For one reply they are what the provider reported (zero if
 * it reported nothing); for a client they are sums, and `calls` counts the
 * completions that succeeded (`requests` counts HTTP attempts, retries
 * included). */
typedef struct cdsh_model_usage {
    int64_t input_tokens;        /* prompt_tokens */
    int64_t output_tokens;       /* completion_tokens */
    int64_t total_tokens;        /* total_tokens (input + output if absent) */
    int64_t cached_input_tokens; /* prompt_cache_hit_tokens / prompt_tokens_details.cached_tokens */
    int64_t reasoning_tokens;    /* completion_tokens_details.reasoning_tokens */
    int64_t calls;
    int64_t requests;
} cdsh_model_usage;

/* Adds every field of src to dst (for per-session totals). */
void cdsh_model_usage_add(cdsh_model_usage *dst, const cdsh_model_usage *src);

/* ---- streamed events ---------------------------------------------------- */

typedef enum cdsh_model_event_kind {
    CDSH_MODEL_EV_TEXT,            /* text, len: a piece of the answer */
    CDSH_MODEL_EV_REASONING,       /* text, len: a piece of reasoning_content */
    CDSH_MODEL_EV_TOOL_CALL_START, /* index, id, name: a new tool call (the id is the
                                      reply's; name is "" if it comes later) */
    CDSH_MODEL_EV_TOOL_CALL_ARGS,  /* index, text, len: a piece of its arguments */
    CDSH_MODEL_EV_FINISH,          /* finish_reason ("stop", "tool_calls", "length", ...) */
    CDSH_MODEL_EV_USAGE,           /* usage: what the provider reported */
    CDSH_MODEL_EV_RETRY,           /* attempt (next attempt, 2..), delay_ms, error: the
                                      failure being retried (nothing was delivered yet) */
} cdsh_model_event_kind;

/* Everything is borrowed and valid only during the callback. Text pieces are
 * exactly the bytes the provider sent (not NUL-terminated at len, although a
 * NUL follows). Tool calls are keyed by index; several may interleave. */
typedef struct cdsh_model_event {
    cdsh_model_event_kind kind;
    const char *text;
    size_t len;
    int index;
    const char *id;
    const char *name;
    const char *finish_reason;
    const cdsh_model_usage *usage;
    int attempt;
    int delay_ms;
    const cdsh_error *error;
} cdsh_model_event;

/* Return 0 to continue; any other value aborts the request, which then fails
 * with CDSH_ECANCELED / "ABORTED". Runs on the calling thread. */
typedef int (*cdsh_model_event_fn)(void *arg, const cdsh_model_event *ev);

/* ---- request ------------------------------------------------------------ */

/* What to do with "reasoning_content" on assistant messages of the history
 * (DeepSeek's rule: reasoning produced in a user turn that made tool calls
 * must be sent back on later requests; other reasoning is not needed, and
 * older deepseek-reasoner rejects it with HTTP 400). */
typedef enum cdsh_model_reasoning_policy {
    CDSH_MODEL_REASONING_AUTO = 0, /* keep it only in user turns that contain tool calls */
    CDSH_MODEL_REASONING_DROP,     /* strip it everywhere */
    CDSH_MODEL_REASONING_KEEP,     /* send what the history holds */
} cdsh_model_reasoning_policy;

typedef struct cdsh_model_request {
    const json_t *messages;    /* required array: {role, content, tool_calls?, tool_call_id?,
                                  reasoning_content?}; borrowed */
    const json_t *tools;       /* optional array of {"type":"function","function":{...}} */
    const json_t *tool_choice; /* optional: "auto", "none", "required" or an object */
    const json_t *extra;       /* optional object merged into the body last
                                  (e.g. {"thinking":{"type":"enabled"}}) */
    const char *model;         /* overrides the client's model for this call */
    double temperature;        /* sent when has_temperature */
    bool has_temperature;
    int max_tokens; /* sent when > 0 */
    bool no_stream; /* ask for a plain JSON reply (stream:false) */
    cdsh_model_reasoning_policy reasoning;
    cdsh_cancel *cancel;          /* optional; firing it aborts promptly, even mid-stream */
    cdsh_model_event_fn on_event; /* optional */
    void *event_arg;
} cdsh_model_request;

/* ---- reply -------------------------------------------------------------- */

typedef struct cdsh_model_tool_call {
    char *id; /* provider's id; "call_<index>" when its first chunk had none */
    char *name;
    char *arguments; /* the complete argument string as sent (normally JSON) */
} cdsh_model_tool_call;

typedef struct cdsh_model_reply {
    char *text;                       /* "" when the model only called tools */
    char *reasoning;                  /* NULL when the provider sent none */
    cdsh_model_tool_call *tool_calls; /* ordered by index */
    size_t n_tool_calls;
    char *finish_reason;    /* NULL if the provider sent none */
    cdsh_model_usage usage; /* this call's tokens; calls = 1, requests = attempts */
    int http_status;
    bool streamed; /* false when the server answered with one JSON body */
} cdsh_model_reply;

/* Frees the reply's contents and zeroes it. NULL-safe. */
void cdsh_model_reply_deinit(cdsh_model_reply *reply);

/* The reply as an assistant message for the next request's history:
 * {"role":"assistant","content":...,"reasoning_content"?:...,"tool_calls"?:[...]}.
 * Owned; NULL on ENOMEM. */
json_t *cdsh_model_reply_to_message(const cdsh_model_reply *reply);

/* ---- client ------------------------------------------------------------- */

/* New client for a resolved configuration (see cdsh_model_config_resolve;
 * the config is copied). Loads nothing: libcurl is loaded (once per
 * process) by the first cdsh_model_client_complete. */
cdsh_model_client *cdsh_model_client_new(const cdsh_model_config *resolved, cdsh_error *err);
void cdsh_model_client_free(cdsh_model_client *c);

/* Sums over every call made with this client. Thread-safe.
 * keep-public: the per-client totals; tests/agent/test_model_client.c checks the sums. */
void cdsh_model_client_usage(cdsh_model_client *c, cdsh_model_usage *out);

/* Sends one chat completion and waits for the whole reply, delivering events
 * while it streams. On success fills *out (caller deinits) and returns 0.
 * On failure *out is zeroed and err carries one of these codes, with the
 * provider's own message kept verbatim after "HTTP <status>: " where there
 * was an HTTP status (the API key is replaced by "[REDACTED]" wherever it
 * appears):
 *   MISSING_CREDENTIAL       CDSH_EPERM     (only from config resolution)
 *   INVALID_CREDENTIAL       CDSH_EPERM     HTTP 401, 403
 *   QUOTA                    CDSH_EPERM     HTTP 402, or "insufficient balance/quota" wording
 *   RATE_LIMIT               CDSH_EBUSY     HTTP 429
 *   CONTEXT_WINDOW_EXCEEDED  CDSH_ETOOBIG   HTTP 413, or 400 with context-length wording
 *   INVALID_REQUEST          CDSH_EINVAL    other 4xx
 *   SERVER                   CDSH_EIO       5xx, or an error object inside a 200 stream
 *   TRANSPORT                CDSH_EIO       connection failures (curl's message)
 *   HTTP_CLIENT_MISSING      CDSH_ENOTFOUND libcurl could not be loaded (never retried)
 *   TIMEOUT                  CDSH_ETIMEDOUT connect timeout, HTTP 408
 *   LLM_STREAM_IDLE_TIMEOUT  CDSH_ETIMEDOUT no byte for idle_timeout_ms
 *   EMPTY_RESPONSE           CDSH_EPROTO    200 without choices, text or tool calls
 *   BAD_RESPONSE             CDSH_EPROTO    a body that is not the protocol (bad JSON...)
 *   ABORTED                  CDSH_ECANCELED the cancel token fired or on_event said stop
 * Retries: RATE_LIMIT (unless it is a quota error), SERVER, TRANSPORT and
 * TIMEOUT (not LLM_STREAM_IDLE_TIMEOUT: a stalled server is reported, not
 * hammered) are retried up to max_retries times with exponential backoff and
 * jitter (Retry-After honoured, each wait capped at retry_max_ms), but only
 * while no event has been delivered: once streaming has started a failure is
 * final, so the caller never sees text twice. Credential, quota, request and
 * protocol errors are never retried. */
int cdsh_model_client_complete(cdsh_model_client *c, const cdsh_model_request *req,
                               cdsh_model_reply *out, cdsh_error *err);

/* The JSON body that complete() would send for req (owned; for logging,
 * tests and debugging — it holds no secret).
 * keep-public: tests compare the exact body sent. */
json_t *cdsh_model_client_request_body(const cdsh_model_client *c, const cdsh_model_request *req,
                                       cdsh_error *err);

#endif
