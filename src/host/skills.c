/* skills.c — the runtime skill registry: layered entries (first wins), the
 * model-facing index and body rendering. Reading skills from disk (bundled
 * providers) is not done here. */
#include "host/skills.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "host/ptrs.h"

typedef struct entry {
    cdsh_skills *owner;
    cdsh_scope *scope;
    char *name, *description, *content, *when, *source;
    bool user_only, model_only;
} entry;

struct cdsh_skills {
    pthread_mutex_t lock;
    cdsh_events *bus;
    cdsh__ptrs entries; /* of entry*, registration order */
};

static void entry_free(entry *e)
{
    if (!e)
        return;
    cdsh_scope_unref(e->scope);
    free(e->name);
    free(e->description);
    free(e->content);
    free(e->when);
    free(e->source);
    free(e);
}

cdsh_skills *cdsh_skills_new(cdsh_events *bus)
{
    cdsh_skills *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->lock, NULL);
    s->bus = bus;
    return s;
}

void cdsh_skills_free(cdsh_skills *skills)
{
    if (!skills)
        return;
    for (size_t i = 0; i < skills->entries.n; i++)
        entry_free(skills->entries.items[i]);
    cdsh__ptrs_deinit(&skills->entries);
    pthread_mutex_destroy(&skills->lock);
    free(skills);
}

bool cdsh_skills_name_valid(const char *name)
{
    if (!name || !*name)
        return false;
    bool prev_dash = true; /* no leading dash */
    for (const char *p = name; *p; p++) {
        if (*p == '-') {
            if (prev_dash)
                return false;
            prev_dash = true;
        } else if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')) {
            prev_dash = false;
        } else {
            return false;
        }
    }
    return !prev_dash;
}

static entry *in_layer(cdsh_skills *s, const cdsh_scope *scope, const char *name)
{
    for (size_t i = 0; i < s->entries.n; i++) {
        entry *e = s->entries.items[i];
        if (e->scope == scope && strcmp(e->name, name) == 0)
            return e;
    }
    return NULL;
}

static entry *resolve(cdsh_skills *s, const cdsh_scope *scope, const char *name)
{
    for (const cdsh_scope *l = scope;; l = cdsh_scope_parent(l)) {
        entry *e = in_layer(s, l, name);
        if (e || !l)
            return e;
    }
}

static void dispose_entry(void *arg)
{
    entry *e = arg;
    cdsh_skills *s = e->owner;
    pthread_mutex_lock(&s->lock);
    cdsh__ptrs_remove(&s->entries, e);
    pthread_mutex_unlock(&s->lock);
    entry_free(e);
    cdsh_events_emit(s->bus, "skills/change", NULL, false, NULL);
}

static char *dup_opt(const char *s, bool *fail)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *fail = true;
    return d;
}

int cdsh_skills_register(cdsh_skills *skills, cdsh_scope *scope, const cdsh_skill_def *def,
                         cdsh_disposer_t *out, cdsh_error *err)
{
    if (!skills || !def || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_SKILL", "skills: missing argument");
    *out = (cdsh_disposer_t){0};
    if (!cdsh_skills_name_valid(def->name))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_SKILL",
                              "skill name \"%s\" must be kebab-case (^[a-z0-9]+(?:-[a-z0-9]+)*$)",
                              def->name ? def->name : "");
    if (!def->description || !*def->description)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_SKILL",
                              "skill \"%s\" needs a non-empty description", def->name);
    if (!def->content)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_SKILL", "skill \"%s\" needs content",
                              def->name);

    bool fail = false;
    entry *e = calloc(1, sizeof *e);
    if (!e)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    e->owner = skills;
    e->name = dup_opt(def->name, &fail);
    e->description = dup_opt(def->description, &fail);
    e->content = dup_opt(def->content, &fail);
    e->when = dup_opt(def->when_to_use, &fail);
    e->source = dup_opt(def->source ? def->source : "runtime", &fail);
    e->user_only = def->user_only;
    e->model_only = def->model_only;
    if (fail) {
        entry_free(e);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }

    pthread_mutex_lock(&skills->lock);
    if (in_layer(skills, scope, def->name)) {
        pthread_mutex_unlock(&skills->lock);
        entry_free(e);
        char msg[300];
        snprintf(msg, sizeof msg,
                 "skill \"%s\" is already registered; keeping the first registration", def->name);
        cdsh_log_warn("skills", "%s", msg);
        json_t *w = json_pack("{s:s, s:s}", "source", "skills", "message", msg);
        cdsh_events_emit(skills->bus, "log/warning", scope, false, w);
        json_decref(w);
        return 0;
    }
    if (cdsh__ptrs_push(&skills->entries, e) != 0) {
        pthread_mutex_unlock(&skills->lock);
        entry_free(e);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    e->scope = cdsh_scope_ref(scope);
    pthread_mutex_unlock(&skills->lock);
    *out = (cdsh_disposer_t){dispose_entry, e};
    cdsh_events_emit(skills->bus, "skills/change", NULL, false, NULL);
    return 0;
}

