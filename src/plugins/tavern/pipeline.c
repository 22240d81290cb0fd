/* pipeline.c — per-turn plan cache, standing pin, and the story state
 * stores (see pipeline.h). Assembly itself is assemble.c. */
#include "plugins/tavern/pipeline.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "plugins/tavern/card.h"

struct cdsh_tavern_pipeline {
    pthread_mutex_t mu;
    char *turn_id;
    json_t *plan;
    char *pin_key;
    char *pin_standing;
};

cdsh_tavern_pipeline *cdsh_tavern_pipeline_new(void)
{
    cdsh_tavern_pipeline *p = calloc(1, sizeof *p);
    if (p)
        pthread_mutex_init(&p->mu, NULL);
    return p;
}

void cdsh_tavern_pipeline_free(cdsh_tavern_pipeline *p)
{
    if (!p)
        return;
    pthread_mutex_destroy(&p->mu);
    free(p->turn_id);
    json_decref(p->plan);
    free(p->pin_key);
    free(p->pin_standing);
    free(p);
}

json_t *cdsh_tavern_pipeline_frozen_dup(cdsh_tavern_pipeline *p, const char *turn_id)
{
    if (!p || !turn_id)
        return NULL;
    pthread_mutex_lock(&p->mu);
    json_t *plan =
        p->plan && p->turn_id && !strcmp(p->turn_id, turn_id) ? json_incref(p->plan) : NULL;
    pthread_mutex_unlock(&p->mu);
    return plan;
}

int cdsh_tavern_pipeline_plan(cdsh_tavern_pipeline *p, const char *turn_id,
                              const cdsh_tavern_assemble_input *in, json_t **plan, bool *cached,
                              cdsh_error *err)
{
    if (!p || !turn_id || !*turn_id || !in || !plan)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "pipeline_plan: bad arguments");
    *plan = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->plan && p->turn_id && !strcmp(p->turn_id, turn_id)) {
        *plan = json_incref(p->plan);
        if (cached)
            *cached = true;
        pthread_mutex_unlock(&p->mu);
        return 0;
    }
    json_t *fresh = NULL;
    int rc = cdsh_tavern_assemble(in, &fresh, err);
    if (rc < 0) {
        pthread_mutex_unlock(&p->mu);
        return rc;
    }
    const char *key = json_string_value(json_object_get(fresh, "standingKey"));
    if (p->pin_key && key && !strcmp(p->pin_key, key)) {
        /* Same standing key: replay the pinned bytes (stable prefix cache). */
        json_object_set_new(fresh, "standing", json_string(p->pin_standing));
        json_object_set_new(fresh, "standingPinned", json_true());
    } else {
        free(p->pin_key);
        free(p->pin_standing);
        p->pin_key = key ? strdup(key) : NULL;
        p->pin_standing = strdup(json_string_value(json_object_get(fresh, "standing")));
        json_object_set_new(fresh, "standingPinned", json_false());
    }
    json_object_set_new(fresh, "turnId", json_string(turn_id));
    free(p->turn_id);
    json_decref(p->plan);
    p->turn_id = strdup(turn_id);
    p->plan = fresh;
    *plan = json_incref(fresh);
    if (cached)
        *cached = false;
    pthread_mutex_unlock(&p->mu);
    return 0;
}

void cdsh_tavern_pipeline_end_turn(cdsh_tavern_pipeline *p, const char *turn_id)
{
    if (!p || !turn_id)
        return;
    pthread_mutex_lock(&p->mu);
    if (p->turn_id && !strcmp(p->turn_id, turn_id)) {
        free(p->turn_id);
        p->turn_id = NULL;
        json_decref(p->plan);
        p->plan = NULL;
    }
    pthread_mutex_unlock(&p->mu);
}

/* ---- state stores ------------------------------------------------------- */

struct cdsh_tavern_state_store {
    cdsh_tavern_state_ops ops;
    void *ud;
};

cdsh_tavern_state_store *cdsh_tavern_state_store_new(const cdsh_tavern_state_ops *ops, void *ud)
{
    if (!ops || !ops->load || !ops->save)
        return NULL;
    cdsh_tavern_state_store *s = calloc(1, sizeof *s);
    if (s) {
        s->ops = *ops;
        s->ud = ud;
    }
    return s;
}

void cdsh_tavern_state_store_free(cdsh_tavern_state_store *s)
{
    if (!s)
        return;
    if (s->ops.destroy)
        s->ops.destroy(s->ud);
    free(s);
}

