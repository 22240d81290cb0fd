/* plugins.h — the plugin contract (host-contracts.md §15): descriptors,
 * fibers (pending → loading → active → unloading → disposed, or failed),
 * services by name, and the plugin context through which every registration
 * is made and owned. Thread-safety: see below. The compiled-in table is
 * plugins/builtin.h; the guide for plugin authors is docs/host.md. */
#ifndef CDSH_HOST_PLUGINS_H
#define CDSH_HOST_PLUGINS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/home.h"
#include "host/commands.h"
#include "host/disposer.h"
#include "host/events.h"
#include "host/rpc.h"
#include "host/scope.h"
#include "host/skills.h"
#include "host/subcommand.h"
#include "host/tools.h"

/* Ownership: each cdsh_ctx_* registration calls the host registry AND records
 * the disposer in the calling context; unloading runs the recorded disposers
 * in reverse order, so a reload leaves nothing behind. A service is a plain
 * pointer whose functions take the CALLER's context (`svc_register(svc, ctx,
 * ...)`) and register through it, so what a consumer registers through a
 * service belongs to the consumer and goes away with it (the facade
 * "disposer ownership trap" cannot happen).
 *
 * Thread-safety: cdsh_ctx_* registration functions, cdsh_ctx_get and the
 * getters are thread-safe (a plugin's threads may register). Lifecycle calls
 * (cdsh_plugin_load, cdsh_plugin_unload, cdsh_host_free, cdsh_ctx_plugin)
 * must be serialised by the caller; they may be made from inside apply. No
 * host lock is held while apply or a disposer runs. */

typedef struct cdsh_host cdsh_host;
typedef struct cdsh_plugin cdsh_plugin;         /* a fiber: one load of a descriptor */
typedef struct cdsh_plugin_ctx cdsh_plugin_ctx; /* what apply registers through */

typedef enum cdsh_plugin_state {
    CDSH_PLUGIN_PENDING = 0, /* waiting for a required service */
    CDSH_PLUGIN_LOADING,     /* apply is running */
    CDSH_PLUGIN_ACTIVE,
    CDSH_PLUGIN_UNLOADING, /* disposers are running; no new effects */
    CDSH_PLUGIN_DISPOSED,
    CDSH_PLUGIN_FAILED, /* invalid config or apply failed; everything undone */
} cdsh_plugin_state;

/* apply registers everything through ctx; config is the complete config
 * (defaults filled; borrowed, valid while the fiber lives). Return 0, or a
 * negative CDSH_E* with err filled: the fiber then fails, what it registered
 * is disposed and other plugins are untouched. */
typedef int (*cdsh_plugin_apply_fn)(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err);

typedef struct cdsh_plugin_def {
    const char *name;            /* unique among live fibers */
    const char *description;     /* one line for listings */
    const char *const *requires; /* NULL-terminated service names, or NULL */
    const char *const *optional; /* NULL-terminated; a change in availability reloads */
    const char *config_schema;   /* JSON text in config.h's vocabulary; NULL: no config */
    bool enabled_by_default;     /* when the profile does not say */
    cdsh_plugin_apply_fn apply;
    /* Load order: names of plugins this one loads after when both are in
     * the table given to cdsh_host_load_plugins; "*" means every plugin of
     * that table that does not itself say "*" (the facade, which declares
     * capabilities over the others' tools). NULL-terminated, or NULL. */
    const char *const *after;
    /* `cdsh <name>` subcommands this plugin adds to the command line
     * (NULL-terminated, or NULL). They belong to the descriptor, not to a
     * loaded fiber: the front end lists and runs them whether or not a
     * profile enables the plugin (`cdsh tavern import` works with the
     * tavern off), and each opens what it needs itself (host/cli.h). */
    const cdsh_subcommand *subcommands;
} cdsh_plugin_def;

/* ---- lifecycle ------------------------------------------------------------
 * keep-public: the plugin contract (docs/host.md): front ends, tests and
 * plugins outside this tree drive fibers through these. */

/* Creates a fiber for def (borrowed: it must outlive the host; normally a
 * static const descriptor) with `config` (NULL: nothing given; borrowed) and
 * starts it: PENDING while a required service is missing, else LOADING then
 * ACTIVE. *out (may be NULL) receives the fiber, valid until cdsh_host_free,
 * also when loading failed. Errors: CDSH_EEXIST "PLUGIN_EXISTS" (`plugin "x"
 * is already loaded`; a failed fiber of that name is disposed and replaced); the schema is refused
 * (CDSH_EUNSUPPORTED); invalid config (CDSH_EINVAL "INVALID_CONFIG", `invalid config:` lines);
 * apply failed (its code and message, prefixed `plugin "x" failed to apply: `). Failures emit
 * `plugin/failed` {name, message} and leave other plugins as they were. Emits `plugins/change`
 * {name, state} on every state change. */
