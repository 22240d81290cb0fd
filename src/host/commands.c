/* commands.c — the command registry: layered entries, `/name rest` parsing and
 * execution with run/done events. Entries are reference-counted so a handler
 * runs without the registry lock. Rendering of the list is left to front ends. */
#include "host/commands.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/random.h"
#include "host/ptrs.h"

typedef struct entry {
    atomic_int refs;
    cdsh_commands *owner;
    cdsh_scope *scope;
    char *name, *description, *hint;
    bool images, hide_input;
    cdsh_command_fn handler;
    void *arg;
} entry;

struct cdsh_commands {
    pthread_mutex_t lock;
    cdsh_events *bus;
    cdsh__ptrs entries; /* of entry*, registration order */
    char prefix[9];
    atomic_ulong seq;
};

static void entry_unref(entry *e)
{
    if (e && atomic_fetch_sub(&e->refs, 1) == 1) {
        cdsh_scope_unref(e->scope);
        free(e->name);
        free(e->description);
        free(e->hint);
        free(e);
    }
}

cdsh_commands *cdsh_commands_new(cdsh_events *bus)
{
    cdsh_commands *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (cdsh_random_hex(c->prefix, sizeof c->prefix, 4) != 0) {
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    c->bus = bus;
    atomic_init(&c->seq, 0);
    return c;
}

void cdsh_commands_free(cdsh_commands *cmds)
{
    if (!cmds)
        return;
    for (size_t i = 0; i < cmds->entries.n; i++)
        entry_unref(cmds->entries.items[i]);
    cdsh__ptrs_deinit(&cmds->entries);
    pthread_mutex_destroy(&cmds->lock);
    free(cmds);
}

bool cdsh_commands_name_valid(const char *name)
{
    if (!name || !(*name >= 'a' && *name <= 'z'))
        return false;
    for (const char *p = name + 1; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
            return false;
    return true;
}

static bool blank(const char *s)
{
    if (!s)
        return true;
    for (; *s; s++)
        if (!isspace((unsigned char)*s))
            return false;
    return true;
}

/* Index of the entry named `name` in exactly `scope`'s layer, or -1. Locked. */
static long find_in_layer(cdsh_commands *c, const cdsh_scope *scope, const char *name)
{
    for (size_t i = 0; i < c->entries.n; i++) {
        const entry *e = c->entries.items[i];
        if (e->scope == scope && strcmp(e->name, name) == 0)
            return (long)i;
    }
    return -1;
}

/* Nearest visible entry for agent (own layer, ancestors, then global). Locked. */
static entry *resolve(cdsh_commands *c, const cdsh_scope *agent, const char *name)
{
    for (const cdsh_scope *s = agent;; s = cdsh_scope_parent(s)) {
        long i = find_in_layer(c, s, name);
        if (i >= 0)
            return c->entries.items[i];
        if (!s)
            return NULL;
    }
}

static void emit_change(cdsh_commands *c)
{
    cdsh_events_emit(c->bus, "commands/change", NULL, false, NULL);
}

static void dispose_entry(void *arg)
{
    entry *e = arg;
    cdsh_commands *c = e->owner;
    pthread_mutex_lock(&c->lock);
    cdsh__ptrs_remove(&c->entries, e);
    pthread_mutex_unlock(&c->lock);
    entry_unref(e);
    emit_change(c);
}

int cdsh_commands_register(cdsh_commands *cmds, cdsh_scope *scope, const cdsh_command_def *def,
                           cdsh_disposer_t *out, cdsh_error *err)
{
    if (!cmds || !def || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_COMMAND", "commands: missing argument");
    if (!cdsh_commands_name_valid(def->name))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_COMMAND",
                              "command name \"%s\" must match ^[a-z][a-z0-9_-]*$",
                              def->name ? def->name : "");
    if (blank(def->description))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_COMMAND",
                              "command \"%s\" needs a non-blank description", def->name);
    if (def->input_hint && blank(def->input_hint))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_COMMAND",
                              "command \"%s\": input hint must be non-blank when given", def->name);
    if (!def->handler)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_COMMAND", "command \"%s\" needs a handler",
                              def->name);

    entry *e = calloc(1, sizeof *e);
    if (!e)
        goto nomem;
    atomic_init(&e->refs, 1);
    e->owner = cmds;
    e->name = strdup(def->name);
    e->description = strdup(def->description);
    e->hint = def->input_hint ? strdup(def->input_hint) : NULL;
    if (!e->name || !e->description || (def->input_hint && !e->hint))
        goto nomem;
    e->images = def->accepts_images;
    e->hide_input = def->hide_input;
    e->handler = def->handler;
    e->arg = def->arg;
    e->scope = cdsh_scope_ref(scope);

    pthread_mutex_lock(&cmds->lock);
    if (find_in_layer(cmds, scope, def->name) >= 0) {
        pthread_mutex_unlock(&cmds->lock);
        entry_unref(e);
        return cdsh_error_set(err, CDSH_EEXIST, "DUPLICATE_COMMAND",
                              "command \"%s\" is already registered%s", def->name,
                              scope ? " in this scope" : "");
    }
    if (cdsh__ptrs_push(&cmds->entries, e) != 0) {
        pthread_mutex_unlock(&cmds->lock);
        goto nomem;
    }
    pthread_mutex_unlock(&cmds->lock);
    *out = (cdsh_disposer_t){dispose_entry, e};
    emit_change(cmds);
    return 0;

