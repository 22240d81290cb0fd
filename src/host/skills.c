/* skills.c — the skill registry: runtime entries in scope layers (first wins
 * in a layer), providers merged by rank / provider order / local order, a
 * FIFO-bounded cache of completed provider catalogs keyed by cwd, the
 * model-facing index and body, and a skill's resource directory. */
#include "host/skills.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/log.h"
#include "base/utf8.h"
#include "host/ptrs.h"

#define MAX_ATTEMPTS 2
#define RESOURCE_DEPTH 4
#define RENDER_RESOURCES 200

typedef struct entry {
    cdsh_skills *owner;
    cdsh_scope *scope;
    json_t *def; /* the full definition, as get returns it */
} entry;

typedef struct prov {
    cdsh_skills *owner;
    char *name;
    cdsh_skill_provider p;
    long order;
    int refs;
} prov;

/* One candidate in merge order. cand is owned; for runtime skills it is the
 * full definition (the locator, as in DSH). */
typedef struct icand {
    json_t *cand;
    double rank;
    long porder; /* -1: runtime */
    size_t lorder;
} icand;

typedef struct cands {
    icand *v;
    size_t n, cap;
} cands;

typedef struct cache_ent {
    char *key;
    cands c;
} cache_ent;

struct cdsh_skills {
    pthread_mutex_t lock;
    cdsh_events *bus;
    cdsh__ptrs entries;   /* of entry*, registration order */
    cdsh__ptrs providers; /* of prov*, registration order */
    cdsh__ptrs cache;     /* of cache_ent*, oldest first */
    size_t cache_max;
    long next_order;
    unsigned long revision; /* bumped on any provider change or invalidation */
};

/* ---- small helpers -------------------------------------------------------- */

static void cands_clear(cands *c)
{
    for (size_t i = 0; i < c->n; i++)
        json_decref(c->v[i].cand);
    free(c->v);
    *c = (cands){0};
}

static int cands_push(cands *c, json_t *cand, double rank, long porder, size_t lorder)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        icand *v = realloc(c->v, cap * sizeof *v);
        if (!v) {
            json_decref(cand);
            return CDSH_ENOMEM;
        }
        c->v = v, c->cap = cap;
    }
    c->v[c->n++] = (icand){cand, rank, porder, lorder};
    return 0;
}

static int cands_copy(cands *dst, const cands *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (cands_push(dst, json_incref(src->v[i].cand), src->v[i].rank, src->v[i].porder,
                       src->v[i].lorder) != 0)
            return CDSH_ENOMEM;
    return 0;
}

static void cache_ent_free(cache_ent *ce)
{
    if (!ce)
        return;
    free(ce->key);
    cands_clear(&ce->c);
    free(ce);
}

/* Caller holds the lock. */
static void cache_clear(cdsh_skills *s)
{
    for (size_t i = 0; i < s->cache.n; i++)
        cache_ent_free(s->cache.items[i]);
    s->cache.n = 0;
}

static void cache_trim(cdsh_skills *s)
{
    while (s->cache.n > s->cache_max) {
        cache_ent *oldest = s->cache.items[0];
        cdsh__ptrs_remove(&s->cache, oldest);
        cache_ent_free(oldest);
    }
}

static void warn(cdsh_skills *s, const cdsh_scope *scope, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void warn(cdsh_skills *s, const cdsh_scope *scope, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cdsh_log_warn("skills", "%s", msg);
    json_t *w = json_pack("{s:s, s:s}", "source", "skills", "message", msg);
    cdsh_events_emit(s->bus, "log/warning", scope, false, w);
    json_decref(w);
}

static void changed(cdsh_skills *s)
{
    cdsh_events_emit(s->bus, "skills/change", NULL, false, NULL);
}

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void prov_unref(prov *p)
{
    cdsh_skills *s = p->owner;
    pthread_mutex_lock(&s->lock);
    bool last = --p->refs == 0;
    pthread_mutex_unlock(&s->lock);
    if (!last)
        return;
    if (p->p.free_ud)
        p->p.free_ud(p->p.ud);
    free(p->name);
    free(p);
}

/* ---- lifecycle ------------------------------------------------------------ */

cdsh_skills *cdsh_skills_new(cdsh_events *bus)
{
    cdsh_skills *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->lock, NULL);
    s->bus = bus;
    s->cache_max = CDSH_SKILLS_CACHE_DEFAULT;
    return s;
}

static void entry_free(entry *e)
{
    if (!e)
        return;
    cdsh_scope_unref(e->scope);
    json_decref(e->def);
    free(e);
}