int cdsh_plugin_load(cdsh_host *host, const cdsh_plugin_def *def, const json_t *config,
                     cdsh_plugin **out, cdsh_error *err);

/* Unloads: plugins that require a service this one provides go back to
 * PENDING first, then every recorded disposer runs in reverse order, and the
 * fiber ends DISPOSED. A PENDING or FAILED fiber just becomes DISPOSED.
 * No-op on a DISPOSED fiber. */
void cdsh_plugin_unload(cdsh_plugin *plugin);

cdsh_plugin_state cdsh_plugin_state_get(const cdsh_plugin *plugin);
const char *cdsh_plugin_state_name(cdsh_plugin_state state); /* "pending", "active", ... */
const char *cdsh_plugin_name(const cdsh_plugin *plugin);
const cdsh_plugin_def *cdsh_plugin_def_get(const cdsh_plugin *plugin);
/* The failure message of a FAILED fiber, else NULL. Borrowed. */
const char *cdsh_plugin_error(const cdsh_plugin *plugin);
/* The complete config (NULL before validation succeeded). Borrowed. */
const json_t *cdsh_plugin_config(const cdsh_plugin *plugin);
/* Number of disposers currently recorded in the fiber's context. */
size_t cdsh_plugin_effect_count(cdsh_plugin *plugin);

/* The live (not DISPOSED) fiber named `name`, or NULL. */
cdsh_plugin *cdsh_host_plugin_find(cdsh_host *host, const char *name);
/* [{name, state, error?}] for every fiber that is not DISPOSED, load order. Owned. */
json_t *cdsh_host_plugins_list(cdsh_host *host);

/* ---- the plugin context ----------------------------------------------------
 * Every registration below fails with CDSH_ECLOSED, code "INACTIVE_EFFECT",
 * `plugin "x" is not active: effects cannot be added while it is <state>`
 * when the fiber is unloading, disposed or failed (or the scoped context was
 * freed); nothing stays registered then. Other errors are the registry's.
 * keep-public: the plugin API (docs/host.md); the built-in plugins use part of
 * it, plugins outside this tree and the host's tests the rest. */

cdsh_host *cdsh_ctx_host(const cdsh_plugin_ctx *ctx);
/* The host's home (cdsh_host_home): where a plugin keeps its state. */
const cdsh_home *cdsh_ctx_home(const cdsh_plugin_ctx *ctx);
const char *cdsh_ctx_name(const cdsh_plugin_ctx *ctx);  /* the plugin's name */
cdsh_scope *cdsh_ctx_scope(const cdsh_plugin_ctx *ctx); /* NULL for the plugin's own context */
const json_t *cdsh_ctx_config(const cdsh_plugin_ctx *ctx);
cdsh_plugin *cdsh_ctx_plugin_get(const cdsh_plugin_ctx *ctx);

/* Tools in the context's layer (global, or the scoped context's agent).
 * def->ud always passes to this call: if registration fails, free_ud(ud) runs
 * before the error returns. */
int cdsh_ctx_register_tool(cdsh_plugin_ctx *ctx, const cdsh_tool_def *def, cdsh_error *err);
/* Scoped contexts only (the registry refuses global restrictions). */
int cdsh_ctx_restrict_tools(cdsh_plugin_ctx *ctx, const char *const *allow, const char *const *deny,
                            cdsh_error *err);
int cdsh_ctx_guard_tools(cdsh_plugin_ctx *ctx, cdsh_tools_guard_fn fn, void *ud,
                         void (*free_ud)(void *), cdsh_error *err);
/* Dispatch hooks (tools.h) filtered by the context's scope. */
int cdsh_ctx_on_pre_execute(cdsh_plugin_ctx *ctx, cdsh_tools_pre_fn fn, void *ud,
                            void (*free_ud)(void *), cdsh_error *err);
int cdsh_ctx_on_post_execute(cdsh_plugin_ctx *ctx, cdsh_tools_post_fn fn, void *ud,
                             void (*free_ud)(void *), cdsh_error *err);
int cdsh_ctx_on_execute(cdsh_plugin_ctx *ctx, cdsh_tools_around_fn fn, void *ud,
                        void (*free_ud)(void *), cdsh_error *err);
/* Installs the host's approval service (copied) until this plugin unloads. */
int cdsh_ctx_set_approval(cdsh_plugin_ctx *ctx, const cdsh_approval_service *service,
                          cdsh_error *err);

int cdsh_ctx_register_command(cdsh_plugin_ctx *ctx, const cdsh_command_def *def, cdsh_error *err);
/* source defaults to the plugin's name; a duplicate is a warning (skills.h). */
int cdsh_ctx_register_skill(cdsh_plugin_ctx *ctx, const cdsh_skill_def *def, cdsh_error *err);
int cdsh_ctx_rpc_handle(cdsh_plugin_ctx *ctx, const char *channel, cdsh_rpc_fn fn, void *arg,
                        cdsh_error *err);