int cdsh_tavern_state_store_load(cdsh_tavern_state_store *s, const char *story_id, json_t **state,
                                 cdsh_error *err)
{
    if (!s || !story_id || !state)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "state_load: bad arguments");
    return s->ops.load(s->ud, story_id, state, err);
}

int cdsh_tavern_state_store_save(cdsh_tavern_state_store *s, const char *story_id,
                                 const json_t *state, cdsh_error *err)
{
    if (!s || !story_id || !json_is_object(state))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "state_save: bad arguments");
    return s->ops.save(s->ud, story_id, state, err);
}

typedef struct mem_store {
    pthread_mutex_t mu;
    json_t *all;
} mem_store;

static int mem_load(void *ud, const char *id, json_t **state, cdsh_error *err)
{
    (void)err;
    mem_store *m = ud;
    pthread_mutex_lock(&m->mu);
    json_t *v = json_object_get(m->all, id);
    *state = v ? json_deep_copy(v) : json_object();
    pthread_mutex_unlock(&m->mu);
    return 0;
}

static int mem_save(void *ud, const char *id, const json_t *state, cdsh_error *err)
{
    (void)err;
    mem_store *m = ud;
    pthread_mutex_lock(&m->mu);
    json_object_set_new(m->all, id, json_deep_copy(state));
    pthread_mutex_unlock(&m->mu);
    return 0;
}

static void mem_destroy(void *ud)
{
    mem_store *m = ud;
    pthread_mutex_destroy(&m->mu);
    json_decref(m->all);
    free(m);
}

cdsh_tavern_state_store *cdsh_tavern_state_store_new_memory(void)
{
    mem_store *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    pthread_mutex_init(&m->mu, NULL);
    m->all = json_object();
    static const cdsh_tavern_state_ops OPS = {mem_load, mem_save, mem_destroy};
    cdsh_tavern_state_store *s = cdsh_tavern_state_store_new(&OPS, m);
    if (!s)
        mem_destroy(m);
    return s;
}

static char *file_path(const char *dir, const char *id, cdsh_error *err)
{
    if (!cdsh_tavern_card_id_valid(id)) {
        cdsh_error_set(err, CDSH_EINVAL, "INVALID_STORY_ID", "'%s' is not a valid story id", id);
        return NULL;
    }
    size_t n = strlen(dir) + strlen(id) + 8;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s.json", dir, id);
    return p;
}

static int file_load(void *ud, const char *id, json_t **state, cdsh_error *err)
{
    char *path = file_path(ud, id, err);
    if (!path)
        return err ? err->rc : CDSH_EINVAL;
    char *data = NULL;
    size_t len = 0;
    cdsh_error e = {0};
    int rc = cdsh_fs_read_file(path, 16u << 20, &data, &len, &e);
    free(path);
    if (rc == CDSH_ENOTFOUND) {
        *state = json_object();
        return 0;
    }
    if (rc < 0) {
        if (err)
            *err = e;
        return rc;
    }
    json_t *v = json_loadb(data, len, 0, NULL);
    free(data);
    if (!json_is_object(v)) {
        json_decref(v);
        return cdsh_error_set(err, CDSH_EINVAL, "STATE_CORRUPT",
                              "story state of '%s' is not a JSON object", id);
    }
    *state = v;
    return 0;
}

static int file_save(void *ud, const char *id, const json_t *state, cdsh_error *err)
{
    int rc = cdsh_fs_mkdir_p(ud, 0700, err);
    if (rc < 0)
        return rc;
    char *path = file_path(ud, id, err);
    if (!path)
        return err ? err->rc : CDSH_EINVAL;
    char *text = json_dumps(state, JSON_COMPACT | JSON_SORT_KEYS);
    rc = text ? cdsh_fs_write_atomic(path, text, strlen(text), 0600, err)
              : cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
    free(text);
    free(path);
    return rc;
}

cdsh_tavern_state_store *cdsh_tavern_state_store_new_file(const char *dir)
{
    if (!dir)
        return NULL;
    char *d = strdup(dir);
    if (!d)
        return NULL;
    static const cdsh_tavern_state_ops OPS = {file_load, file_save, free};
    cdsh_tavern_state_store *s = cdsh_tavern_state_store_new(&OPS, d);
    if (!s)
        free(d);
    return s;
}