void cdsh_skills_free(cdsh_skills *skills)
{
    if (!skills)
        return;
    for (size_t i = 0; i < skills->entries.n; i++)
        entry_free(skills->entries.items[i]);
    cdsh__ptrs_deinit(&skills->entries);
    for (size_t i = 0; i < skills->providers.n; i++) {
        prov *p = skills->providers.items[i];
        if (p->p.free_ud)
            p->p.free_ud(p->p.ud);
        free(p->name);
        free(p);
    }
    cdsh__ptrs_deinit(&skills->providers);
    cache_clear(skills);
    cdsh__ptrs_deinit(&skills->cache);
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

/* ---- validation ------------------------------------------------------------ */

/* NULL when base is a valid SkillResourceBase, else what is wrong. */
static const char *resource_base_problem(const json_t *base)
{
    if (!json_is_object(base))
        return "must be an object";
    const char *kind = str(base, "kind");
    const char *field = !kind                              ? NULL
                        : strcmp(kind, "directory") == 0 ? "path"
                        : strcmp(kind, "url") == 0       ? "url"
                        : strcmp(kind, "opaque") == 0    ? "description"
                                                         : NULL;
    if (!field)
        return "kind must be \"directory\", \"url\" or \"opaque\"";
    if (json_object_size(base) != 2 || !json_is_string(json_object_get(base, field)))
        return strcmp(field, "path") == 0  ? "a directory base is {kind, path: string}"
               : strcmp(field, "url") == 0 ? "a url base is {kind, url: string}"
                                           : "an opaque base is {kind, description: string}";
    return NULL;
}

/* NULL when invocation is absent or {modelInvocable: bool, userInvocable: bool}. */
static const char *invocation_problem(const json_t *inv)
{
    if (!inv)
        return NULL;
    if (!json_is_object(inv))
        return "with a non-object invocation policy";
    if (!json_is_boolean(json_object_get(inv, "modelInvocable")))
        return "with a non-boolean invocation.modelInvocable";
    if (!json_is_boolean(json_object_get(inv, "userInvocable")))
        return "with a non-boolean invocation.userInvocable";
    return NULL;
}

/* DSH's validateCandidate, as one message (NULL: valid). buf holds it. */
static const char *candidate_problem(const json_t *c, const char *pname, char *buf, size_t n)
{
    const char *name = str(c, "name");
    const json_t *v;
    if (!json_is_object(c) || !name)
        snprintf(buf, n, "skill provider \"%s\" returned a non-string skill name", pname);
    else if (!cdsh_skills_name_valid(name))
        snprintf(buf, n, "skill provider \"%s\" returned invalid skill name \"%s\"", pname, name);
    else if (!json_is_string(json_object_get(c, "description")))
        snprintf(buf, n, "skill provider \"%s\" returned skill \"%s\" with a non-string description",
                 pname, name);
    else if (!*str(c, "description"))
        snprintf(buf, n, "skill provider \"%s\" returned skill \"%s\" without a description", pname,
                 name);
    else if (invocation_problem(json_object_get(c, "invocation")))
        snprintf(buf, n, "skill provider \"%s\" returned skill \"%s\" %s", pname, name,
                 invocation_problem(json_object_get(c, "invocation")));
    else if ((v = json_object_get(c, "whenToUse")) && !json_is_string(v))
        snprintf(buf, n, "skill provider \"%s\" returned skill \"%s\" with a non-string whenToUse",
                 pname, name);
    else if (!json_is_string(json_object_get(c, "source")))
        snprintf(buf, n, "skill provider \"%s\" returned skill \"%s\" with a non-string source",
                 pname, name);
    else if (!json_is_number(json_object_get(c, "rank")) ||
             !isfinite(json_number_value(json_object_get(c, "rank"))))
        snprintf(buf, n, "skill provider \"%s\" returned skill \"%s\" with an invalid rank", pname,
                 name);
    else if ((v = json_object_get(c, "provider")) && !json_is_string(v))
        snprintf(buf, n, "skill provider \"%s\" returned skill \"%s\" with a non-string provider",
                 pname, name);
    else if (v && strcmp(json_string_value(v), pname) != 0)
        snprintf(buf, n, "skill provider \"%s\" returned skill \"%s\" for provider \"%s\"", pname,
                 name, json_string_value(v));
    else if ((v = json_object_get(c, "path")) && !json_is_string(v))
        snprintf(buf, n, "skill provider \"%s\" returned skill \"%s\" with a non-string path", pname,
                 name);
    else if ((v = json_object_get(c, "resourceBase")) && resource_base_problem(v))
        snprintf(buf, n, "skill provider \"%s\" returned skill \"%s\" with a resourceBase that %s",
                 pname, name, resource_base_problem(v));
    else
        return NULL;
    return buf;
}

/* DSH's validateDefinition (NULL: valid). */
static const char *definition_problem(const json_t *d, char *buf, size_t n)
{
    const char *name = str(d, "name");
    const json_t *v;
    if (!json_is_object(d) || !name)
        snprintf(buf, n, "loaded skill name must be a string");
    else if (!cdsh_skills_name_valid(name))
        snprintf(buf, n, "loaded skill has invalid name \"%s\"", name);
    else if (!json_is_string(json_object_get(d, "description")))
        snprintf(buf, n, "loaded skill \"%s\" description must be a string", name);
    else if (!*str(d, "description"))
        snprintf(buf, n, "loaded skill \"%s\" requires a description", name);
    else if (invocation_problem(json_object_get(d, "invocation")))
        snprintf(buf, n, "loaded skill \"%s\" %s", name,
                 invocation_problem(json_object_get(d, "invocation")));
    else if ((v = json_object_get(d, "whenToUse")) && !json_is_string(v))
        snprintf(buf, n, "loaded skill \"%s\" whenToUse must be a string", name);
    else if ((v = json_object_get(d, "source")) && !json_is_string(v))
        snprintf(buf, n, "loaded skill \"%s\" source must be a string", name);
    else if ((v = json_object_get(d, "provider")) && !json_is_string(v))
        snprintf(buf, n, "loaded skill \"%s\" provider must be a string", name);
    else if (!json_is_string(json_object_get(d, "content")))
        snprintf(buf, n, "loaded skill \"%s\" content must be a string", name);
    else if ((v = json_object_get(d, "path")) && !json_is_string(v))
        snprintf(buf, n, "loaded skill \"%s\" path must be a string", name);
    else if ((v = json_object_get(d, "resourceBase")) && resource_base_problem(v))
        snprintf(buf, n, "loaded skill \"%s\" resourceBase %s", name, resource_base_problem(v));
    else if ((v = json_object_get(d, "metadata")) && !json_is_object(v))
        snprintf(buf, n, "loaded skill \"%s\" metadata must be an object", name);
    else
        return NULL;
    return buf;
}

/* ---- runtime registrations -------------------------------------------------- */

static entry *in_layer(cdsh_skills *s, const cdsh_scope *scope, const char *name)
{
    for (size_t i = 0; i < s->entries.n; i++) {
        entry *e = s->entries.items[i];
        if (e->scope == scope && strcmp(str(e->def, "name"), name) == 0)
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
    changed(s);
}

/* The definition JSON of a registration (owned), or NULL on ENOMEM. */
static json_t *def_json(const cdsh_skill_def *def)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:{s:b, s:b}, s:s, s:s}", "name", def->name,
                          "description", def->description, "content", def->content, "invocation",
                          "modelInvocable", !def->user_only, "userInvocable", !def->model_only,
                          "source", def->source ? def->source : CDSH_SKILLS_RUNTIME_PROVIDER,
                          "provider", def->provider ? def->provider : CDSH_SKILLS_RUNTIME_PROVIDER);
    if (!o)
        return NULL;
    int rc = 0;
    if (def->when_to_use)
        rc |= json_object_set_new(o, "whenToUse", json_string(def->when_to_use));
    if (def->resource_base)
        rc |= json_object_set_new(o, "resourceBase", json_deep_copy(def->resource_base));
    if (def->path)
        rc |= json_object_set_new(o, "path", json_string(def->path));
    if (def->metadata)
        rc |= json_object_set_new(o, "metadata", json_deep_copy(def->metadata));
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
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
    const char *why = def->resource_base ? resource_base_problem(def->resource_base) : NULL;
    if (why)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_SKILL",
                              "skill \"%s\" has an invalid resourceBase: %s", def->name, why);
    if (def->metadata && !json_is_object(def->metadata))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_SKILL",
                              "skill \"%s\" metadata must be an object", def->name);

    entry *e = calloc(1, sizeof *e);
    if (e)
        e->def = def_json(def);
    if (!e || !e->def) {
        entry_free(e);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    e->owner = skills;

    pthread_mutex_lock(&skills->lock);
    if (in_layer(skills, scope, def->name)) {
        pthread_mutex_unlock(&skills->lock);
        entry_free(e);
        warn(skills, scope, "skill \"%s\" is already registered; keeping the first registration",
             def->name);
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
    changed(skills);
    return 0;
}

size_t cdsh_skills_count(cdsh_skills *skills)
{
    pthread_mutex_lock(&skills->lock);
    size_t n = skills->entries.n;
    pthread_mutex_unlock(&skills->lock);
    return n;
}

/* ---- providers --------------------------------------------------------------- */

static prov *prov_named(cdsh_skills *s, const char *name)
{
    for (size_t i = 0; i < s->providers.n; i++) {
        prov *p = s->providers.items[i];
        if (strcmp(p->name, name) == 0)
            return p;
    }
    return NULL;
}

static prov *prov_ordered(cdsh_skills *s, long order)
{
    for (size_t i = 0; i < s->providers.n; i++) {
        prov *p = s->providers.items[i];
        if (p->order == order)
            return p;
    }
    return NULL;
}

static void dispose_provider(void *arg)
{
    prov *p = arg;
    cdsh_skills *s = p->owner;
    pthread_mutex_lock(&s->lock);
    bool had = cdsh__ptrs_remove(&s->providers, p);
    s->revision++;
    cache_clear(s);
    pthread_mutex_unlock(&s->lock);
    if (had)
        changed(s);
    prov_unref(p); /* the registration's reference */
}

int cdsh_skills_register_provider(cdsh_skills *skills, const cdsh_skill_provider *provider,
                                  cdsh_disposer_t *out, cdsh_error *err)
{
    if (out)
        *out = (cdsh_disposer_t){0};
    int rc = 0;
    if (!skills || !provider || !out)
        rc = cdsh_error_set(err, CDSH_EINVAL, "INVALID_SKILL_PROVIDER",
                            "skills: missing argument");
    else if (!provider->name || !*provider->name || !provider->list || !provider->get)
        rc = cdsh_error_set(err, CDSH_EINVAL, "INVALID_SKILL_PROVIDER",
                            "a skill provider needs a name, list and get");
    else if (strcmp(provider->name, CDSH_SKILLS_RUNTIME_PROVIDER) == 0)
        rc = cdsh_error_set(err, CDSH_EINVAL, "INVALID_SKILL_PROVIDER",
                            "\"%s\" is reserved for runtime skill registrations",
                            CDSH_SKILLS_RUNTIME_PROVIDER);
    prov *p = rc ? NULL : calloc(1, sizeof *p);
    if (!rc && (!p || !(p->name = strdup(provider->name)))) {
        free(p);
        p = NULL;
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    if (rc) {
        if (provider && provider->free_ud)
            provider->free_ud(provider->ud);
        return rc;
    }
    p->owner = skills;
    p->p = *provider;
    p->p.name = p->name;
    p->refs = 1;
    pthread_mutex_lock(&skills->lock);
    if (prov_named(skills, p->name)) {
        pthread_mutex_unlock(&skills->lock);
        rc = cdsh_error_set(err, CDSH_EINVAL, "INVALID_SKILL_PROVIDER",
                            "a skill provider named \"%s\" is already registered", p->name);
    } else if (cdsh__ptrs_push(&skills->providers, p) != 0) {
        pthread_mutex_unlock(&skills->lock);
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    if (rc) {
        if (p->p.free_ud)
            p->p.free_ud(p->p.ud);
        free(p->name);
        free(p);
        return rc;
    }
    p->order = skills->next_order++;
    skills->revision++;
    cache_clear(skills);
    pthread_mutex_unlock(&skills->lock);
    *out = (cdsh_disposer_t){dispose_provider, p};
    changed(skills);
    return 0;
}

void cdsh_skills_invalidate(cdsh_skills *skills, const char *provider_name)
{
    if (!skills || !provider_name)
        return;
    pthread_mutex_lock(&skills->lock);
    bool known = prov_named(skills, provider_name) != NULL;
    if (known) {
        skills->revision++;
        cache_clear(skills);
    }
    pthread_mutex_unlock(&skills->lock);
    if (known)
        changed(skills);
}

int cdsh_skills_set_cache_max(cdsh_skills *skills, long long n, cdsh_error *err)
{
    if (!skills || n < 1)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_CONFIG",
                              "skill: collectCacheMaxEntries must be an integer greater than or "
                              "equal to 1");
    pthread_mutex_lock(&skills->lock);
    skills->cache_max = (size_t)n;
    cache_trim(skills);
    pthread_mutex_unlock(&skills->lock);
    return 0;
}

size_t cdsh_skills_cache_max(cdsh_skills *skills)
{
    pthread_mutex_lock(&skills->lock);
    size_t n = skills->cache_max;
    pthread_mutex_unlock(&skills->lock);
    return n;
}

size_t cdsh_skills_cache_size(cdsh_skills *skills)
{
    pthread_mutex_lock(&skills->lock);
    size_t n = skills->cache.n;
    pthread_mutex_unlock(&skills->lock);
    return n;
}

/* ---- collection ---------------------------------------------------------------- */

static bool cancelled(const cdsh_skill_lookup *opts, cdsh_error *err)
{
    if (opts && opts->cancel && cdsh_cancel_is_fired(opts->cancel)) {
        cdsh_error_set(err, CDSH_ECANCELED, "CANCELLED", "skill lookup cancelled");
        return true;
    }
    return false;
}

/* One provider's list() into c; false when the observation is not
 * authoritative (failure, incomplete, a malformed candidate). */
static bool list_one(cdsh_skills *s, prov *p, const cdsh_skill_lookup *opts, cands *c)
{
    json_t *arr = NULL;
    bool complete = true;
    cdsh_error e = {0};
    cdsh_skill_lookup none = {0};
    int rc = p->p.list(p->p.ud, opts ? opts : &none, &arr, &complete, &e);
    if (rc < 0 || !json_is_array(arr)) {
        warn(s, NULL, "skill provider \"%s\" skipped: %s", p->name,
             rc < 0 ? (e.message[0] ? e.message : cdsh_strerror(rc))
                    : "list() must return an array of candidates");
        json_decref(arr);
        return false;
    }
    char buf[400];
    size_t i;
    json_t *cand;
    json_array_foreach(arr, i, cand) {
        if (candidate_problem(cand, p->name, buf, sizeof buf)) {
            warn(s, NULL, "skill provider \"%s\" skipped: %s", p->name, buf);
            json_decref(arr);
            return false;
        }
    }
    json_array_foreach(arr, i, cand) {
        json_t *copy = json_deep_copy(cand);
        if (copy && !json_object_get(copy, "provider"))
            json_object_set_new(copy, "provider", json_string(p->name));
        if (!copy || cands_push(c, copy, json_number_value(json_object_get(cand, "rank")),
                                p->order, i) != 0) {
            json_decref(arr);
            return false;
        }
    }
    json_decref(arr);
    return complete;
}

/* The providers' candidates for opts (cached when complete). *fresh: they
 * were collected now (not a cache hit). */
static int collect_providers(cdsh_skills *s, const cdsh_skill_lookup *opts, cands *out,
                             bool *complete, bool *fresh, cdsh_error *err)
{
    const char *cwd = opts ? opts->cwd : NULL;
    char *key = NULL;
    if (asprintf(&key, "%c%s", cwd ? 'c' : '-', cwd ? cwd : "") < 0)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    int rc = 0;
    *complete = true;
    *fresh = false;
    for (int attempt = 1;; attempt++) {
        if (cancelled(opts, err)) {
            rc = CDSH_ECANCELED;
            break;
        }
        pthread_mutex_lock(&s->lock);
        unsigned long rev = s->revision;
        for (size_t i = 0; i < s->cache.n; i++) {
            cache_ent *ce = s->cache.items[i];
            if (strcmp(ce->key, key) == 0) {
                rc = cands_copy(out, &ce->c);
                pthread_mutex_unlock(&s->lock);
                free(key);
                return rc ? cdsh_error_set(err, rc, "NO_MEMORY", "out of memory") : 0;
            }
        }
        size_t np = s->providers.n;
        prov **ps = malloc((np + 1) * sizeof *ps);
        for (size_t i = 0; ps && i < np; i++) {
            ps[i] = s->providers.items[i];
            ps[i]->refs++;
        }
        pthread_mutex_unlock(&s->lock);
        if (!ps) {
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
            break;
        }
        bool ok = true;
        for (size_t i = 0; i < np; i++) {
            if (cancelled(opts, err)) {
                rc = CDSH_ECANCELED;
                break;
            }
            ok &= list_one(s, ps[i], opts, out);
        }
        for (size_t i = 0; i < np; i++)
            prov_unref(ps[i]);
        free(ps);
        if (rc)
            break;
        *fresh = true;
        pthread_mutex_lock(&s->lock);
        if (rev != s->revision) {
            pthread_mutex_unlock(&s->lock);
            if (attempt < MAX_ATTEMPTS) {
                cands_clear(out);
                continue;
            }
            *complete = false; /* kept, never cached */
            break;
        }
        cache_ent *ce = ok ? calloc(1, sizeof *ce) : NULL;
        if (ce && (!(ce->key = strdup(key)) || cands_copy(&ce->c, out) != 0 ||
                   cdsh__ptrs_push(&s->cache, ce) != 0)) {
            cache_ent_free(ce);
            ce = NULL;
        }
        if (ce)
            cache_trim(s);
        pthread_mutex_unlock(&s->lock);
        *complete = ok;
        break;
    }
    free(key);
    if (rc)
        cands_clear(out);
    return rc;
}

static int by_order(const void *a, const void *b)
{
    const icand *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->porder != y->porder)
        return x->porder < y->porder ? -1 : 1;
    return (x->lorder > y->lorder) - (x->lorder < y->lorder);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(str(((const icand *)a)->cand, "name"), str(((const icand *)b)->cand, "name"));
}

static int entry_by_name(const void *a, const void *b)
{
    return strcmp(str((*(entry *const *)a)->def, "name"), str((*(entry *const *)b)->def, "name"));
}

/* Every winning candidate scope sees, in merge order, into *out (owned). */
static int collect(cdsh_skills *s, const cdsh_scope *scope, const cdsh_skill_lookup *opts,
                   cands *out, bool *complete, cdsh_error *err)
{
    cands all = {0}, pc = {0};
    bool fresh = false;
    int rc = collect_providers(s, opts, &pc, complete, &fresh, err);
    if (rc)
        return rc;
    /* runtime skills first in provider order, by name within it */
    pthread_mutex_lock(&s->lock);
    entry **v = malloc((s->entries.n + 1) * sizeof *v);
    size_t n = 0;
    for (size_t i = 0; v && i < s->entries.n; i++) {
        entry *e = s->entries.items[i];
        if (cdsh_scope_contains(e->scope, scope) && resolve(s, scope, str(e->def, "name")) == e)
            v[n++] = e;
    }
    if (v)
        qsort(v, n, sizeof *v, entry_by_name);
    for (size_t i = 0; v && rc == 0 && i < n; i++)
        rc = cands_push(&all, json_incref(v[i]->def), CDSH_SKILLS_RUNTIME_RANK, -1, i);
    pthread_mutex_unlock(&s->lock);
    if (!v || rc || cands_copy(&all, &pc) != 0) {
        free(v);
        cands_clear(&all);
        cands_clear(&pc);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    free(v);
    cands_clear(&pc);
    if (all.n) /* keys are unique, so the order is total */
        qsort(all.v, all.n, sizeof *all.v, by_order);
    for (size_t i = 0; i < all.n; i++) {
        const char *name = str(all.v[i].cand, "name");
        bool seen = false;
        for (size_t j = 0; j < out->n && !seen; j++)
            seen = strcmp(str(out->v[j].cand, "name"), name) == 0;
        if (seen) {
            if (fresh)
                warn(s, scope, "skill \"%s\" from %s ignored because a higher-priority skill already "
                        "exists",
                     name, str(all.v[i].cand, "source"));
            json_decref(all.v[i].cand);
            continue;
        }
        if (cands_push(out, all.v[i].cand, all.v[i].rank, all.v[i].porder, all.v[i].lorder))
            rc = CDSH_ENOMEM;
    }
    free(all.v);
    if (rc) {
        cands_clear(out);
        return cdsh_error_set(err, rc, "NO_MEMORY", "out of memory");
    }
    return 0;
}

static bool model_invocable(const json_t *o)
{
    return !json_is_false(json_object_get(json_object_get(o, "invocation"), "modelInvocable"));
}

static bool user_invocable(const json_t *o)
{
    return !json_is_false(json_object_get(json_object_get(o, "invocation"), "userInvocable"));
}

/* The summary (or, full: definition) view of a candidate or definition. */
static json_t *view(const json_t *c, bool full)
{
    json_t *o = json_pack("{s:s, s:s}", "name", str(c, "name"), "description",
                          str(c, "description"));
    if (!o)
        return NULL;
    if (full)
        json_object_set(o, "content", json_object_get(c, "content"));
    if (str(c, "whenToUse"))
        json_object_set(o, "whenToUse", json_object_get(c, "whenToUse"));
    bool mi = model_invocable(c), ui = user_invocable(c);
    json_object_set_new(o, "invocation",
                        json_pack("{s:b, s:b}", "modelInvocable", mi, "userInvocable", ui));
    json_object_set(o, "source", json_object_get(c, "source"));
    json_object_set(o, "provider", json_object_get(c, "provider"));
    if (json_object_get(c, "resourceBase"))
        json_object_set_new(o, "resourceBase", json_deep_copy(json_object_get(c, "resourceBase")));
    if (full && str(c, "path"))
        json_object_set(o, "path", json_object_get(c, "path"));
    if (full && json_object_get(c, "metadata"))
        json_object_set_new(o, "metadata", json_deep_copy(json_object_get(c, "metadata")));
    if (!mi)
        json_object_set_new(o, "userOnly", json_true());
    if (!ui)
        json_object_set_new(o, "modelOnly", json_true());
    return o;
}

json_t *cdsh_skills_snapshot(cdsh_skills *skills, const cdsh_scope *scope,
                             const cdsh_skill_lookup *opts, cdsh_error *err)
{
    if (!skills) {
        cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "skills: missing registry");
        return NULL;
    }
    cands c = {0};
    bool complete = true;
    if (collect(skills, scope, opts, &c, &complete, err) != 0)
        return NULL;
    if (c.n)
        qsort(c.v, c.n, sizeof *c.v, by_name);
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < c.n; i++)
        json_array_append_new(arr, view(c.v[i].cand, false));
    cands_clear(&c);
    json_t *snap = arr ? json_pack("{s:o, s:b}", "skills", arr, "complete", complete) : NULL;
    if (!snap)
        cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    return snap;
}

