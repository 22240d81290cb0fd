/* state.c — engines.json, runtime.json and sessions.json: locked
 * read-modify-write with atomic replacement, shape checks, the engine-lock
 * invariant. Spec validation is engine.c's job. */
#include "plugins/acp/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/hash.h"
#include "base/home.h"
#include "base/json.h"
#include "base/random.h"
#include "base/strbuf.h"
#include "plugins/acp/engine.h"

#define STATE_MAX_BYTES ((size_t)16 * 1024 * 1024)
#define LOCK_TIMEOUT_MS 10000

typedef enum { DOC_ENGINES, DOC_RUNTIME, DOC_SESSIONS } doc_kind;

static const char *doc_file(doc_kind k)
{
    return k == DOC_ENGINES ? "engines.json" : k == DOC_RUNTIME ? "runtime.json" : "sessions.json";
}

static const char *doc_member(doc_kind k)
{
    return k == DOC_ENGINES ? "engines" : k == DOC_RUNTIME ? "engines" : "sessions";
}

int cdsh_acp_state_dir_dup(const cdsh_home *home, char **out, cdsh_error *err)
{
    char *home_dir = NULL;
    int rc = cdsh_home_ensure(home, &home_dir, err);
    if (rc < 0)
        return rc;
    char *dir = cdsh_fs_path_join_dup(home_dir, "multi-acp");
    free(home_dir);
    if (!dir)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    rc = cdsh_fs_mkdir_p(dir, 0700, err);
    if (rc < 0) {
        free(dir);
        return rc;
    }
    *out = dir;
    return 0;
}

static char *now_iso(void)
{
    char b[CDSH_ISO8601_MAX];
    cdsh_clock_format_iso8601(cdsh_clock_wall_ms(), b, sizeof b);
    return strdup(b);
}

/* Reads and shape-checks a document; a missing file is the empty document.
 * engines.json may also be a bare array (older writers). */
static int doc_read(const char *path, doc_kind kind, json_t **out, cdsh_error *err)
{
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    int rc = cdsh_fs_read_file(path, STATE_MAX_BYTES, &text, &len, err);
    if (rc == CDSH_ENOTFOUND) {
        *out = kind == DOC_ENGINES ? json_pack("{s:i,s:[]}", "version", 1, "engines")
                                   : json_pack("{s:i,s:{}}", "version", 1, doc_member(kind));
        return 0;
    }
    if (rc < 0)
        return rc;
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!doc)
        return cdsh_error_set(err, CDSH_EPROTO, "STATE_CORRUPT",
                              "%s is not valid JSON (line %d: %s); fix or remove it — cdsh will "
                              "not overwrite it",
                              path, jerr.line, jerr.text);
    if (kind == DOC_ENGINES && json_is_array(doc)) {
        json_t *wrapped = json_pack("{s:i,s:o}", "version", 1, "engines", doc);
        doc = wrapped;
    }
    json_t *member = json_object_get(doc, doc_member(kind));
    json_t *version = json_object_get(doc, "version");
    bool shape = json_is_object(doc) &&
                 (kind == DOC_ENGINES ? json_is_array(member) : json_is_object(member)) &&
                 (!version || (json_is_integer(version) && json_integer_value(version) == 1));
    if (!shape) {
        json_decref(doc);
        return cdsh_error_set(err, CDSH_EPROTO, "STATE_CORRUPT",
                              "%s does not have the shape {\"version\":1, \"%s\":%s}; fix or "
                              "remove it — cdsh will not overwrite it",
                              path, doc_member(kind), kind == DOC_ENGINES ? "[...]" : "{...}");
    }
    json_object_set_new(doc, "version", json_integer(1));
    *out = doc;
    return 0;
}

typedef int (*doc_edit_fn)(json_t *doc, void *arg, cdsh_error *err);

/* Opens a document's lock (kind of lock as given) and returns its path
 * (owned) in *path. */
