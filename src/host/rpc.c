/* rpc.c — channel table, name rules, in-process calls and the wire envelope.
 * Channels are reference-counted so a handler runs without the table lock.
 * `/api` is the shared host API channel: only one interceptor may claim it,
 * for the endpoints its predicate accepts. */
#include "host/rpc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/ptrs.h"

typedef struct chan {
    atomic_int refs;
    cdsh_rpc *owner;
    char *name;
    cdsh_rpc_fn fn;
    cdsh_rpc_match_fn matches; /* the /api interceptor only */
    void *arg;
} chan;

struct cdsh_rpc {
    pthread_mutex_t lock;
    cdsh__ptrs chans; /* of chan* */
};

static void chan_unref(chan *c)
{
    if (c && atomic_fetch_sub(&c->refs, 1) == 1) {
        free(c->name);
        free(c);
    }
}

cdsh_rpc *cdsh_rpc_new(void)
{
    cdsh_rpc *r = calloc(1, sizeof *r);
    if (r)
        pthread_mutex_init(&r->lock, NULL);
    return r;
}

void cdsh_rpc_free(cdsh_rpc *rpc)
{
    if (!rpc)
        return;
    for (size_t i = 0; i < rpc->chans.n; i++)
        chan_unref(rpc->chans.items[i]);
    cdsh__ptrs_deinit(&rpc->chans);
    pthread_mutex_destroy(&rpc->lock);
    free(rpc);
}

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool cdsh_rpc_channel_valid(const char *name)
{
    if (!name || name[0] != '/' || !name[1])
        return false;
    for (const char *p = name + 1; *p; p++)
        if (!alnum(*p) && !strchr("._~-", *p))
            return false;
    return true;
}

bool cdsh_rpc_endpoint_valid(const char *endpoint)
{
    if (!endpoint || !*endpoint)
        return false;
    const char *seg = endpoint;
    for (;;) {
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return false;
        for (size_t i = 0; i < n; i++)
            if (!alnum(seg[i]) && !strchr("_$.-", seg[i]))
                return false;
        if (!end)
            return true;
        seg = end + 1;
    }
}

static long find(cdsh_rpc *r, const char *name)
{
    for (size_t i = 0; i < r->chans.n; i++)
        if (strcmp(((chan *)r->chans.items[i])->name, name) == 0)
            return (long)i;
    return -1;
}

static void dispose_channel(void *arg)
{
    chan *c = arg;
    cdsh_rpc *r = c->owner;
    pthread_mutex_lock(&r->lock);
    cdsh__ptrs_remove(&r->chans, c);
    pthread_mutex_unlock(&r->lock);
    chan_unref(c);
}

static int claim(cdsh_rpc *rpc, const char *channel_name, cdsh_rpc_match_fn matches, cdsh_rpc_fn fn,
                 void *arg, cdsh_disposer_t *out, cdsh_error *err)
{
    chan *c = calloc(1, sizeof *c);
    char *name = strdup(channel_name);
    if (!c || !name) {
        free(c);
        free(name);
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    atomic_init(&c->refs, 1);
    c->owner = rpc;
    c->name = name;
    c->fn = fn;
    c->matches = matches;
    c->arg = arg;

    pthread_mutex_lock(&rpc->lock);
    int rc = 0;
    if (find(rpc, channel_name) >= 0) {
        rc = matches ? cdsh_error_set(err, CDSH_EEXIST, "DUPLICATE_CHANNEL",
                                      "connection: \"%s\" already has an interceptor", channel_name)
                     : cdsh_error_set(err, CDSH_EEXIST, "DUPLICATE_CHANNEL",
                                      "connection: RPC channel \"%s\" already has a handler",
                                      channel_name);
    } else if (cdsh__ptrs_push(&rpc->chans, c) != 0) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    pthread_mutex_unlock(&rpc->lock);
    if (rc != 0) {
        chan_unref(c);
        return rc;
    }
    *out = (cdsh_disposer_t){dispose_channel, c};
    return 0;
}

int cdsh_rpc_handle(cdsh_rpc *rpc, const char *channel_name, cdsh_rpc_fn fn, void *arg,
                    cdsh_disposer_t *out, cdsh_error *err)
{
    if (!rpc || !fn || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "connection: missing argument");
    if (!cdsh_rpc_channel_valid(channel_name) || strcmp(channel_name, CDSH_RPC_API) == 0)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_CHANNEL",
                              "connection: invalid or reserved RPC channel \"%s\"",
                              channel_name ? channel_name : "");
    return claim(rpc, channel_name, NULL, fn, arg, out, err);
}

int cdsh_rpc_intercept(cdsh_rpc *rpc, const char *channel_name, cdsh_rpc_match_fn matches,
                       cdsh_rpc_fn fn, void *arg, cdsh_disposer_t *out, cdsh_error *err)
{
    if (!rpc || !fn || !matches || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "connection: missing argument");
    if (!channel_name || strcmp(channel_name, CDSH_RPC_API) != 0)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_CHANNEL",
                              "connection: only \"/api\" can be intercepted, not \"%s\"",
                              channel_name ? channel_name : "");
    return claim(rpc, channel_name, matches, fn, arg, out, err);
}

json_t *cdsh_rpc_ok_new(json_t *value)
{
    return json_pack("{s:b, s:o}", "ok", 1, "value", value ? value : json_null());
}

json_t *cdsh_rpc_error_new(const char *code, const char *message, json_t *details)
{
    return json_pack("{s:b, s:{s:s, s:s, s:o}}", "ok", 0, "error", "code", code, "message",
                     message ? message : "", "details", details ? details : json_null());
}

