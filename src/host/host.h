/* host.h — the aggregate a process creates: event bus, tool registry,
 * commands, skills, RPC channels, plugin manager and services. Any number of
 * hosts may live in one process. Front ends pass the compiled-in table
 * (plugins/builtin.h) to cdsh_host_load_plugins. Getters are thread-safe;
 * new/free and the load functions are lifecycle calls (serialise them). */
#ifndef CDSH_HOST_HOST_H
#define CDSH_HOST_HOST_H

#include "base/err.h"
#include "base/home.h"
#include "host/commands.h"
#include "host/events.h"
#include "host/plugins.h"
#include "host/profile.h"
#include "host/prompt.h"
#include "host/rpc.h"
#include "host/skills.h"
#include "host/tools.h"

/* A host whose home is the environment's (cdsh_home_from_env, resolved
 * once, now). NULL on ENOMEM.
 * keep-public: the host on the environment's home, for tests and embedders. */
cdsh_host *cdsh_host_new(void);
/* A host with its own home (taken: freed with the host, also when this
 * fails). NULL on ENOMEM or a NULL home. */
cdsh_host *cdsh_host_new_at(cdsh_home *home);

/* Unloads every plugin (reverse load order, dependents first), then frees the
 * registries and the bus. NULL-safe. */
void cdsh_host_free(cdsh_host *host);

/* Where plugins and services keep state (borrowed, lives as long as the host). */
const cdsh_home *cdsh_host_home(const cdsh_host *host);
cdsh_events *cdsh_host_events(cdsh_host *host);
cdsh_tools *cdsh_host_tools(cdsh_host *host);
cdsh_commands *cdsh_host_commands(cdsh_host *host);
cdsh_skills *cdsh_host_skills(cdsh_host *host);
cdsh_rpc *cdsh_host_rpc(cdsh_host *host);
/* System-prompt segments plugins contribute (host/prompt.h). */
cdsh_prompt *cdsh_host_prompt(cdsh_host *host);

/* True if `def` is enabled in `profile` (NULL profile: its default). */
bool cdsh_host_plugin_enabled(const cdsh_plugin_def *def, const cdsh_profile *profile);

/* Loads every enabled descriptor of the NULL-terminated `defs` with its
 * profile config (profile may be NULL: defaults only), in table order except
 * that a descriptor loads after the ones its `after` names (plugins.h). A plugin that fails is
 * reported and skipped; the others still load. Returns 0 when all enabled
 * plugins loaded (or are pending); otherwise the first failure's code, with
 * err naming that plugin. */
int cdsh_host_load_plugins(cdsh_host *host, const cdsh_plugin_def *const *defs,
                           const cdsh_profile *profile, cdsh_error *err);

#endif