static int doc_lock(const cdsh_home *home, doc_kind kind, cdsh_fs_lock_kind lk, char **path,
                    cdsh_fs_lock **lock, cdsh_error *err)
{
    char *dir = NULL, *lockpath = NULL;
    *path = NULL;
    int rc = cdsh_acp_state_dir_dup(home, &dir, err);
    if (rc < 0)
        return rc;
    char *p = cdsh_fs_path_join_dup(dir, doc_file(kind));
    lockpath = p ? malloc(strlen(p) + 6) : NULL;
    if (!lockpath) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto done;
    }
    sprintf(lockpath, "%s.lock", p);
    rc = cdsh_fs_lock_open(lockpath, lk, LOCK_TIMEOUT_MS, NULL, lock, err);
    if (rc == 0) {
        *path = p;
        p = NULL;
    }
done:
    free(p);
    free(lockpath);
    free(dir);
    return rc;
}

/* Locked read-modify-write. edit returns 1 to write, 0 to leave the file. */
static int doc_update(const cdsh_home *home, doc_kind kind, doc_edit_fn edit, void *arg,
                      cdsh_error *err)
{
    char *path = NULL, *text = NULL;
    cdsh_fs_lock *lock = NULL;
    json_t *doc = NULL;
    int rc = doc_lock(home, kind, CDSH_FS_LOCK_EXCLUSIVE, &path, &lock, err);
    if (rc < 0)
        return rc;
    rc = doc_read(path, kind, &doc, err);
    if (rc < 0)
        goto done;
    rc = edit(doc, arg, err);
    if (rc <= 0)
        goto done;
    text = cdsh_json_dump_pretty_dup(doc);
    if (!text) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto done;
    }
    rc = cdsh_fs_write_atomic(path, text, strlen(text), 0600, err);
done:
    cdsh_fs_lock_close(lock);
    json_decref(doc);
    free(text);
    free(path);
    return rc < 0 ? rc : 0;
}

/* Reads a document under a shared lock. */
static int doc_load(const cdsh_home *home, doc_kind kind, json_t **out, cdsh_error *err)
{
    char *path = NULL;
    cdsh_fs_lock *lock = NULL;
    int rc = doc_lock(home, kind, CDSH_FS_LOCK_SHARED, &path, &lock, err);
    if (rc == 0)
        rc = doc_read(path, kind, out, err);
    cdsh_fs_lock_close(lock);
    free(path);
    return rc;
}

/* ---- engines -------------------------------------------------------------- */

static int cmp_rows(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t sx = json_integer_value(json_object_get(x, "sortOrder"));
    json_int_t sy = json_integer_value(json_object_get(y, "sortOrder"));
    if (sx != sy)
        return sx < sy ? -1 : 1;
    return strcmp(json_string_value(json_object_get(x, "id")),
                  json_string_value(json_object_get(y, "id")));
}

static void diag(json_t *diags, const char *source, const char *message)
{
    json_array_append_new(
        diags, json_pack("{s:s,s:s,s:s}", "level", "error", "source", source, "message", message));
}

int cdsh_acp_state_engines_load(const cdsh_home *home, json_t **engines, json_t **diagnostics,
                                cdsh_error *err)
{
    if (!engines)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "engines output required");
    json_t *diags = json_array();
    json_t *byid = json_object();
    json_t *builtins = cdsh_acp_engine_builtins_dup();
    size_t i;
    json_t *row;
    json_array_foreach(builtins, i, row) {
        json_object_set(byid, json_string_value(json_object_get(row, "id")), row);
    }
    json_decref(builtins);
    cdsh_error e = {0};
    json_t *user = NULL;
    if (doc_load(home, DOC_ENGINES, &user, &e) < 0) {
        diag(diags, "engines.json", e.message);
    } else {
        json_array_foreach(json_object_get(user, "engines"), i, row) {
            json_t *n = NULL;
            if (cdsh_acp_engine_normalize(row, "user-file", true, &n, &e) < 0) {
                char msg[CDSH_ERROR_MESSAGE_MAX + 64];
                snprintf(msg, sizeof msg, "row %zu ignored: %s", i, e.message);
                diag(diags, "engines.json", msg);
                continue;
            }
            json_object_set_new(byid, json_string_value(json_object_get(n, "id")), n);
        }
    }
    json_decref(user);
    json_t *runtime = NULL;
    if (doc_load(home, DOC_RUNTIME, &runtime, &e) < 0)
        diag(diags, "runtime.json", e.message);
    size_t n = json_object_size(byid), k = 0;
    json_t **rows = calloc(n ? n : 1, sizeof *rows);
    const char *id;
    json_object_foreach(byid, id, row) {
        json_t *rt = json_object_get(json_object_get(runtime, "engines"), id);
        if (json_is_object(json_object_get(rt, "capabilities")))
            json_object_set(row, "capabilities", json_object_get(rt, "capabilities"));
        if (json_is_object(json_object_get(rt, "health")))
            json_object_set(row, "health", json_object_get(rt, "health"));
        if (json_is_object(json_object_get(rt, "warm")))
            json_object_set(row, "warm", json_object_get(rt, "warm"));
        if (rows)
            rows[k++] = row;
    }
    json_decref(runtime);
    if (rows)
        qsort(rows, k, sizeof *rows, cmp_rows);
    json_t *out = json_array();
    for (size_t j = 0; j < k; j++)
        json_array_append(out, rows[j]);
    free(rows);
    json_decref(byid);
    *engines = out;
    if (diagnostics)
        *diagnostics = diags;
    else
        json_decref(diags);
    return 0;
}

