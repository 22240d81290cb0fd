/* profile.c — profile files: YAML ⇄ JSON through libyaml's event API and the
 * profile document shape. Reading, atomic writing and locking are base/fs.h's. */
#include "host/profile.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/fs.h"
#include "host/config.h"

#define PROFILE_MAX_BYTES (1024 * 1024)

struct cdsh_profile {
    char *name;
    char *path;
    json_t *doc; /* {"plugins": {...}} */
};

bool cdsh_profile_name_valid(const char *name)
{
    if (!name || !*name || strlen(name) > 64)
        return false;
    for (const char *p = name; *p; p++) {
        bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
        if (!ok && (p == name || !strchr("_.-", *p)))
            return false;
    }
    return true;
}

/* ---- YAML → JSON ---------------------------------------------------------- */

static json_t *plain_scalar(const char *s, size_t len)
{
    if (len == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
        strcmp(s, "NULL") == 0)
        return json_null();
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
        return json_true();
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
        return json_false();
    char *end;
    errno = 0;
    long long i = strtoll(s, &end, 10);
    if (*end == '\0' && errno == 0 && (isdigit((unsigned char)s[0]) || s[0] == '-' || s[0] == '+'))
        return json_integer(i);
    if (isdigit((unsigned char)s[0]) || s[0] == '-' || s[0] == '+' || s[0] == '.') {
        errno = 0;
        double d = strtod(s, &end);
        if (*end == '\0' && errno == 0 && isfinite(d) && !strpbrk(s, "xXnN"))
            return json_real(d);
    }
    return json_stringn(s, len);
}

typedef struct yparser {
    yaml_parser_t p;
    cdsh_error *err;
    int depth;
    bool failed;
} yparser;

static json_t *fail_at(yparser *y, size_t line, const char *what)
{
    if (y->failed)
        return NULL; /* keep the first problem */
    y->failed = true;
    cdsh_error_set(y->err, CDSH_EINVAL, "BAD_YAML", "line %zu: %s", line + 1, what);
    return NULL;
}

static bool next_event(yparser *y, yaml_event_t *ev)
{
    if (yaml_parser_parse(&y->p, ev))
        return true;
    fail_at(y, y->p.problem_mark.line, y->p.problem ? y->p.problem : "invalid YAML");
    return false;
}

static json_t *parse_node(yparser *y, yaml_event_t *ev);

static json_t *parse_collection(yparser *y, bool mapping)
{
    json_t *out = mapping ? json_object() : json_array();
    if (++y->depth > 64) {
        json_decref(out);
        return fail_at(y, y->p.mark.line, "nesting is too deep");
    }
    for (;;) {
        yaml_event_t ev;
        if (!next_event(y, &ev))
            goto fail;
        if (ev.type == (mapping ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT)) {
            yaml_event_delete(&ev);
            break;
        }
        if (mapping) {
            if (ev.type != YAML_SCALAR_EVENT) {
                fail_at(y, ev.start_mark.line, "mapping keys must be plain strings");
                yaml_event_delete(&ev);
                goto fail;
            }
            char *key = strndup((const char *)ev.data.scalar.value, ev.data.scalar.length);
            size_t line = ev.start_mark.line;
            yaml_event_delete(&ev);
            if (!key)
                goto fail;
            if (json_object_get(out, key)) {
                free(key);
                fail_at(y, line, "duplicate key");
                goto fail;
            }
            yaml_event_t vev;
            if (!next_event(y, &vev)) {
                free(key);
                goto fail;
            }
            json_t *v = parse_node(y, &vev);
            if (!v) {
                free(key);
                goto fail;
            }
            json_object_set_new(out, key, v);
            free(key);
        } else {
            json_t *v = parse_node(y, &ev);
            if (!v)
                goto fail;
            json_array_append_new(out, v);
        }
    }
    y->depth--;
    return out;
fail:
    json_decref(out);
    return NULL;
}

