/* globals.h — SillyTavern's global variables (extension_settings.variables.
 * global): one JSON object shared by every story of a home, kept in
 * <dir>/global-variables.json. A turn loads a frozen copy at its start and
 * commits once at its end (live turns only); the commit runs under an
 * exclusive flock on <dir>/.global-variables.lock and merges the turn's own
 * changes into what is on disk now, so two processes never lose each
 * other's updates. Not part of any story: undoing a floor leaves globals as
 * they are (SillyTavern does not roll them back either). Thread-safe (no
 * shared state; the lock excludes threads and processes alike). */
#ifndef CDSH_TAVERN_GLOBALS_H
#define CDSH_TAVERN_GLOBALS_H

#include <jansson.h>

#include "base/err.h"

#define CDSH_TAVERN_GLOBALS_FILE "global-variables.json"
#define CDSH_TAVERN_GLOBALS_LOCK ".global-variables.lock"
#define CDSH_TAVERN_GLOBALS_MAX_BYTES (4u << 20)

/* The current globals (*vars owned; an empty object when the file does not
 * exist yet). Lock-free: the file is only ever replaced by rename. Errors:
 * GLOBALS_CORRUPT (not a JSON object), GLOBALS_IO. */
int cdsh_tavern_globals_load(const char *dir, json_t **vars, cdsh_error *err);

/* Commits a turn's changes: every top-level key whose value differs between
 * before (the frozen copy the turn started from) and after (the copy at its
 * end) is applied to the current file — a removed key is removed; a numeric
 * change (both values numbers or numeric strings, the current value too) is
 * applied as a delta, so concurrent increments add up; anything else
 * overwrites. Nothing changed: nothing is written. *merged (may be NULL)
 * gets the globals as written. dir is created (0700) when missing. Errors:
 * GLOBALS_CORRUPT, GLOBALS_IO, LOCK_TIMEOUT (15 s), GLOBALS_TOO_BIG. */
int cdsh_tavern_globals_commit(const char *dir, const json_t *before, const json_t *after,
                               json_t **merged, cdsh_error *err);

#endif
