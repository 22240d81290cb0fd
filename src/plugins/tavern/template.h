/* template.h — EJS-style templates for tavern prompts (liketavern §11):
 * a pure compiler from EJS (<% %>, <%= %>, <%- %>, <%# %>, <%_ _%>, -%>,
 * <%% %%>) to JavaScript, and a renderer that runs the JavaScript in
 * Duktape inside a forked worker process with a heap cap, a CPU and
 * wall-clock limit, bounded input and output, no file system, network or
 * module loader, closed descriptors, and a frozen clock and Math.random.
 * The worker returns the output and the variables it changed; nothing is
 * committed by this module — the caller stores the variables only when the
 * render succeeded and it is not a preview. Thread-safe (each render is its
 * own process); see docs/tavern.md for what the sandbox guarantees. */
#ifndef CDSH_TAVERN_TEMPLATE_H
#define CDSH_TAVERN_TEMPLATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

#define CDSH_TAVERN_TEMPLATE_MAX_SOURCE (1u << 20) /* template bytes accepted by the compiler */

typedef struct cdsh_tavern_template_limits {
    size_t heap_bytes; /* Duktape heap cap (default 32 MiB) */
    int wall_ms;       /* wall-clock limit of one render (default 1000) */
    size_t max_input;  /* request JSON bytes (default 16 MiB) */
    size_t max_output; /* output bytes (default 1 MiB); variables share the same cap */
} cdsh_tavern_template_limits;

void cdsh_tavern_template_limits_default(cdsh_tavern_template_limits *lim);

/* True if text contains an EJS tag ("<%"). */
bool cdsh_tavern_template_has_tags(const char *text);

/* Compiles EJS source to a JavaScript function body that returns the
 * output string. Owned result. Errors: TEMPLATE_SYNTAX (unclosed tag, with
 * the line number; a NUL byte), TEMPLATE_TOO_BIG. Pure. */
int cdsh_tavern_template_compile(const char *src, size_t len, char **js, cdsh_error *err);

/* Renders src. ctx (borrowed, may be NULL):
 *   {vars:{global:{}, local:{}, message:{}}, wi:{books:{name:[entry]},
 *    active:[entry]}, entry (the world-info entry being evaluated, or
 *    absent), macros:{char, user, ...}, now (Unix ms), seed}
 * The template sees getvar/setvar/incvar/decvar/delvar(path, [value],
 * {scope:"global"|"local"|"message"}), getwi(book, uidOrComment),
 * activewi(), `entry`, print(...), the macro names as read-only globals (charName,
 * userName, and ctx.macros under `macros`).
 * write = false (preview, redraw): *result is {output}; write = true:
 * {output, vars, changed} where vars are the three scopes after the run.
 * Errors (nothing is returned then): TEMPLATE_SYNTAX, TEMPLATE_ERROR (a
 * JavaScript exception, message included), TEMPLATE_TIMEOUT,
 * TEMPLATE_MEMORY, TEMPLATE_OUTPUT_TOO_BIG, TEMPLATE_INPUT_TOO_BIG,
 * TEMPLATE_CRASHED, TEMPLATE_WORKER_FAILED. */
int cdsh_tavern_template_render(const char *src, const json_t *ctx, bool write,
                                const cdsh_tavern_template_limits *lim, json_t **result,
                                cdsh_error *err);

#endif