nomem:
    entry_unref(e);
    return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
}

static json_t *descriptor(const entry *e)
{
    json_t *d = json_pack("{s:s, s:s}", "name", e->name, "description", e->description);
    if (d && e->hint) {
        json_t *in = json_pack("{s:s}", "hint", e->hint);
        if (in && e->images)
            json_object_set_new(in, "images", json_true());
        json_object_set_new(d, "input", in);
    }
    return d;
}

static int by_name(const void *a, const void *b)
{
    const entry *x = *(entry *const *)a, *y = *(entry *const *)b;
    return strcmp(x->name, y->name);
}

json_t *cdsh_commands_list(cdsh_commands *cmds, const cdsh_scope *agent)
{
    json_t *arr = json_array();
    if (!cmds || !arr)
        return arr;
    pthread_mutex_lock(&cmds->lock);
    entry **vis = malloc((cmds->entries.n + 1) * sizeof *vis);
    size_t nv = 0;
    for (size_t i = 0; vis && i < cmds->entries.n; i++) {
        entry *e = cmds->entries.items[i];
        if (cdsh_scope_contains(e->scope, agent) && resolve(cmds, agent, e->name) == e)
            vis[nv++] = e;
    }
    if (vis) {
        qsort(vis, nv, sizeof *vis, by_name);
        for (size_t i = 0; i < nv; i++)
            json_array_append_new(arr, descriptor(vis[i]));
    }
    pthread_mutex_unlock(&cmds->lock);
    if (!vis) {
        json_decref(arr);
        return NULL;
    }
    free(vis);
    return arr;
}

json_t *cdsh_commands_find(cdsh_commands *cmds, const cdsh_scope *agent, const char *name)
{
    if (!cmds || !name)
        return NULL;
    pthread_mutex_lock(&cmds->lock);
    entry *e = resolve(cmds, agent, name);
    json_t *d = e ? descriptor(e) : NULL;
    pthread_mutex_unlock(&cmds->lock);
    return d;
}

size_t cdsh_commands_count(cdsh_commands *cmds)
{
    pthread_mutex_lock(&cmds->lock);
    size_t n = cmds->entries.n;
    pthread_mutex_unlock(&cmds->lock);
    return n;
}

bool cdsh_commands_parse(const char *line, char *name_out, size_t cap, const char **raw_input)
{
    if (!line || line[0] != '/' || !(line[1] >= 'a' && line[1] <= 'z'))
        return false;
    const char *p = line + 2;
    while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-')
        p++;
    if (*p && !isspace((unsigned char)*p))
        return false;
    size_t n = (size_t)(p - line - 1);
    if (n + 1 > cap)
        return false;
    memcpy(name_out, line + 1, n);
    name_out[n] = '\0';
    if (raw_input)
        *raw_input = p;
    return true;
}

int cdsh_command_result_set(cdsh_command_result *out, cdsh_command_kind kind, const char *text)
{
    char *copy = text ? strdup(text) : NULL;
    if (text && !copy)
        return CDSH_ENOMEM;
    free(out->text);
    out->kind = kind;
    out->text = copy;
    return 0;
}

void cdsh_commands_outcome_clear(cdsh_command_outcome *out)
{
    if (out) {
        free(out->text);
        memset(out, 0, sizeof *out);
    }
}

char *cdsh_commands_unknown_message_dup(cdsh_commands *cmds, const cdsh_scope *agent,
                                        const char *line)
{
    char name[128];
    if (!cmds || !cdsh_commands_parse(line, name, sizeof name, NULL))
        return NULL;
    json_t *list = cdsh_commands_list(cmds, agent);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f) {
        fprintf(f, "unknown command \"/%s\"; ", name);
        if (json_array_size(list) == 0)
            fputs("no commands are available", f);
        else
            fputs("available commands: ", f);
        size_t i;
        json_t *c;
        json_array_foreach(list, i, c) {
            fprintf(f, "%s/%s", i ? ", " : "", json_string_value(json_object_get(c, "name")));
        }
        fclose(f);
    }
    json_decref(list);
    return buf;
}