int cdsh_acp_state_engine_find(const cdsh_home *home, const char *id, json_t **row, cdsh_error *err)
{
    json_t *all = NULL;
    int rc = cdsh_acp_state_engines_load(home, &all, NULL, err);
    if (rc < 0)
        return rc;
    size_t i;
    json_t *r;
    json_array_foreach(all, i, r) {
        if (id && strcmp(json_string_value(json_object_get(r, "id")), id) == 0) {
            *row = json_incref(r);
            json_decref(all);
            return 0;
        }
    }
    json_decref(all);
    return cdsh_error_set(err, CDSH_ENOTFOUND, "UNKNOWN_ENGINE",
                          "unknown engine \"%s\" (see `cdsh acp engines`)", id ? id : "");
}

static int edit_save_engine(json_t *doc, void *arg, cdsh_error *err)
{
    (void)err;
    json_t *row = arg;
    json_t *list = json_object_get(doc, "engines");
    const char *id = json_string_value(json_object_get(row, "id"));
    size_t i;
    json_t *r;
    json_array_foreach(list, i, r) {
        const char *rid = json_string_value(json_object_get(r, "id"));
        if (rid && strcmp(rid, id) == 0) {
            json_array_set(list, i, row);
            return 1;
        }
    }
    json_array_append(list, row);
    return 1;
}

int cdsh_acp_state_engine_save(const cdsh_home *home, const json_t *row, cdsh_error *err)
{
    json_t *n = NULL;
    int rc = cdsh_acp_engine_normalize(row, "user-file", true, &n, err);
    if (rc < 0)
        return rc;
    /* Only user fields are persisted: the probed / runtime ones live in runtime.json. */
    json_object_del(n, "capabilities");
    json_object_del(n, "health");
    json_object_del(n, "source");
    rc = doc_update(home, DOC_ENGINES, edit_save_engine, n, err);
    json_decref(n);
    return rc;
}

int cdsh_acp_state_engine_update(const cdsh_home *home, const char *id, const json_t *patch,
                                 json_t **merged, cdsh_error *err)
{
    json_t *cur = NULL, *m = NULL;
    int rc = cdsh_acp_state_engine_find(home, id, &cur, err);
    if (rc < 0)
        return rc;
    rc = cdsh_acp_engine_patch(cur, patch, &m, err);
    json_decref(cur);
    if (rc == 0) {
        /* normalize() filled in the unprobed defaults; they are not the user's. */
        json_object_del(m, "capabilities");
        json_object_del(m, "health");
        rc = cdsh_acp_state_engine_save(home, m, err);
    }
    if (rc == 0 && merged)
        *merged = json_incref(m);
    json_decref(m);
    return rc;
}

typedef struct runtime_arg {
    const char *id;
    const json_t *caps, *health, *warm;
} runtime_arg;

