/* secrets.c — `${VAR}` values from the environment and the allow-listed
 * keyring. Values never leave the store except through _get (register.c
 * uses it to build a child's env/headers); nothing here prints or logs one. */
#include "plugins/mcpimport/secrets.h"

#include <stdlib.h>
#include <string.h>

#include "base/process.h"

typedef struct entry {
    char *name;
    char *value;
} entry;

struct cdsh_mcpimport_secrets {
    entry *v;
    size_t n, cap;
    json_t *index; /* name -> position in v (lookups stay constant-time) */
};

const char *cdsh_mcpimport_secrets_get(void *store, const char *name)
{
    cdsh_mcpimport_secrets *s = store;
    const json_t *at = s && s->index ? json_object_get(s->index, name) : NULL;
    return at ? s->v[json_integer_value(at)].value : NULL;
}

size_t cdsh_mcpimport_secrets_count(const cdsh_mcpimport_secrets *store)
{
    return store ? store->n : 0;
}

static int put(cdsh_mcpimport_secrets *s, const char *name, const char *value)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        entry *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return CDSH_ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n].name = strdup(name);
    s->v[s->n].value = strdup(value);
    if (!s->v[s->n].name || !s->v[s->n].value) {
        free(s->v[s->n].name);
        free(s->v[s->n].value);
        return CDSH_ENOMEM;
    }
    if (json_object_set_new(s->index, name, json_integer((json_int_t)s->n)) != 0) {
        free(s->v[s->n].name);
        free(s->v[s->n].value);
        return CDSH_ENOMEM;
    }
    s->n++;
    return 0;
}

static bool allowed(const cdsh_mcpimport_secret_opts *o, const char *name)
{
    for (const char *const *p = o ? o->keyring_allow : NULL; p && *p; p++)
        if (strcmp(*p, name) == 0)
            return true;
    return false;
}

/* secret-tool lookup; the value is kept only in the store. */
static char *keyring_lookup(const cdsh_mcpimport_secret_opts *o, const char *name)
{
    const char *tool = o && o->secret_tool ? o->secret_tool : "secret-tool";
    char *path = NULL;
    if (cdsh_process_find_program(tool, NULL, &path, NULL) != 0)
        return NULL;
    const char *argv[] = {path, "lookup", "service", "cdsh-import", "name", name, NULL};
    cdsh_process_run_opts ro = {.timeout_ms = 5000, .max_output = 65536};
    ro.spawn.stderr_mode = CDSH_PROCESS_NULL;
    cdsh_process_result res = {0};
    char *value = NULL;
    int rc = cdsh_process_run(argv, &ro, &res, NULL);
    if (rc == 0 && res.status.exited && res.status.exit_code == 0 && res.out && res.out_len) {
        size_t n = res.out_len;
        if (res.out[n - 1] == '\n')
            n--;
        value = strndup(res.out, n);
    }
    if (res.out)
        memset(res.out, 0, res.out_len);
    cdsh_process_result_deinit(&res);
    free(path);
    return value;
}

int cdsh_mcpimport_secrets_resolve(json_t *servers, const cdsh_mcpimport_secret_opts *opts,
                                   cdsh_mcpimport_secrets **out, cdsh_error *err)
{
    cdsh_mcpimport_secrets *s = calloc(1, sizeof *s);
    if (s && !(s->index = json_object())) {
        free(s);
        s = NULL;
    }
    if (!s)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    size_t i, j;
    json_t *ir, *r;
    json_array_foreach(servers, i, ir) {
        json_array_foreach(json_object_get(ir, "unresolved"), j, r) {
            const char *name = json_string_value(json_object_get(r, "envVar"));
            const char *from = NULL;
            if (!name)
                continue;
            const char *env = strncmp(name, "user_config.", 12) == 0 ? NULL : getenv(name);
            char *kv = NULL;
            if (env) {
                from = "env";
                if (!cdsh_mcpimport_secrets_get(s, name) && put(s, name, env) != 0)
                    goto oom;
            } else if (cdsh_mcpimport_secrets_get(s, name))
                from = "keyring";
            else if (allowed(opts, name) && (kv = keyring_lookup(opts, name))) {
                int rc = put(s, name, kv);
                memset(kv, 0, strlen(kv));
                free(kv);
                if (rc != 0)
                    goto oom;
                from = "keyring";
            } else if (json_is_string(json_object_get(r, "fallback")))
                from = "default";
            else
                from = NULL;
            json_object_set_new(r, "resolvedFrom", from ? json_string(from) : json_null());
        }
    }
    *out = s;
    return 0;
oom:
    cdsh_mcpimport_secrets_free(s);
    return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
}

void cdsh_mcpimport_secrets_free(cdsh_mcpimport_secrets *store)
{
    if (!store)
        return;
    for (size_t i = 0; i < store->n; i++) {
        memset(store->v[i].value, 0, strlen(store->v[i].value));
        free(store->v[i].value);
        free(store->v[i].name);
    }
    free(store->v);
    json_decref(store->index);
    free(store);
}