json_t *cdsh_skills_list(cdsh_skills *skills, const cdsh_scope *scope)
{
    json_t *snap = cdsh_skills_snapshot(skills, scope, NULL, NULL);
    json_t *arr = json_incref(json_object_get(snap, "skills"));
    json_decref(snap);
    return arr ? arr : json_array();
}

int cdsh_skills_get_dup(cdsh_skills *skills, const cdsh_scope *scope, const char *name,
                        const cdsh_skill_lookup *opts, json_t **def, cdsh_error *err)
{
    if (!def)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "skills: missing argument");
    *def = NULL;
    if (!skills || !cdsh_skills_name_valid(name))
        return 0;
    cands c = {0};
    bool complete;
    int rc = collect(skills, scope, opts, &c, &complete, err);
    if (rc)
        return rc;
    if (cancelled(opts, err)) {
        cands_clear(&c);
        return CDSH_ECANCELED;
    }
    icand *match = NULL;
    for (size_t i = 0; i < c.n && !match; i++)
        if (strcmp(str(c.v[i].cand, "name"), name) == 0)
            match = &c.v[i];
    if (match && match->porder < 0) {
        *def = view(match->cand, true);
        cands_clear(&c);
        return *def ? 0 : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    prov *p = NULL;
    if (match) {
        pthread_mutex_lock(&skills->lock);
        p = prov_ordered(skills, match->porder);
        if (p)
            p->refs++;
        pthread_mutex_unlock(&skills->lock);
    }
    if (!p) { /* unknown, or its provider left meanwhile */
        cands_clear(&c);
        return 0;
    }
    json_t *got = NULL;
    cdsh_skill_lookup none = {0};
    cdsh_error e = {0};
    rc = p->p.get(p->p.ud, match->cand, opts ? opts : &none, &got, &e);
    char buf[400];
    if (rc < 0) {
        rc = cdsh_error_set(err, rc, e.code[0] ? e.code : "SKILL_PROVIDER_FAILED",
                            "skill provider \"%s\" failed to load \"%s\": %s", p->name, name,
                            e.message[0] ? e.message : cdsh_strerror(rc));
    } else if (got && definition_problem(got, buf, sizeof buf)) {
        rc = cdsh_error_set(err, CDSH_EINVAL, "INVALID_SKILL", "%s", buf);
    } else if (got && strcmp(str(got, "name"), name) != 0) {
        cdsh_skills_invalidate(skills, p->name); /* its catalog is stale */
    } else if (got) {
        /* fill what the definition left to the candidate */
        static const char *const keep[] = {"invocation", "source", "provider", "whenToUse",
                                           "resourceBase", "path", "metadata"};
        for (size_t i = 0; i < sizeof keep / sizeof *keep; i++)
            if (!json_object_get(got, keep[i]) && json_object_get(match->cand, keep[i]))
                json_object_set(got, keep[i], json_object_get(match->cand, keep[i]));
        *def = view(got, true);
        if (!*def)
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    if (rc < 0 && cancelled(opts, NULL))
        rc = cdsh_error_set(err, CDSH_ECANCELED, "CANCELLED", "skill lookup cancelled");
    json_decref(got);
    prov_unref(p);
    cands_clear(&c);
    return rc;
}

json_t *cdsh_skills_info_dup(cdsh_skills *skills, const cdsh_scope *scope, const char *name)
{
    json_t *def = NULL;
    if (cdsh_skills_get_dup(skills, scope, name, NULL, &def, NULL) != 0)
        return NULL;
    return def;
}

/* ---- model text ------------------------------------------------------------------ */

char *cdsh_skills_index_dup(cdsh_skills *skills, const cdsh_scope *scope)
{
    json_t *list = skills ? cdsh_skills_list(skills, scope) : NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = list ? open_memstream(&buf, &len) : NULL;
    if (!f) {
        json_decref(list);
        return NULL;
    }
    size_t offered = 0, i;
    json_t *it;
    json_array_foreach(list, i, it) {
        if (!model_invocable(it))
            continue;
        if (offered++ == 0)
            fputs("<available_skills>\n", f);
        fprintf(f, "- %s: %s", str(it, "name"), str(it, "description"));
        if (str(it, "whenToUse"))
            fprintf(f, " (when to use: %s)", str(it, "whenToUse"));
        fputc('\n', f);
    }
    if (offered)
        fputs("</available_skills>\n"
              "To use a skill, call the `skill` tool with its name to load its instructions.\n",
              f);
    fclose(f);
    json_decref(list);
    if (len == 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void put_escaped(FILE *f, const char *s, bool attr)
{
    for (; s && *s; s++) {
        if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>' && !attr)
            fputs("&gt;", f);
        else if (*s == '"' && attr)
            fputs("&quot;", f);
        else
            fputc(*s, f);
    }
}

char *cdsh_skills_render_def_dup(const json_t *def)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = def ? open_memstream(&buf, &len) : NULL;
    if (!f)
        return NULL;
    const json_t *base = json_object_get(def, "resourceBase");
    const char *kind = str(base, "kind");
    fputs("<skill_content name=\"", f);
    put_escaped(f, str(def, "name"), true);
    fputs("\">\n<skill_resources>\n", f);
    if (!kind) {
        fputs("Resources for this skill are managed by provider \"", f);
        put_escaped(f, str(def, "provider"), false);
        fputs("\".\nLoad referenced resources only as needed.\n", f);
    } else if (strcmp(kind, "directory") == 0) {
        fputs("Base directory for this skill: ", f);
        put_escaped(f, str(base, "path"), false);
        fputs("\nResolve relative paths mentioned by this skill against the base directory "
              "before using them. Load referenced resources only as needed.\n",
              f);
        bool more = false;
        json_t *files = cdsh_skills_resources_dup(def, RENDER_RESOURCES, &more);
        if (json_array_size(files)) {
            fputs("Files (read one with the `skill` tool: {\"name\", \"resource\": "
                  "\"<relative path>\"}):\n",
                  f);
            size_t i;
            json_t *r;
            json_array_foreach(files, i, r) {
                fputs("- ", f);
                put_escaped(f, json_string_value(r), false);
                fputc('\n', f);
            }
            if (more)
                fputs("- ... (more files; only the first 200 are listed)\n", f);
        }
        json_decref(files);
    } else if (strcmp(kind, "url") == 0) {
        fputs("Base URL for this skill: ", f);
        put_escaped(f, str(base, "url"), false);
        fputs("\nResolve relative URLs mentioned by this skill against the base URL before "
              "using them. Load referenced resources only as needed.\n",
              f);
    } else {
        fputs("Resources for this skill: ", f);
        put_escaped(f, str(base, "description"), false);
        fputs("\nLoad referenced resources only as needed.\n", f);
    }
    fprintf(f, "</skill_resources>\n\n<skill_instructions>\n%s\n</skill_instructions>\n"
               "</skill_content>",
            str(def, "content") ? str(def, "content") : "");
    fclose(f);
    return buf;
}

char *cdsh_skills_render_dup(cdsh_skills *skills, const cdsh_scope *scope, const char *name)
{
    json_t *def = cdsh_skills_info_dup(skills, scope, name);
    char *out = def ? cdsh_skills_render_def_dup(def) : NULL;
    json_decref(def);
    return out;
}

/* ---- resources --------------------------------------------------------------------- */

typedef struct walk {
    const char *root, *skip;
    json_t *out;
    size_t max;
    bool more;
} walk;

static void walk_dir(walk *w, const char *rel, int depth)
{
    char *dir = *rel ? cdsh_fs_path_join_dup(w->root, rel) : strdup(w->root);
    char **names = NULL;
    if (!dir || cdsh_fs_list_dir(dir, &names, NULL, NULL) != 0) {
        free(dir);
        return;
    }
    for (char **n = names; *n && !w->more; n++) {
        if ((*n)[0] == '.')
            continue;
        char *path = cdsh_fs_path_join_dup(dir, *n);
        char *r = NULL;
        struct stat st;
        if (path && asprintf(&r, "%s%s%s", rel, *rel ? "/" : "", *n) >= 0 &&
            stat(path, &st) == 0 && cdsh_fs_path_is_inside(w->root, path)) {
            if (S_ISDIR(st.st_mode) && depth + 1 < RESOURCE_DEPTH) {
                walk_dir(w, r, depth + 1);
            } else if (S_ISREG(st.st_mode) && !(w->skip && strcmp(path, w->skip) == 0)) {
                if (json_array_size(w->out) >= w->max)
                    w->more = true;
                else
                    json_array_append_new(w->out, json_string(r));
            }
        }
        free(r);
        free(path);
    }
    cdsh_fs_list_free(names);
    free(dir);
}

json_t *cdsh_skills_resources_dup(const json_t *def, size_t max, bool *truncated)
{
    json_t *base = json_object_get(def, "resourceBase");
    walk w = {.root = str(base, "path"), .out = json_array(), .max = max};
    char *skip = str(def, "path") ? cdsh_fs_path_normalize_dup(str(def, "path")) : NULL;
    w.skip = skip;
    if (w.out && w.root && strcmp(str(base, "kind"), "directory") == 0)
        walk_dir(&w, "", 0);
    free(skip);
    if (truncated)
        *truncated = w.more;
    return w.out;
}

int cdsh_skills_resource_read_dup(const json_t *def, const char *rel, size_t max_bytes,
                                  char **out, cdsh_error *err)
{
    if (!out)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "skills: missing argument");
    *out = NULL;
    const char *name = str(def, "name") ? str(def, "name") : "";
    const json_t *base = json_object_get(def, "resourceBase");
    const char *root = str(base, "kind") && strcmp(str(base, "kind"), "directory") == 0
                           ? str(base, "path")
                           : NULL;
    if (!root)
        return cdsh_error_set(err, CDSH_EINVAL, "NO_SKILL_RESOURCES",
                              "skill \"%s\" has no resource directory", name);
    if (!rel || !*rel || rel[0] == '/')
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_RESOURCE",
                              "resource \"%s\" of skill \"%s\" must be a relative path inside "
                              "its directory",
                              rel ? rel : "", name);
    char *path = cdsh_fs_path_join_dup(root, rel);
    if (!path)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    int rc = 0;
    struct stat st;
    if (!cdsh_fs_path_is_inside(root, path))
        rc = cdsh_error_set(err, CDSH_EINVAL, "INVALID_RESOURCE",
                            "resource \"%s\" of skill \"%s\" must be a relative path inside its "
                            "directory",
                            rel, name);
    else if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        rc = cdsh_error_set(err, CDSH_ENOTFOUND, "UNKNOWN_RESOURCE",
                            "skill \"%s\" has no resource \"%s\"", name, rel);
    else if ((size_t)st.st_size > max_bytes)
        rc = cdsh_error_set(err, CDSH_ETOOBIG, "RESOURCE_TOO_LARGE",
                            "resource \"%s\" of skill \"%s\" has %lld bytes (at most %zu are read)",
                            rel, name, (long long)st.st_size, max_bytes);
    size_t len = 0;
    cdsh_error e = {0};
    if (rc == 0 && (rc = cdsh_fs_read_file(path, max_bytes, out, &len, &e)) != 0)
        rc = rc == CDSH_ETOOBIG
                 ? cdsh_error_set(err, rc, "RESOURCE_TOO_LARGE",
                                  "resource \"%s\" of skill \"%s\" is larger than %zu bytes", rel,
                                  name, max_bytes)
                 : cdsh_error_set(err, rc, "UNKNOWN_RESOURCE", "skill \"%s\" has no resource "
                                                               "\"%s\" (%s)",
                                  name, rel, e.message);
    if (rc == 0 && (memchr(*out, '\0', len) || !cdsh_utf8_valid(*out, len)))
        rc = cdsh_error_set(err, CDSH_EINVAL, "RESOURCE_NOT_TEXT",
                            "resource \"%s\" of skill \"%s\" is not UTF-8 text (%zu bytes)", rel,
                            name, len);
    if (rc) {
        free(*out);
        *out = NULL;
    }
    free(path);
    return rc;
}