static int edit_runtime(json_t *doc, void *arg, cdsh_error *err)
{
    (void)err;
    runtime_arg *a = arg;
    json_t *map = json_object_get(doc, "engines");
    json_t *e = json_object_get(map, a->id);
    if (!json_is_object(e)) {
        e = json_object();
        json_object_set_new(map, a->id, e);
    }
    if (a->caps)
        json_object_set_new(e, "capabilities", json_deep_copy(a->caps));
    if (a->health)
        json_object_set_new(e, "health", json_deep_copy(a->health));
    if (a->warm)
        json_object_set_new(e, "warm", json_deep_copy(a->warm));
    return 1;
}

int cdsh_acp_state_runtime_warm(const cdsh_home *home, const char *id, const char *resolved,
                                cdsh_error *err)
{
    if (!id)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "engine id required");
    json_t *marker = cdsh_acp_engine_warm_marker_dup(resolved);
    if (!marker)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "COMMAND_NOT_FOUND", "cannot stat %s",
                              resolved ? resolved : "(null)");
    runtime_arg a = {.id = id, .warm = marker};
    int rc = doc_update(home, DOC_RUNTIME, edit_runtime, &a, err);
    json_decref(marker);
    return rc;
}

int cdsh_acp_state_runtime_record(const cdsh_home *home, const char *id, const json_t *capabilities,
                                  const json_t *health, cdsh_error *err)
{
    if (!id)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "engine id required");
    runtime_arg a = {id, capabilities, health, NULL};
    return doc_update(home, DOC_RUNTIME, edit_runtime, &a, err);
}

/* ---- sessions ---------------------------------------------------------------- */

/* ---- the lock seal ----------------------------------------------------------
 * Editing both engineId and lockedEngineId would pass the plain invariant
 * unnoticed, so a lock also carries lockSeal: SHA-256 over a per-home
 * random key (multi-acp/lock.key, 0600), the session id, lockedEngineId and
 * firstMessageAt. A hand edit of those cannot produce a matching seal
 * without reading the key. Entries locked before seals existed have none
 * and are accepted as they are. */

#define SEAL_KEY_HEX 64

/* The home's seal key; created (atomically, first writer wins) when create
 * is set. 0 with key[0] = '\0' when it does not exist and create is unset. */
static int seal_key(const cdsh_home *home, bool create, char key[SEAL_KEY_HEX + 1],
                    cdsh_error *err)
{
    key[0] = '\0';
    char *dir = NULL;
    int rc = cdsh_acp_state_dir_dup(home, &dir, err);
    if (rc < 0)
        return rc;
    char *path = cdsh_fs_path_join_dup(dir, "lock.key");
    char tmp[4200];
    for (int attempt = 0; path && attempt < 2; attempt++) {
        FILE *f = fopen(path, "r");
        if (f) {
            size_t n = fread(key, 1, SEAL_KEY_HEX, f);
            fclose(f);
            key[n == SEAL_KEY_HEX ? n : 0] = '\0';
            if (key[0])
                break;
        }
        if (!create)
            break;
        char fresh[SEAL_KEY_HEX + 1];
        if (cdsh_random_hex(fresh, sizeof fresh, SEAL_KEY_HEX / 2) < 0)
            break;
        snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
        if (cdsh_fs_write_atomic(tmp, fresh, SEAL_KEY_HEX, 0600, NULL) == 0) {
            if (link(tmp, path) == 0)
                memcpy(key, fresh, sizeof fresh);
            unlink(tmp);
        }
        if (key[0])
            break; /* else another writer won: read theirs */
    }
    if (!path)
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    else if (create && !key[0])
        rc = cdsh_error_set(err, CDSH_EIO, "IO_ERROR", "cannot create %s", path);
    free(path);
    free(dir);
    return rc;
}

static void seal_of(const char *key, const char *sid, const json_t *e,
                    char out[CDSH_SHA256_HEX_LEN + 1])
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    const char *at = json_string_value(json_object_get(e, "firstMessageAt"));
    cdsh_strbuf_appendf(&sb, "cdsh-acp-lock\n%s\n%s\n%s\n%s", key, sid,
                        json_string_value(json_object_get(e, "lockedEngineId")), at ? at : "");
    if (sb.failed || cdsh_hash_sha256_hex(sb.data, sb.len, out) < 0)
        out[0] = '\0';
    cdsh_strbuf_deinit(&sb);
}