static json_t *summary(const entry *e, bool full)
{
    json_t *o = json_pack("{s:s, s:s}", "name", e->name, "description", e->description);
    if (!o)
        return NULL;
    if (full)
        json_object_set_new(o, "content", json_string(e->content));
    if (e->when)
        json_object_set_new(o, "whenToUse", json_string(e->when));
    json_object_set_new(o, "source", json_string(e->source));
    json_object_set_new(o, "invocation", json_pack("{s:b, s:b}", "modelInvocable", !e->user_only,
                                                   "userInvocable", !e->model_only));
    if (e->user_only)
        json_object_set_new(o, "userOnly", json_true());
    if (e->model_only)
        json_object_set_new(o, "modelOnly", json_true());
    return o;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(entry *const *)a)->name, (*(entry *const *)b)->name);
}

/* Visible entries sorted by name; caller holds the lock and frees the array. */
static entry **visible(cdsh_skills *s, const cdsh_scope *scope, size_t *n)
{
    entry **v = malloc((s->entries.n + 1) * sizeof *v);
    *n = 0;
    if (!v)
        return NULL;
    for (size_t i = 0; i < s->entries.n; i++) {
        entry *e = s->entries.items[i];
        if (cdsh_scope_contains(e->scope, scope) && resolve(s, scope, e->name) == e)
            v[(*n)++] = e;
    }
    qsort(v, *n, sizeof *v, by_name);
    return v;
}

json_t *cdsh_skills_list(cdsh_skills *skills, const cdsh_scope *scope)
{
    json_t *arr = json_array();
    if (!skills || !arr)
        return arr;
    size_t n;
    pthread_mutex_lock(&skills->lock);
    entry **v = visible(skills, scope, &n);
    for (size_t i = 0; v && i < n; i++)
        json_array_append_new(arr, summary(v[i], false));
    pthread_mutex_unlock(&skills->lock);
    free(v);
    return arr;
}

json_t *cdsh_skills_info_dup(cdsh_skills *skills, const cdsh_scope *scope, const char *name)
{
    if (!skills || !cdsh_skills_name_valid(name))
        return NULL;
    pthread_mutex_lock(&skills->lock);
    entry *e = resolve(skills, scope, name);
    json_t *o = e ? summary(e, true) : NULL;
    pthread_mutex_unlock(&skills->lock);
    return o;
}

char *cdsh_skills_index_dup(cdsh_skills *skills, const cdsh_scope *scope)
{
    if (!skills)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    size_t n;
    pthread_mutex_lock(&skills->lock);
    entry **v = visible(skills, scope, &n);
    size_t offered = 0;
    for (size_t i = 0; v && i < n; i++)
        offered += !v[i]->user_only;
    if (v && offered > 0) {
        fputs("<available_skills>\n", f);
        for (size_t i = 0; i < n; i++) {
            if (v[i]->user_only)
                continue;
            fprintf(f, "- %s: %s", v[i]->name, v[i]->description);
            if (v[i]->when)
                fprintf(f, " (when to use: %s)", v[i]->when);
            fputc('\n', f);
        }
        fputs("</available_skills>\n"
              "To use a skill, call the `skill` tool with its name to load its instructions.\n",
              f);
    }
    pthread_mutex_unlock(&skills->lock);
    free(v);
    fclose(f);
    if (len == 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

char *cdsh_skills_render_dup(cdsh_skills *skills, const cdsh_scope *scope, const char *name)
{
    if (!skills || !cdsh_skills_name_valid(name))
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    pthread_mutex_lock(&skills->lock);
    entry *e = resolve(skills, scope, name);
    FILE *f = e ? open_memstream(&buf, &len) : NULL;
    if (f) {
        fprintf(f, "<skill_content name=\"%s\">\n%s\n</skill_content>", e->name, e->content);
        fclose(f);
    }
    pthread_mutex_unlock(&skills->lock);
    return buf;
}

size_t cdsh_skills_count(cdsh_skills *skills)
{
    pthread_mutex_lock(&skills->lock);
    size_t n = skills->entries.n;
    pthread_mutex_unlock(&skills->lock);
    return n;
}
