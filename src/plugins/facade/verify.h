/* verify.h — profile verification (the verify step of the original's refactor
 * protocol: analyze → propose → build → verify → promote): compose a profile
 * in a temporary home (a host of its own; the caller's home is only read),
 * check rows, configs and collisions, optionally one model call. */
#ifndef CDSH_PLUGINS_FACADE_VERIFY_H
#define CDSH_PLUGINS_FACADE_VERIFY_H

#include <jansson.h>
#include <stdbool.h>

#include "base/err.h"
#include "host/plugins.h"

/* Verifies `profile`: a profile name in <home>/profiles, or a path to a YAML
 * file (anything containing '/' or ending in .yaml / .yml). `defs` is the
 * NULL-terminated table of plugins the host could load (front ends pass
 * cdsh_builtin_plugins). With `smoke`, once everything else passed, sends one
 * chat completion (a short user message plus the composed host's visible
 * tools) to the model endpoint the environment configures (CDSH_BASE_URL,
 * CDSH_MODEL, keys; see model_config.h) and expects a reply — one model call,
 * not a full agent turn, until the agent loop exists.
 * *report (owned) is {profile, path, ok, checks:[{check, ok, detail}],
 * problems:[...], plugins:[{name, state}], tools, capabilities, smoke?:
 * {ok, model, tools, reply}}; a problem names the plugin it concerns.
 * Returns 0 when a report was produced (ok may be false), negative only on
 * ENOMEM or when no temporary home can be made. */
int cdsh_facade_verify(const char *home, const char *profile, const cdsh_plugin_def *const *defs,
                       bool smoke, json_t **report, cdsh_error *err);

#endif