/* Sets (or, for an unlocked entry, removes) the entry's lockSeal. */
static void seal_set(const char *key, const char *sid, json_t *e)
{
    if (!json_is_string(json_object_get(e, "lockedEngineId")) || !key || !key[0]) {
        json_object_del(e, "lockSeal");
        return;
    }
    char seal[CDSH_SHA256_HEX_LEN + 1];
    seal_of(key, sid, e, seal);
    json_object_set_new(e, "lockSeal", json_string(seal));
}

/* Checks one entry's shape and the engine-lock invariant (key: the seal
 * key, "" when the home has none). */
static int check_entry(const char *sid, const json_t *e, const char *key, cdsh_error *err)
{
    const char *engine = json_string_value(json_object_get(e, "engineId"));
    if (!json_is_object(e) || !engine)
        return cdsh_error_set(err, CDSH_EPROTO, "STATE_CORRUPT",
                              "sessions.json: entry \"%s\" has no engineId", sid);
    const char *locked = json_string_value(json_object_get(e, "lockedEngineId"));
    if (locked && strcmp(locked, engine) != 0)
        return cdsh_error_set(err, CDSH_EPERM, "ENGINE_LOCKED",
                              "sessions.json: session \"%s\" sent its first message to engine "
                              "\"%s\"; the file now names \"%s\" — the engine of a session cannot "
                              "change after its first message (restore it or remove the entry)",
                              sid, locked, engine);
    const char *seal = json_string_value(json_object_get(e, "lockSeal"));
    if (locked && seal) {
        char want[CDSH_SHA256_HEX_LEN + 1] = "";
        if (key && key[0])
            seal_of(key, sid, e, want);
        if (!want[0] || strcmp(want, seal) != 0)
            return cdsh_error_set(err, CDSH_EPERM, "ENGINE_LOCKED",
                                  "sessions.json: the engine lock of session \"%s\" was edited "
                                  "(engineId, lockedEngineId or firstMessageAt no longer match "
                                  "its lockSeal) — the engine of a session cannot change after "
                                  "its first message (restore it or remove the entry)",
                                  sid);
    }
    return 0;
}

int cdsh_acp_state_session_get(const cdsh_home *home, const char *cdsh_session_id, json_t **entry,
                               cdsh_error *err)
{
    if (!cdsh_session_id || !entry)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "session id required");
    json_t *doc = NULL;
    int rc = doc_load(home, DOC_SESSIONS, &doc, err);
    if (rc < 0)
        return rc;
    json_t *e = json_object_get(json_object_get(doc, "sessions"), cdsh_session_id);
    char key[SEAL_KEY_HEX + 1] = "";
    if (json_is_string(json_object_get(e, "lockSeal")))
        seal_key(home, false, key, NULL);
    if (!e)
        rc = cdsh_error_set(err, CDSH_ENOTFOUND, "UNBOUND_SESSION",
                            "session \"%s\" is not bound to an engine", cdsh_session_id);
    else if ((rc = check_entry(cdsh_session_id, e, key, err)) == 0)
        *entry = json_deep_copy(e);
    json_decref(doc);
    return rc;
}

int cdsh_acp_state_sessions_dup(const cdsh_home *home, json_t **sessions, cdsh_error *err)
{
    json_t *doc = NULL;
    int rc = doc_load(home, DOC_SESSIONS, &doc, err);
    if (rc < 0)
        return rc;
    *sessions = json_incref(json_object_get(doc, "sessions"));
    json_decref(doc);
    return 0;
}

typedef struct session_arg {
    const char *sid, *engine, *cwd, *acp, *parent;
    bool *locked_now; /* OP_MESSAGE: set when this message locked the engine */
    const char *key;  /* the seal key */
    enum { OP_BIND, OP_SET_ACP, OP_MESSAGE, OP_UNLOCK, OP_REMOVE, OP_FORK } op;
} session_arg;