int cdsh_ctx_rpc_intercept(cdsh_plugin_ctx *ctx, const char *channel, cdsh_rpc_match_fn matches,
                           cdsh_rpc_fn fn, void *arg, cdsh_error *err);
/* Listener filtered by the context's scope (global context: sees everything). */
int cdsh_ctx_on(cdsh_plugin_ctx *ctx, const char *pattern, cdsh_event_fn fn, void *arg,
                cdsh_error *err);

/* Runs start(arg, &disposer, err) now and records the disposer it returns
 * (threads, timers, files...). A failing start records nothing. */
typedef int (*cdsh_effect_fn)(void *arg, cdsh_disposer_t *out, cdsh_error *err);
int cdsh_ctx_effect(cdsh_plugin_ctx *ctx, cdsh_effect_fn start, void *arg, cdsh_error *err);

/* Records an existing disposer. If the context is inactive the disposer runs
 * at once and INACTIVE_EFFECT is returned. */
int cdsh_ctx_adopt(cdsh_plugin_ctx *ctx, cdsh_disposer_t disposer, cdsh_error *err);

/* Provides a service under `name` until this plugin unloads. The service is
 * a borrowed pointer; its functions should take the caller's ctx.
 * Already provided: CDSH_EEXIST, code "SERVICE_EXISTS",
 * `service "x" is already provided by plugin "y"`. Plugins waiting for it
 * start once the current lifecycle call finishes, so provide from apply (or
 * another lifecycle call), not from a plugin's own thread. */
int cdsh_ctx_provide(cdsh_plugin_ctx *ctx, const char *name, void *service, cdsh_error *err);

/* The service named `name`, or NULL when absent — and NULL when the plugin
 * did not list `name` in requires or optional: declared services are the
 * ones it is unloaded for before their provider goes away, so a pointer
 * from here never dangles. */
void *cdsh_ctx_get(cdsh_plugin_ctx *ctx, const char *name);
/* Same, for front ends and tests. */
void *cdsh_host_service(cdsh_host *host, const char *name);

/* ---- hooks by kind ---------------------------------------------------------
 * A hook is a borrowed pointer (normally a static const struct, whose own
 * `arg` may point at the plugin's state) registered under a kind string.
 * The host neither knows nor calls hook types: the layer that consumes a
 * kind defines its struct and its kind name beside it (e.g.
 * CDSH_SESSION_FORK_HOOKS in agent/session_store.h: fork participants;
 * CDSH_SESSION_RUNNERS in agent/session_runner.h: plugins that run the
 * turns of the sessions bound to them). Front ends collect the hooks of a
 * kind from the host instead of naming plugins.
 * keep-public: the plugin API (docs/host.md), as the section above. */

/* Registers hook under kind until this plugin unloads (or the scoped
 * context is freed). Registered twice: CDSH_EEXIST "HOOK_EXISTS". */
int cdsh_ctx_hook(cdsh_plugin_ctx *ctx, const char *kind, const void *hook, cdsh_error *err);

/* The hooks of `kind` in registration order (plugin load order): an owned,
 * NULL-terminated array of borrowed pointers (free() it), never NULL but
 * on ENOMEM. A hook stays valid while its plugin is loaded: callers run
 * the hooks between lifecycle calls (front ends do not unload plugins
 * while a request that uses a hook runs). */
const void **cdsh_host_hooks_dup(cdsh_host *host, const char *kind);

/* Loads a child plugin owned by this context (unloaded with it). */
int cdsh_ctx_plugin(cdsh_plugin_ctx *ctx, const cdsh_plugin_def *def, const json_t *config,
                    cdsh_plugin **out, cdsh_error *err);

/* A scope-tagged context for one agent: registrations go to `scope`'s layer
 * and are disposed when the scoped context is freed or the plugin unloads,
 * whichever comes first. NULL (with err) when ctx is inactive or scope is NULL. */
cdsh_plugin_ctx *cdsh_ctx_scoped_new(cdsh_plugin_ctx *ctx, cdsh_scope *scope, cdsh_error *err);
/* Disposes what the scoped context registered (reverse order) and frees it.
 * NULL-safe; call it before the host is freed. */
void cdsh_ctx_scoped_free(cdsh_plugin_ctx *scoped);

/* ---- layer-internal (host.c) ---------------------------------------------- */

typedef struct cdsh__plugins cdsh__plugins;
cdsh__plugins *cdsh__plugins_new(cdsh_host *host);
/* Unloads every fiber (reverse load order) without restarting pending ones. */
void cdsh__plugins_shutdown(cdsh__plugins *mgr);
void cdsh__plugins_free(cdsh__plugins *mgr);
cdsh__plugins *cdsh__host_plugins(cdsh_host *host);

#endif