/* Consumes ev (deletes it) and the events of its subtree. */
static json_t *parse_node(yparser *y, yaml_event_t *ev)
{
    json_t *out = NULL;
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        const char *v = (const char *)ev->data.scalar.value;
        size_t len = ev->data.scalar.length;
        if (ev->data.scalar.anchor || (ev->data.scalar.tag && !ev->data.scalar.quoted_implicit &&
                                       !ev->data.scalar.plain_implicit))
            out = fail_at(y, ev->start_mark.line, "anchors and tags are not supported");
        else if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
            out = plain_scalar(v, len);
        else
            out = json_stringn(v, len);
        if (!out)
            fail_at(y, ev->start_mark.line, "strings must be valid UTF-8");
        break;
    }
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        bool mapping = ev->type == YAML_MAPPING_START_EVENT;
        if ((mapping ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor))
            out = fail_at(y, ev->start_mark.line, "anchors are not supported");
        else
            out = parse_collection(y, mapping);
        break;
    }
    case YAML_ALIAS_EVENT:
        out = fail_at(y, ev->start_mark.line, "aliases are not supported");
        break;
    default: out = fail_at(y, ev->start_mark.line, "unexpected YAML event"); break;
    }
    yaml_event_delete(ev);
    return out;
}

json_t *cdsh_profile_yaml_parse(const char *text, size_t len, cdsh_error *err)
{
    yparser y = {.err = err};
    if (err)
        cdsh_error_clear(err);
    if (!yaml_parser_initialize(&y.p)) {
        cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&y.p, (const unsigned char *)text, len);
    json_t *doc = NULL;
    yaml_event_t ev;
    bool ok = true;
    /* Stream start, then an optional document. */
    while (ok && next_event(&y, &ev)) {
        yaml_event_type_t t = ev.type;
        if (t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (t == YAML_STREAM_START_EVENT || t == YAML_DOCUMENT_END_EVENT) {
            yaml_event_delete(&ev);
            continue;
        }
        if (t == YAML_DOCUMENT_START_EVENT) {
            yaml_event_delete(&ev);
            if (doc) {
                ok = false;
                fail_at(&y, y.p.mark.line, "only one YAML document is allowed");
            }
            continue;
        }
        doc = parse_node(&y, &ev);
        ok = doc != NULL;
    }
    if (!ok || y.failed) {
        json_decref(doc);
        doc = NULL;
        if (!y.failed)
            fail_at(&y, y.p.problem_mark.line, "invalid YAML");
    } else if (!doc) {
        doc = json_null();
    }
    yaml_parser_delete(&y.p);
    return doc;
}

/* ---- JSON → YAML ---------------------------------------------------------- */

static bool emit_scalar(yaml_emitter_t *em, const char *s, size_t len, bool force_quote)
{
    yaml_event_t ev;
    yaml_scalar_style_t style =
        force_quote ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE;
    if (len > INT32_MAX || !yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s,
                                                         (int)len, !force_quote, 1, style))
        return false;
    return yaml_emitter_emit(em, &ev);
}

static bool emit_value(yaml_emitter_t *em, const json_t *v)
{
    yaml_event_t ev;
    char buf[64];
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE) ||
            !yaml_emitter_emit(em, &ev))
            return false;
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            json_t *probe = plain_scalar(k, strlen(k));
            bool quote = !json_is_string(probe);
            json_decref(probe);
            if (!emit_scalar(em, k, strlen(k), quote) || !emit_value(em, x))
                return false;
        }
        return yaml_mapping_end_event_initialize(&ev) && yaml_emitter_emit(em, &ev);
    }
    case JSON_ARRAY: {
        if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE) ||
            !yaml_emitter_emit(em, &ev))
            return false;
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
            if (!emit_value(em, x))
                return false;
        return yaml_sequence_end_event_initialize(&ev) && yaml_emitter_emit(em, &ev);
    }
    case JSON_STRING: {
        const char *s = json_string_value(v);
        json_t *probe = plain_scalar(s, strlen(s));
        bool quote = !json_is_string(probe) || strlen(s) != json_string_length(v);
        json_decref(probe);
        return emit_scalar(em, s, json_string_length(v), quote);
    }
    case JSON_INTEGER:
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        return emit_scalar(em, buf, strlen(buf), false);
    case JSON_REAL:
        snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
        if (!strpbrk(buf, ".eE"))
            strcat(buf, ".0");
        return emit_scalar(em, buf, strlen(buf), false);
    case JSON_TRUE: return emit_scalar(em, "true", 4, false);
    case JSON_FALSE: return emit_scalar(em, "false", 5, false);
    default: return emit_scalar(em, "null", 4, false);
    }
}

static int write_cb(void *data, unsigned char *buffer, size_t size)
{
    return fwrite(buffer, 1, size, (FILE *)data) == size;
}