static int edit_session(json_t *doc, void *arg, cdsh_error *err)
{
    session_arg *a = arg;
    json_t *map = json_object_get(doc, "sessions");
    json_t *e = json_object_get(map, a->sid);
    char *now = now_iso();
    int rc = 1;
    if (!now)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    if (e && (rc = check_entry(a->sid, e, a->key, err)) < 0)
        goto done;
    rc = 1;
    switch (a->op) {
    case OP_BIND:
        if (!e) {
            json_object_set_new(map, a->sid,
                                json_pack("{s:s,s:n,s:s?,s:s,s:s,s:n,s:n}", "engineId", a->engine,
                                          "acpSessionId", "cwd", a->cwd, "createdAt", now,
                                          "lastUsedAt", now, "firstMessageAt", "lockedEngineId"));
            break;
        }
        if (strcmp(json_string_value(json_object_get(e, "engineId")), a->engine) != 0) {
            if (json_is_string(json_object_get(e, "lockedEngineId"))) {
                rc = cdsh_error_set(err, CDSH_EPERM, "ENGINE_LOCKED",
                                    "session \"%s\" already sent its first message to engine "
                                    "\"%s\"; its engine cannot change",
                                    a->sid, json_string_value(json_object_get(e, "engineId")));
                goto done;
            }
            json_object_set_new(e, "engineId", json_string(a->engine));
            json_object_set_new(e, "acpSessionId", json_null());
        }
        if (a->cwd)
            json_object_set_new(e, "cwd", json_string(a->cwd));
        json_object_set_new(e, "lastUsedAt", json_string(now));
        break;
    case OP_SET_ACP:
    case OP_MESSAGE:
        if (!e) {
            rc = cdsh_error_set(err, CDSH_ENOTFOUND, "UNBOUND_SESSION",
                                "session \"%s\" is not bound to an engine", a->sid);
            goto done;
        }
        if (a->op == OP_SET_ACP)
            json_object_set_new(e, "acpSessionId", a->acp ? json_string(a->acp) : json_null());
        if (a->op == OP_MESSAGE && !json_is_string(json_object_get(e, "lockedEngineId"))) {
            json_object_set_new(e, "firstMessageAt", json_string(now));
            json_object_set(e, "lockedEngineId", json_object_get(e, "engineId"));
            seal_set(a->key, a->sid, e);
            if (a->locked_now)
                *a->locked_now = true;
        }
        json_object_set_new(e, "lastUsedAt", json_string(now));
        break;
    case OP_UNLOCK:
        if (!e) {
            rc = cdsh_error_set(err, CDSH_ENOTFOUND, "UNBOUND_SESSION",
                                "session \"%s\" is not bound to an engine", a->sid);
            goto done;
        }
        json_object_set_new(e, "firstMessageAt", json_null());
        json_object_set_new(e, "lockedEngineId", json_null());
        seal_set(a->key, a->sid, e);
        break;
    case OP_FORK: {
        json_t *p = json_object_get(map, a->parent);
        if (e) {
            rc = cdsh_error_set(err, CDSH_EEXIST, "SESSION_BOUND",
                                "session \"%s\" is already bound to engine \"%s\"", a->sid,
                                json_string_value(json_object_get(e, "engineId")));
            goto done;
        }
        if (!p) {
            rc = cdsh_error_set(err, CDSH_ENOTFOUND, "UNBOUND_SESSION",
                                "session \"%s\" is not bound to an engine", a->parent);
            goto done;
        }
        if ((rc = check_entry(a->parent, p, a->key, err)) < 0)
            goto done;
        rc = 1;
        /* Same engine and directory; locked exactly when the parent is, since
         * the child starts with the parent's messages. */
        json_object_set_new(map, a->sid,
                            json_pack("{s:O,s:s?,s:O?,s:s,s:s,s:O?,s:O?,s:s}", "engineId",
                                      json_object_get(p, "engineId"), "acpSessionId", a->acp, "cwd",
                                      json_object_get(p, "cwd"), "createdAt", now, "lastUsedAt",
                                      now, "firstMessageAt", json_object_get(p, "firstMessageAt"),
                                      "lockedEngineId", json_object_get(p, "lockedEngineId"),
                                      "forkedFrom", a->parent));
        seal_set(a->key, a->sid, json_object_get(map, a->sid));
        break;
    }
    case OP_REMOVE:
        if (!e) {
            rc = cdsh_error_set(err, CDSH_ENOTFOUND, "UNBOUND_SESSION",
                                "session \"%s\" is not bound to an engine", a->sid);
            goto done;
        }
        json_object_del(map, a->sid);
        break;
    }
done:
    free(now);
    return rc;
}

