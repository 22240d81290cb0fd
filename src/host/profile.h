/* profile.h — profiles, `$CDSH_HOME/profiles/<name>.yaml`: which plugins
 * are enabled and their config; loading, editing, atomic saving, the edit
 * lock, and the YAML reader/writer they use. Validation against a plugin's
 * schema happens when it loads (plugins.h) or in `cdsh config set`.
 * A profile object is not thread-safe; the edit lock spans processes. */
#ifndef CDSH_HOST_PROFILE_H
#define CDSH_HOST_PROFILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "base/fs.h"

/* The document:
 *
 *   plugins:
 *     xiangqi:
 *       enabled: true
 *       config:
 *         depth: 4
 *
 * A missing file is an empty profile (every plugin at its default). */

#define CDSH_PROFILE_DEFAULT "default"

typedef struct cdsh_profile cdsh_profile;

/* ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$ */
bool cdsh_profile_name_valid(const char *name);

/* Loads <home>/profiles/<name>.yaml (name NULL: "default"). Bad name:
 * CDSH_EINVAL code "BAD_PROFILE_NAME". Unreadable: CDSH_EIO. Not YAML or
 * not the shape above: CDSH_EINVAL code "BAD_PROFILE" with the file path and
 * line. A missing file gives an empty profile. */
int cdsh_profile_load(const char *home, const char *name, cdsh_profile **out, cdsh_error *err);

/* The same loader on a file anywhere (`cdsh profile verify ./p.yaml`), with
 * every check cdsh_profile_load makes (size cap, YAML, NUL bytes, shape);
 * the profile is called name (validated as above). Unlike a profile of the
 * home, a missing file is an error (CDSH_ENOTFOUND). Saving writes to path. */
int cdsh_profile_load_file(const char *path, const char *name, cdsh_profile **out,
                           cdsh_error *err);

/* Writes the profile back atomically (creating profiles/ as needed). */
int cdsh_profile_save(const cdsh_profile *profile, cdsh_error *err);

/* Exclusive lock for a read-modify-write of one profile (load, change, save,
 * then cdsh_fs_lock_close): <home>/profiles/.<name>.lock. Waits up to
 * timeout_ms; CDSH_ETIMEDOUT "LOCK_TIMEOUT" otherwise. */
int cdsh_profile_lock(const char *home, const char *name, int64_t timeout_ms, cdsh_fs_lock **out,
                      cdsh_error *err);

void cdsh_profile_free(cdsh_profile *profile);

const char *cdsh_profile_name(const cdsh_profile *profile);
const char *cdsh_profile_path(const cdsh_profile *profile);

/* 1 enabled, 0 disabled, -1 not said (the plugin's default applies). */
int cdsh_profile_enabled(const cdsh_profile *profile, const char *plugin);
int cdsh_profile_set_enabled(cdsh_profile *profile, const char *plugin, bool enabled);

/* The plugin's config object as written (borrowed), or NULL. */
const json_t *cdsh_profile_config(const cdsh_profile *profile, const char *plugin);

/* Sets (value taken) or removes (value NULL) a dotted key in the plugin's config. */
int cdsh_profile_set_config(cdsh_profile *profile, const char *plugin, const char *key,
                            json_t *value, cdsh_error *err);

/* The whole document as JSON (borrowed). */
const json_t *cdsh_profile_json(const cdsh_profile *profile);

/* YAML ⇄ JSON used for profiles: plain scalars resolve as YAML 1.2 core
 * (null, true/false, integers, floats), quoted scalars are strings; anchors,
 * aliases and tags are refused. Exposed for tests and other YAML readers.
 * Parse: owned value or NULL with code "BAD_YAML" and "line N" in the
 * message. Emit: owned text; strings that would read back as another type
 * are double-quoted. */
json_t *cdsh_profile_yaml_parse(const char *text, size_t len, cdsh_error *err);
/* keep-public: the writer pair of the reader; test_profile and fuzz_profile_yaml round-trip with
 * it. */
char *cdsh_profile_yaml_emit_dup(const json_t *value);

#endif
