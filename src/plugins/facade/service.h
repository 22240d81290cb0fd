/* service.h — the capabilities service (capability-facade.md §2-§6): a
 * declared capability's operations become model-facing tools that run fixed
 * pipelines of existing tools as nested dispatches. Registers nothing until
 * something is declared. Not here: the plugin and profile declarations
 * (plugin.h), the analyzer (analyze.h). */
#ifndef CDSH_PLUGINS_FACADE_SERVICE_H
#define CDSH_PLUGINS_FACADE_SERVICE_H

#include <jansson.h>
#include <stddef.h>

#include "base/err.h"
#include "host/disposer.h"
#include "host/plugins.h"
#include "host/scope.h"

/* Ownership (the fix for digest §6): register() takes the CALLER's plugin
 * context. The operation tools go into that context's layer and the context
 * also adopts the capability's disposer, so unloading the declarer removes
 * its operation tools and its listing entry; re-declaring after a reload works.
 *
 * Thread-safety: every function is thread-safe (one mutex guards the listing;
 * it is never held while the registry or a tool runs). */

#define CDSH_FACADE_SERVICE "capabilities"
#define CDSH_FACADE_STEP_TEXT_BUDGET 2000
#define CDSH_FACADE_ERROR_TEXT_BUDGET 600

typedef struct cdsh_facade cdsh_facade;

/* NULL on ENOMEM. */
cdsh_facade *cdsh_facade_new(void);
/* Every declarer must have unloaded (they list the service in `requires`). NULL-safe. */
void cdsh_facade_free(cdsh_facade *facade);

typedef struct cdsh_facade_opts {
    /* The view step names are resolved in (digest: options.agent). NULL: the
     * global view, even when `caller` is a scoped context. */
    cdsh_scope *agent;
} cdsh_facade_opts;

/* Declares `capability` (borrowed JSON: {id, description, operations:[{name,
 * description, parameters?, steps:[{tool, from?}]}]}; unknown keys ignored).
 * Validation runs completely first, with the 16 checks of digest §2 in order;
 * the first failure returns CDSH_EINVAL, code "INVALID_CAPABILITY" (check 15:
 * CDSH_ENOTFOUND "UNKNOWN_STEP_TOOL"; check 16: CDSH_EEXIST
 * "CAPABILITY_EXISTS") and the original's message. Then one tool
 * `<id>_<op>` per operation is registered in the caller's layer; if one
 * registration fails (bad parameter spec, name clash) the ones already made
 * are disposed in reverse order and the registry's error is returned: all or
 * nothing. On success *out (may be NULL) receives the idempotent disposer
 * (removes the operation tools in reverse order and the listing entry); it
 * stays valid until the caller's context is disposed, which runs it too. */
int cdsh_facade_register(cdsh_facade *facade, cdsh_plugin_ctx *caller, const json_t *capability,
                         const cdsh_facade_opts *opts, cdsh_disposer_t *out, cdsh_error *err);

/* Owned [{id, description, tools:[...]}] in registration order. */
json_t *cdsh_facade_list(cdsh_facade *facade);

/* Number of listed capabilities. */
size_t cdsh_facade_count(cdsh_facade *facade);

/* Problems with declarations that could not be registered (profile
 * declarations report here instead of failing the facade): owned
 * [{index, id, code, message}] in the order they were found. */
json_t *cdsh_facade_problems(cdsh_facade *facade);
/* Records (problem non-NULL, borrowed) or clears (NULL) the problem of the
 * profile declaration at `index`. */
void cdsh_facade_set_problem(cdsh_facade *facade, size_t index, const json_t *problem);

#endif