static int session_op(const cdsh_home *home, session_arg *a, cdsh_error *err)
{
    if (!a->sid || !*a->sid)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "session id required");
    /* Locks are sealed: the key is made before the first one is needed. */
    char key[SEAL_KEY_HEX + 1] = "";
    int rc = seal_key(home, a->op == OP_MESSAGE || a->op == OP_FORK, key, err);
    if (rc < 0)
        return rc;
    a->key = key;
    return doc_update(home, DOC_SESSIONS, edit_session, a, err);
}

int cdsh_acp_state_session_bind(const cdsh_home *home, const char *cdsh_session_id,
                                const char *engine_id, const char *cwd, cdsh_error *err)
{
    if (!engine_id || !*engine_id)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "engine id required");
    session_arg a = {.sid = cdsh_session_id, .engine = engine_id, .cwd = cwd, .op = OP_BIND};
    return session_op(home, &a, err);
}

int cdsh_acp_state_session_set_acp(const cdsh_home *home, const char *cdsh_session_id,
                                   const char *acp_session_id, cdsh_error *err)
{
    session_arg a = {.sid = cdsh_session_id, .acp = acp_session_id, .op = OP_SET_ACP};
    return session_op(home, &a, err);
}

int cdsh_acp_state_session_mark_message(const cdsh_home *home, const char *cdsh_session_id,
                                        bool *locked_now, cdsh_error *err)
{
    if (locked_now)
        *locked_now = false;
    session_arg a = {.sid = cdsh_session_id, .locked_now = locked_now, .op = OP_MESSAGE};
    return session_op(home, &a, err);
}

int cdsh_acp_state_session_unlock(const cdsh_home *home, const char *cdsh_session_id,
                                  cdsh_error *err)
{
    session_arg a = {.sid = cdsh_session_id, .op = OP_UNLOCK};
    return session_op(home, &a, err);
}

int cdsh_acp_state_session_fork(const cdsh_home *home, const char *parent_id, const char *child_id,
                                const char *acp_session_id, cdsh_error *err)
{
    if (!parent_id || !*parent_id)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "parent session id required");
    session_arg a = {.sid = child_id, .parent = parent_id, .acp = acp_session_id, .op = OP_FORK};
    return session_op(home, &a, err);
}

int cdsh_acp_state_session_remove(const cdsh_home *home, const char *cdsh_session_id,
                                  cdsh_error *err)
{
    session_arg a = {.sid = cdsh_session_id, .op = OP_REMOVE};
    return session_op(home, &a, err);
}

int cdsh_acp_state_engines_listing(const cdsh_home *home, json_t **engines, json_t **diagnostics,
                                   cdsh_error *err)
{
    int rc = cdsh_acp_state_engines_load(home, engines, diagnostics, err);
    if (rc < 0)
        return rc;
    size_t i;
    json_t *row;
    json_array_foreach(*engines, i, row) {
        char *resolved = NULL;
        const char *via = NULL;
        cdsh_error re = {0};
        if (cdsh_acp_engine_resolve(row, &resolved, &via, &re) == 0)
            json_object_set_new(
                row, "resolved",
                json_pack("{s:b,s:s,s:s}", "found", 1, "path", resolved, "via", via));
        else
            json_object_set_new(row, "resolved",
                                json_pack("{s:b,s:s}", "found", 0, "error", re.message));
        free(resolved);
        /* A listing is for showing: no env values, no secret arguments. */
        json_t *pub = cdsh_acp_engine_public_dup(row);
        if (pub) {
            json_object_set(row, "env", json_object_get(pub, "env"));
            json_object_set(row, "args", json_object_get(pub, "args"));
            json_decref(pub);
        }
    }
    return 0;
}
