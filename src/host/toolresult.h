/* toolresult.h — the result of one tool call (host-contracts.md §9): a C
 * struct, its JSON form and the constructors the pipeline and around-dispatch
 * wrappers use. Results are reference-counted and immutable once the pipeline
 * has frozen them (every result a caller or a "tools/result" listener sees).
 * This file does not run tools; see dispatch.h. Thread-safe: a frozen result
 * may be read and ref/unref'd from any thread. */
#ifndef CDSH_HOST_TOOLRESULT_H
#define CDSH_HOST_TOOLRESULT_H

#include <jansson.h>
#include <stdbool.h>

/* Error codes the registry and the pipeline put in error_code (§8). */
#define CDSH_TOOL_UNKNOWN_TOOL "UNKNOWN_TOOL"
#define CDSH_TOOL_INVALID_ARGS "INVALID_ARGS"
#define CDSH_TOOL_INVALID_OUTPUT "INVALID_TOOL_OUTPUT"
#define CDSH_TOOL_ABORTED "ABORTED"
#define CDSH_TOOL_ABORTED_BEFORE_DISPATCH "ABORTED_BEFORE_DISPATCH"
#define CDSH_TOOL_TIMEOUT "TOOL_TIMEOUT"
#define CDSH_TOOL_UNSUPPORTED_SCHEMA "UNSUPPORTED_SCHEMA"
#define CDSH_TOOL_DEPTH_EXCEEDED "TOOL_DEPTH_EXCEEDED" /* cdsh addition: nesting limit */
#define CDSH_TOOL_UNKNOWN "UNKNOWN"

/* A tool call's outcome. Read the fields; never write them on a frozen
 * result. Success: is_error false, value set (JSON, possibly null),
 * error_* NULL. Failure: is_error true, value NULL, error_message set, and
 * error_name/error_code both set or both NULL (a plain denial, a guard, a
 * post-execute block or a body failure without a code has no info).
 * content is always a JSON array of content blocks ({type:"text",text}, ...);
 * a failure's content is normally [{type:"text",text:"Error: <message>"}]. */
typedef struct cdsh_toolresult {
    bool is_error;
    bool concludes_turn;                /* success only: the body called conclude_turn */
    json_t *value;                      /* execution-local; never logged or replayed */
    json_t *content;                    /* array; what the model and the log see */
    char *error_message;                /* failure only */
    char *error_name;                   /* info.name, e.g. "ToolNotFoundError"; may be NULL */
    char *error_code;                   /* info.code, e.g. "UNKNOWN_TOOL"; may be NULL */
    json_t *meta;                       /* presentation meta (top-level calls only); may be NULL */
    json_t *additional_contexts;        /* array of strings deferred by the body; may be NULL */
    struct cdsh__toolresult_priv *priv; /* refcount and pipeline flags */
} cdsh_toolresult;

/* New success result owning `value` (stolen; NULL means JSON null) with no
 * content yet: the pipeline validates and renders it. For around-dispatch
 * wrappers that author a success themselves. NULL on ENOMEM.
 * keep-public: the tool result API (docs/host-tools.md); tests build results with it. */
cdsh_toolresult *cdsh_toolresult_new_value_steal(json_t *value);

/* New failure result with content [{type:"text",text:"Error: <message>"}].
 * name and code may be NULL (no info); message NULL means "tool failed".
 * NULL on ENOMEM. */
cdsh_toolresult *cdsh_toolresult_new_error(const char *name, const char *code, const char *message);

/* printf-style variant of cdsh_toolresult_new_error. */
cdsh_toolresult *cdsh_toolresult_new_errorf(const char *name, const char *code, const char *fmt,
                                            ...) __attribute__((format(printf, 3, 4)));

/* keep-public: the reference pair of _free; tests hold results past a call. */
cdsh_toolresult *cdsh_toolresult_ref(cdsh_toolresult *res); /* NULL-safe; returns res */

/* Drops one reference; frees on the last. NULL-safe. */
void cdsh_toolresult_free(cdsh_toolresult *res);

/* True once the pipeline has frozen the result (every result returned by
 * cdsh_dispatch_execute is frozen).
 * keep-public: tests and fuzz_dispatch check the pipeline froze a result. */
bool cdsh_toolresult_is_frozen(const cdsh_toolresult *res);

/* The §9 JSON shape, owned:
 *   {isError:false, value, content, meta?, additionalContexts?, concludesTurn?:true}
 *   {isError:true, error:{message, info?:{name, code}}, content, meta?, additionalContexts?}
 * NULL on ENOMEM. */
json_t *cdsh_toolresult_to_json(const cdsh_toolresult *res);

/* The text blocks of content joined by "\n" (owned; "" when there are none).
 * NULL on ENOMEM. */
char *cdsh_toolresult_text_dup(const cdsh_toolresult *res);

/* Owned content array holding one text block. NULL on ENOMEM. */
json_t *cdsh_toolresult_text_content(const char *text);

#endif