static void emit_done(cdsh_commands *c, const cdsh_scope *agent, const char *id,
                      cdsh_command_kind kind, const char *text, long long source_event_seq)
{
    json_t *p = json_pack("{s:s, s:s}", "commandId", id, "kind",
                          kind == CDSH_COMMAND_SUCCESS ? "success" : "error");
    if (p && text)
        json_object_set_new(p, "text", json_string(text));
    if (p && kind == CDSH_COMMAND_SUCCESS && source_event_seq > 0)
        json_object_set_new(p, "sourceEventSeq", json_integer(source_event_seq));
    cdsh_events_emit(c->bus, "command/done", agent, true, p);
    json_decref(p);
}

int cdsh_commands_execute(cdsh_commands *cmds, const cdsh_scope *agent, const char *line,
                          const json_t *images, cdsh_cancel *cancel, cdsh_command_outcome *out,
                          cdsh_error *err)
{
    if (!cmds || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "commands: missing argument");
    memset(out, 0, sizeof *out);
    cdsh_error local = {0};
    if (!err)
        err = &local; /* command/done reports the handler's message either way */
    cdsh_error_clear(err);
    char name[128];
    const char *raw = NULL;
    if (!cdsh_commands_parse(line, name, sizeof name, &raw))
        return 0;
    pthread_mutex_lock(&cmds->lock);
    entry *e = resolve(cmds, agent, name);
    if (e)
        atomic_fetch_add(&e->refs, 1);
    pthread_mutex_unlock(&cmds->lock);
    if (!e)
        return 0;

    snprintf(out->command_id, sizeof out->command_id, "cmd-%s-%lu", cmds->prefix,
             atomic_fetch_add(&cmds->seq, 1) + 1);
    json_t *run = json_pack("{s:s, s:s}", "commandId", out->command_id, "name", name);
    if (run && !e->hide_input)
        json_object_set_new(run, "args", json_string(raw));
    if (run)
        json_object_set_new(run, "source", json_pack("{s:s}", "kind", "user"));
    cdsh_events_emit(cmds->bus, "command/run", agent, true, run);
    json_decref(run);

    int rc = 1;
    size_t nimages = json_is_array(images) ? json_array_size(images) : 0;
    cdsh_command_result res = {CDSH_COMMAND_SUCCESS, NULL, 0};
    if (nimages > 0 && !e->images) {
        char msg[200];
        snprintf(msg, sizeof msg, "/%s does not accept image attachments", name);
        out->kind = CDSH_COMMAND_ERROR;
        out->text = strdup(msg);
        emit_done(cmds, agent, out->command_id, out->kind, msg, 0);
        entry_unref(e);
        return 1;
    }
    if (cdsh_cancel_is_fired(cancel)) {
        rc = cdsh_error_set(err, CDSH_ECANCELED, "cancelled", "/%s was cancelled", name);
        goto failed;
    }
    json_t *att = json_is_array(images) ? json_incref((json_t *)images) : json_array();
    cdsh_command_invocation inv = {out->command_id, name, agent, raw, att, cancel};
    int hrc = e->handler(e->arg, &inv, &res, err);
    json_decref(att);
    if (hrc < 0) {
        rc = hrc;
        goto failed;
    }
    if (res.kind != CDSH_COMMAND_SUCCESS && res.kind != CDSH_COMMAND_ERROR) {
        rc = cdsh_error_set(err, CDSH_EINVAL, "INVALID_COMMAND_RESULT",
                            "/%s returned an unknown result kind", name);
        goto failed;
    }
    if (res.kind == CDSH_COMMAND_ERROR && blank(res.text)) {
        rc = cdsh_error_set(err, CDSH_EINVAL, "INVALID_COMMAND_RESULT",
                            "/%s returned an error result without text", name);
        goto failed;
    }
    if (cdsh_cancel_is_fired(cancel)) {
        rc = cdsh_error_set(err, CDSH_ECANCELED, "cancelled", "/%s was cancelled", name);
        goto failed;
    }
    if (res.kind == CDSH_COMMAND_SUCCESS && res.source_event_seq < 0) {
        rc = cdsh_error_set(err, CDSH_EINVAL, "INVALID_COMMAND_RESULT",
                            "/%s returned a negative sourceEventSeq", name);
        goto failed;
    }
    out->kind = res.kind;
    out->text = res.text;
    out->source_event_seq = res.kind == CDSH_COMMAND_SUCCESS ? res.source_event_seq : 0;
    emit_done(cmds, agent, out->command_id, out->kind, out->text, out->source_event_seq);
    entry_unref(e);
    return 1;

failed:
    free(res.text);
    emit_done(cmds, agent, out->command_id, CDSH_COMMAND_ERROR,
              err->message[0] ? err->message : "command failed", 0);
    entry_unref(e);
    return rc;
}
