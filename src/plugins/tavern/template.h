/* template.h — EJS card templates for tavern prompts (seed 001 §6,
 * liketavern §11), run by ejs's own compiler on JavaScriptCore in an
 * isolated, long-lived worker process (template_worker.c): a fresh global
 * context per evaluation that receives only the request's data and the
 * frozen libraries (lodash, ejs, showdown, jsonrepair, faker) loaded once
 * from the pinned npm runtime in runtime/js; JSC's execution time limit
 * plus a wall-clock limit enforced here, a memory limit (RLIMIT_DATA on the
 * worker), bounded input and output, no file system, network, module
 * loader or host function, a frozen clock and seeded Math.random/faker.
 * The worker returns the output and the variables the template changed;
 * nothing is committed by this module — the caller stores the variables
 * only when the render succeeded and it is not a preview. Thread-safe:
 * renders are serialised on the one worker of the process, which is started
 * on first use and restarted after a crash, a wall-clock timeout or a
 * memory failure. See docs/tavern.md. */
#ifndef CDSH_TAVERN_TEMPLATE_H
#define CDSH_TAVERN_TEMPLATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define CDSH_TAVERN_TEMPLATE_MAX_SOURCE (1u << 20) /* template bytes accepted */

typedef struct cdsh_tavern_template_limits {
    size_t mem_bytes;  /* memory the worker may allocate beyond its start (default 512 MiB) */
    int wall_ms;       /* time limit of one evaluation (default 1000) */
    size_t max_input;  /* request JSON bytes (default 16 MiB) */
    size_t max_output; /* output characters (default 1 MiB); variables share the cap */
} cdsh_tavern_template_limits;

void cdsh_tavern_template_limits_default(cdsh_tavern_template_limits *lim);

/* True if text contains an EJS tag ("<%"). */
bool cdsh_tavern_template_has_tags(const char *text);

/* Renders src. ctx (borrowed, may be NULL):
 *   {vars:{global:{}, local:{}, message:{}}, wi:{books:{name:[entry]},
 *    active:[entry]}, entry (the world-info entry being evaluated, or
 *    absent), macros:{char, user, ...}, lastUserMessage, lastCharMessage,
 *    now (Unix ms), seed}
 * The template sees getvar/setvar/incvar/decvar/delvar(path, [value],
 * {scope:"global"|"local"|"message", defaults}), getwi(book, uidOrComment),
 * activewi(), `entry`, print(...), charName, userName, macros,
 * lastUserMessage, lastCharMessage, and the libraries _, ejs, showdown
 * (a facade; makeHtml(md) with metadata and header ids off), jsonrepair,
 * faker/fakerEN/fakerZH_CN (seeded from ctx.seed).
 * write = false (preview, redraw): *result is {output}; write = true:
 * {output, vars, changed} where vars are the three scopes after the run.
 * Errors (nothing is returned then), the message names the template's line,
 * column and failing expression when known ("line 3, column 7: ..."):
 * TEMPLATE_SYNTAX, TEMPLATE_RUNTIME (a JavaScript exception),
 * TEMPLATE_TIMEOUT, TEMPLATE_MEMORY, TEMPLATE_OUTPUT_TOO_LARGE,
 * TEMPLATE_INPUT_TOO_LARGE, TEMPLATE_TOO_BIG (source), TEMPLATE_CRASHED,
 * TEMPLATE_WORKER_FAILED, TEMPLATE_ENGINE_MISSING (JavaScriptCore cannot be
 * loaded), TEMPLATE_RUNTIME_MISSING (the runtime's files are
 * not installed; the message names the missing file). */
int cdsh_tavern_template_render(const char *src, const json_t *ctx, bool write,
                                const cdsh_tavern_template_limits *lim, json_t **result,
                                cdsh_error *err);

/* Like render but *detail (owned, may be NULL on success) is the error's
 * structure {code, message, line, column, expression} for the trigger log
 * and the preview. */
int cdsh_tavern_template_render_ex(const char *src, const json_t *ctx, bool write,
                                   const cdsh_tavern_template_limits *lim, json_t **result,
                                   json_t **detail, cdsh_error *err);

/* The runtime directory (runtime/js with its node_modules): the one set
 * here, else $CDSH_JS_RUNTIME, else runtime/js or share/cdsh/runtime/js
 * next to (or one level above) the executable, else the source tree's.
 * dir is copied; NULL restores the search. Takes effect at the next start
 * of the worker. */
void cdsh_tavern_template_set_runtime_dir(const char *dir);

/* Stops the worker (the next render starts a new one). */
void cdsh_tavern_template_worker_stop(void);

/* The worker's CPU time for the last successful exchange in microseconds,
 * or -1 (benches: wall time on a shared machine mostly measures others). */
int64_t cdsh_tavern_template_last_cpu_us(void);

/* The CPU time (all threads, microseconds) the last started worker took
 * from its fork to ready. */
int64_t cdsh_tavern_template_start_cpu_us(void);

/* Process id of the running worker, or -1 (tests and benches). */
int cdsh_tavern_template_worker_pid(void);

#endif