bool cdsh_rpc_result_valid(const json_t *result)
{
    if (!json_is_object(result))
        return false;
    json_t *ok = json_object_get(result, "ok");
    if (json_is_true(ok))
        return json_object_get(result, "value") != NULL;
    if (!json_is_false(ok))
        return false;
    json_t *e = json_object_get(result, "error");
    return json_is_object(e) && json_is_string(json_object_get(e, "code")) &&
           json_is_string(json_object_get(e, "message"));
}

json_t *cdsh_rpc_call(cdsh_rpc *rpc, const char *channel_name, const char *endpoint,
                      const json_t *payload, cdsh_cancel *cancel)
{
    char msg[CDSH_ERROR_MESSAGE_MAX + 64];
    if (!rpc || !cdsh_rpc_channel_valid(channel_name)) {
        snprintf(msg, sizeof msg, "invalid RPC channel \"%s\"", channel_name ? channel_name : "");
        return cdsh_rpc_error_new(CDSH_RPC_BAD_REQUEST, msg, NULL);
    }
    if (!cdsh_rpc_endpoint_valid(endpoint)) {
        snprintf(msg, sizeof msg, "invalid RPC endpoint \"%s\"", endpoint ? endpoint : "");
        return cdsh_rpc_error_new(CDSH_RPC_BAD_REQUEST, msg, NULL);
    }
    pthread_mutex_lock(&rpc->lock);
    long i = find(rpc, channel_name);
    chan *c = i >= 0 ? rpc->chans.items[i] : NULL;
    if (c)
        atomic_fetch_add(&c->refs, 1);
    pthread_mutex_unlock(&rpc->lock);
    if (c && c->matches && !c->matches(c->arg, endpoint)) {
        chan_unref(c);
        snprintf(msg, sizeof msg, "no handler for %s/%s", channel_name, endpoint);
        return cdsh_rpc_error_new(CDSH_RPC_NOT_FOUND, msg, NULL);
    }
    if (!c) {
        snprintf(msg, sizeof msg, "no handler for RPC channel \"%s\"", channel_name);
        return cdsh_rpc_error_new(CDSH_RPC_NOT_FOUND, msg, NULL);
    }
    if (cdsh_cancel_is_fired(cancel)) {
        chan_unref(c);
        return cdsh_rpc_error_new(CDSH_RPC_CANCELLED, "request cancelled", NULL);
    }

    json_t *result = NULL;
    cdsh_error err = {0};
    json_t *null_payload = payload ? NULL : json_null();
    int rc = c->fn(c->arg, endpoint, payload ? payload : null_payload, cancel, &result, &err);
    chan_unref(c);
    if (rc < 0 || !cdsh_rpc_result_valid(result)) {
        json_decref(result);
        snprintf(msg, sizeof msg, "handler failure: %s",
                 rc < 0 ? (err.message[0] ? err.message : cdsh_strerror(rc))
                        : "handler returned a malformed result");
        return cdsh_rpc_error_new(CDSH_RPC_INTERNAL, msg, NULL);
    }
    if (cdsh_cancel_is_fired(cancel) && json_is_true(json_object_get(result, "ok"))) {
        json_decref(result);
        return cdsh_rpc_error_new(CDSH_RPC_CANCELLED, "request cancelled", NULL);
    }
    return result;
}

json_t *cdsh_rpc_dispatch_envelope(cdsh_rpc *rpc, const char *channel_name, const char *endpoint,
                                   const json_t *body, cdsh_cancel *cancel)
{
    const char *rpc_id = "";
    const char *problem = NULL;
    json_t *id = json_object_get(body, "rpcId");
    if (json_is_string(id))
        rpc_id = json_string_value(id);
    json_t *method = json_object_get(body, "method");
    if (!json_is_object(body))
        problem = "request body must be a JSON object";
    else if (!json_is_string(json_object_get(body, "type")) ||
             strcmp(json_string_value(json_object_get(body, "type")), "client-request") != 0)
        problem = "request type must be \"client-request\"";
    else if (!json_is_string(id) || !*rpc_id)
        problem = "rpcId must be a non-empty string";
    else if (!json_is_string(method))
        problem = "method must be a string";
    else if (!endpoint || strcmp(json_string_value(method), endpoint) != 0)
        problem = "method must equal the endpoint";
    else if (!json_object_get(body, "payload"))
        problem = "payload is missing";
    json_t *result = problem ? cdsh_rpc_error_new(CDSH_RPC_BAD_REQUEST, problem, NULL)
                             : cdsh_rpc_call(rpc, channel_name, endpoint,
                                             json_object_get(body, "payload"), cancel);
    if (!result)
        return NULL;
    return json_pack("{s:s, s:s, s:o}", "type", "server-response", "rpcId", rpc_id, "result",
                     result);
}

size_t cdsh_rpc_count(cdsh_rpc *rpc)
{
    pthread_mutex_lock(&rpc->lock);
    size_t n = rpc->chans.n;
    pthread_mutex_unlock(&rpc->lock);
    return n;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

json_t *cdsh_rpc_channels(cdsh_rpc *rpc)
{
    json_t *arr = json_array();
    pthread_mutex_lock(&rpc->lock);
    size_t n = rpc->chans.n;
    const char **names = malloc((n + 1) * sizeof *names);
    for (size_t i = 0; names && i < n; i++)
        names[i] = ((chan *)rpc->chans.items[i])->name;
    if (names) {
        qsort(names, n, sizeof *names, cmp_str);
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, json_string(names[i]));
    }
    pthread_mutex_unlock(&rpc->lock);
    free(names);
    return arr;
}