char *cdsh_profile_yaml_emit_dup(const json_t *value)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    yaml_emitter_t em;
    bool ok = yaml_emitter_initialize(&em);
    if (ok) {
        yaml_emitter_set_output(&em, write_cb, f);
        yaml_emitter_set_unicode(&em, 1);
        yaml_emitter_set_width(&em, -1);
        yaml_event_t ev;
        ok = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
             yaml_emitter_emit(&em, &ev) &&
             yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
             yaml_emitter_emit(&em, &ev) && emit_value(&em, value) &&
             yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&em, &ev) &&
             yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&em, &ev) &&
             yaml_emitter_flush(&em);
        yaml_emitter_delete(&em);
    }
    fclose(f);
    if (!ok) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---- the profile document ------------------------------------------------- */

static int check_shape(const json_t *doc, const char *path, cdsh_error *err)
{
    if (!json_is_object(doc))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_PROFILE",
                              "%s: a profile must be a mapping with a \"plugins\" key", path);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)doc, k, v) {
        if (strcmp(k, "plugins") != 0)
            return cdsh_error_set(err, CDSH_EINVAL, "BAD_PROFILE",
                                  "%s: unknown top-level key \"%s\" (only \"plugins\")", path, k);
    }
    json_t *plugins = json_object_get(doc, "plugins");
    if (plugins && !json_is_object(plugins))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_PROFILE", "%s: \"plugins\" must be a mapping",
                              path);
    json_object_foreach(plugins, k, v) {
        if (json_is_null(v))
            continue;
        if (!json_is_object(v))
            return cdsh_error_set(err, CDSH_EINVAL, "BAD_PROFILE",
                                  "%s: plugins.%s must be a mapping", path, k);
        const char *f;
        json_t *x;
        json_object_foreach(v, f, x) {
            if (strcmp(f, "enabled") == 0 && !json_is_boolean(x))
                return cdsh_error_set(err, CDSH_EINVAL, "BAD_PROFILE",
                                      "%s: plugins.%s.enabled must be true or false", path, k);
            if (strcmp(f, "config") == 0 && !json_is_object(x) && !json_is_null(x))
                return cdsh_error_set(err, CDSH_EINVAL, "BAD_PROFILE",
                                      "%s: plugins.%s.config must be a mapping", path, k);
            if (strcmp(f, "enabled") != 0 && strcmp(f, "config") != 0)
                return cdsh_error_set(err, CDSH_EINVAL, "BAD_PROFILE",
                                      "%s: unknown key plugins.%s.%s (enabled, config)", path, k,
                                      f);
        }
    }
    return 0;
}

/* The loader proper: path is owned by the new profile on success and on
 * failure alike. */
static int load_path(char *path, const char *name, bool missing_is_empty, cdsh_profile **out,
                     cdsh_error *err)
{
    int rc = 0;
    char *text = NULL;
    json_t *doc = NULL;
    cdsh_profile *p = calloc(1, sizeof *p);
    if (!p || !(p->name = strdup(name))) {
        free(path);
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto fail;
    }
    p->path = path;
    size_t len = 0;
    cdsh_error rerr = {0};
    int r = cdsh_fs_read_file(p->path, PROFILE_MAX_BYTES, &text, &len, &rerr);
    if (r != 0 && (r != CDSH_ENOTFOUND || !missing_is_empty)) {
        rc = cdsh_error_set(err, r, rerr.code, "%s", rerr.message);
        goto fail;
    }
    if (r == 0) {
        cdsh_error perr = {0};
        doc = cdsh_profile_yaml_parse(text, len, &perr);
        if (!doc) {
            rc = cdsh_error_set(err, CDSH_EINVAL, "BAD_PROFILE", "%s: %s", p->path, perr.message);
            goto fail;
        }
        if (json_is_null(doc)) {
            json_decref(doc);
            doc = NULL;
        }
    }
    if (!doc)
        doc = json_pack("{s:{}}", "plugins");
    if ((rc = check_shape(doc, p->path, err)) != 0)
        goto fail;
    if (!json_object_get(doc, "plugins"))
        json_object_set_new(doc, "plugins", json_object());
    p->doc = doc;
    free(text);
    *out = p;
    return 0;
fail:
    free(text);
    json_decref(doc);
    cdsh_profile_free(p);
    return rc;
}

int cdsh_profile_load(const char *home, const char *name, cdsh_profile **out, cdsh_error *err)
{
    *out = NULL;
    if (!name)
        name = CDSH_PROFILE_DEFAULT;
    if (!home || !*home)
        return cdsh_error_set(err, CDSH_EINVAL, "NO_HOME",
                              "no state directory: set CDSH_HOME or HOME");
    if (!cdsh_profile_name_valid(name))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_PROFILE_NAME",
                              "profile name \"%s\" is invalid: use letters, digits, _ . - "
                              "(at most 64)",
                              name);
    char *path = NULL;
    if (asprintf(&path, "%s/profiles/%s.yaml", home, name) < 0)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    return load_path(path, name, true, out, err);
}

int cdsh_profile_load_file(const char *path, const char *name, cdsh_profile **out,
                           cdsh_error *err)
{
    *out = NULL;
    if (!path || !*path)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "no profile file given");
    if (!name || !cdsh_profile_name_valid(name))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_PROFILE_NAME",
                              "profile name \"%s\" is invalid: use letters, digits, _ . - "
                              "(at most 64)",
                              name ? name : "");
    char *copy = strdup(path);
    if (!copy)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    return load_path(copy, name, false, out, err);
}

void cdsh_profile_free(cdsh_profile *profile)
{
    if (!profile)
        return;
    free(profile->name);
    free(profile->path);
    json_decref(profile->doc);
    free(profile);
}

const char *cdsh_profile_name(const cdsh_profile *profile)
{
    return profile->name;
}

const char *cdsh_profile_path(const cdsh_profile *profile)
{
    return profile->path;
}

const json_t *cdsh_profile_json(const cdsh_profile *profile)
{
    return profile->doc;
}

static json_t *plugin_entry(const cdsh_profile *p, const char *plugin, bool create)
{
    json_t *plugins = json_object_get(p->doc, "plugins");
    json_t *e = json_object_get(plugins, plugin);
    if (!json_is_object(e) && create) {
        e = json_object();
        json_object_set_new(plugins, plugin, e);
    }
    return json_is_object(e) ? e : NULL;
}

int cdsh_profile_enabled(const cdsh_profile *profile, const char *plugin)
{
    json_t *v = json_object_get(plugin_entry(profile, plugin, false), "enabled");
    return json_is_boolean(v) ? json_is_true(v) : -1;
}

int cdsh_profile_set_enabled(cdsh_profile *profile, const char *plugin, bool enabled)
{
    json_t *e = plugin_entry(profile, plugin, true);
    if (!e)
        return CDSH_ENOMEM;
    return json_object_set_new(e, "enabled", json_boolean(enabled)) ? CDSH_ENOMEM : 0;
}

const json_t *cdsh_profile_config(const cdsh_profile *profile, const char *plugin)
{
    json_t *c = json_object_get(plugin_entry(profile, plugin, false), "config");
    return json_is_object(c) ? c : NULL;
}

int cdsh_profile_set_config(cdsh_profile *profile, const char *plugin, const char *key,
                            json_t *value, cdsh_error *err)
{
    json_t *e = plugin_entry(profile, plugin, true);
    json_t *c = json_object_get(e, "config");
    if (e && !json_is_object(c)) {
        c = json_object();
        json_object_set_new(e, "config", c);
    }
    if (!c) {
        json_decref(value);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    return cdsh_config_path_set(c, key, value, err);
}

int cdsh_profile_save(const cdsh_profile *profile, cdsh_error *err)
{
    char *dir = strdup(profile->path);
    if (!dir)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    *strrchr(dir, '/') = '\0';
    int rc = cdsh_fs_mkdir_p(dir, 0700, err);
    free(dir);
    if (rc)
        return rc;
    char *text = cdsh_profile_yaml_emit_dup(profile->doc);
    if (!text)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot render the profile");
    rc = cdsh_fs_write_atomic(profile->path, text, strlen(text), CDSH_FS_MODE_KEEP, err);
    free(text);
    return rc;
}

int cdsh_profile_lock(const char *home, const char *name, int64_t timeout_ms, cdsh_fs_lock **out,
                      cdsh_error *err)
{
    *out = NULL;
    if (!name)
        name = CDSH_PROFILE_DEFAULT;
    if (!home || !cdsh_profile_name_valid(name))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_PROFILE_NAME",
                              "profile name \"%s\" is invalid", name);
    char *dir = NULL, *path = NULL;
    int rc = 0;
    if (asprintf(&dir, "%s/profiles", home) < 0 || asprintf(&path, "%s/.%s.lock", dir, name) < 0) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto done;
    }
    if ((rc = cdsh_fs_mkdir_p(dir, 0700, err)) == 0)
        rc = cdsh_fs_lock_open(path, CDSH_FS_LOCK_EXCLUSIVE, timeout_ms, NULL, out, err);
done:
    free(dir);
    free(path);
    return rc;
}
