/* approval.c — the approval broker: pending requests, their one ending,
 * the front end's channel, and the bridge from the tool registry's approval
 * service. Which options an ACP agent offers is the ACP plugin's business. */
#include "host/approval.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/random.h"
#include "host/dispatch.h"
#include "host/scope.h"

typedef struct pending {
    struct pending *next;
    char *id;
    char *session_id;
    json_t *request;
    const char *outcome; /* NULL while open */
    char *option_id;
} pending;

struct cdsh_approvals {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t timeout_ms;
    cdsh_approval_channel channel;
    bool has_channel;
    bool closed;
    int in_callback; /* channel calls running (set_channel waits for 0) */
    pending *list;
};

cdsh_approvals *cdsh_approvals_new(int64_t timeout_ms)
{
    cdsh_approvals *ap = calloc(1, sizeof *ap);
    if (!ap)
        return NULL;
    pthread_mutex_init(&ap->mu, NULL);
    pthread_cond_init(&ap->cv, NULL);
    ap->timeout_ms = timeout_ms > 0 ? timeout_ms : CDSH_APPROVAL_DEFAULT_TIMEOUT_MS;
    return ap;
}

/* Ends a pending request (caller holds mu); the first ending wins. */
static bool end_locked(cdsh_approvals *ap, pending *p, const char *outcome, const char *option)
{
    if (p->outcome)
        return false;
    p->outcome = outcome;
    p->option_id = option ? strdup(option) : NULL;
    pthread_cond_broadcast(&ap->cv);
    return true;
}

static void end_all_locked(cdsh_approvals *ap, const char *session_id, int *n)
{
    for (pending *p = ap->list; p; p = p->next)
        if ((!session_id || strcmp(p->session_id, session_id) == 0) &&
            end_locked(ap, p, "cancelled", NULL) && n)
            (*n)++;
}

void cdsh_approvals_free(cdsh_approvals *ap)
{
    if (!ap)
        return;
    cdsh_approvals_set_channel(ap, NULL);
    pthread_mutex_destroy(&ap->mu);
    pthread_cond_destroy(&ap->cv);
    free(ap);
}

void cdsh_approvals_set_channel(cdsh_approvals *ap, const cdsh_approval_channel *channel)
{
    if (!ap)
        return;
    pthread_mutex_lock(&ap->mu);
    if (!channel)
        end_all_locked(ap, NULL, NULL);
    ap->has_channel = false; /* no new calls into the old channel */
    while (ap->in_callback > 0)
        pthread_cond_wait(&ap->cv, &ap->mu);
    if (channel) {
        ap->channel = *channel;
        ap->has_channel = channel->present != NULL;
    }
    pthread_mutex_unlock(&ap->mu);
}

void cdsh_approvals_close(cdsh_approvals *ap)
{
    if (!ap)
        return;
    pthread_mutex_lock(&ap->mu);
    ap->closed = true;
    end_all_locked(ap, NULL, NULL);
    pthread_mutex_unlock(&ap->mu);
}

int cdsh_approvals_cancel_session(cdsh_approvals *ap, const char *session_id)
{
    int n = 0;
    if (!ap || !session_id)
        return 0;
    pthread_mutex_lock(&ap->mu);
    end_all_locked(ap, session_id, &n);
    pthread_mutex_unlock(&ap->mu);
    return n;
}

static bool option_offered(const json_t *request, const char *option_id)
{
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(request, "options"), i, o) {
        const char *id = json_string_value(json_object_get(o, "optionId"));
        if (id && strcmp(id, option_id) == 0)
            return true;
    }
    return false;
}

int cdsh_approvals_answer(cdsh_approvals *ap, const char *id, const char *session_id,
                          const char *option_id, cdsh_error *err)
{
    if (!ap || !id)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "an approval id is required");
    pthread_mutex_lock(&ap->mu);
    pending *p = ap->list;
    while (p && strcmp(p->id, id) != 0)
        p = p->next;
    int rc = 0;
    if (!p || p->outcome || (session_id && strcmp(session_id, p->session_id) != 0))
        rc = cdsh_error_set(err, CDSH_ENOTFOUND, "NO_APPROVAL",
                            "no pending approval request \"%s\" (it may have ended already)", id);
    else if (option_id && !option_offered(p->request, option_id))
        rc = cdsh_error_set(err, CDSH_EINVAL, "BAD_OPTION",
                            "\"%s\" is not one of the options of approval request \"%s\"",
                            option_id, id);
    else
        end_locked(ap, p, option_id ? "selected" : "cancelled", option_id);
    pthread_mutex_unlock(&ap->mu);
    return rc;
}

json_t *cdsh_approvals_pending_dup(cdsh_approvals *ap, const char *session_id)
{
    json_t *out = json_array();
    if (!ap)
        return out;
    pthread_mutex_lock(&ap->mu);
    for (pending *p = ap->list; p; p = p->next)
        if (!p->outcome && (!session_id || strcmp(p->session_id, session_id) == 0))
            json_array_insert(out, 0, p->request); /* oldest first */
    pthread_mutex_unlock(&ap->mu);
    return out;
}

static void wake(void *arg)
{
    cdsh_approvals *ap = arg;
    pthread_mutex_lock(&ap->mu);
    pthread_cond_broadcast(&ap->cv);
    pthread_mutex_unlock(&ap->mu);
}

/* Calls the channel outside the lock (caller holds mu; it is held again on
 * return). False when there is no channel. */
static bool channel_enter(cdsh_approvals *ap, cdsh_approval_channel *out)
{
    if (!ap->has_channel)
        return false;
    *out = ap->channel;
    ap->in_callback++;
    return true;
}

static void channel_leave(cdsh_approvals *ap)
{
    ap->in_callback--;
    pthread_cond_broadcast(&ap->cv);
}

static json_t *request_new(const char *id, const char *session_id, const char *source,
                           const char *title, const char *description, const char *tool_name,
                           const json_t *options)
{
    char iso[CDSH_ISO8601_MAX];
    cdsh_clock_format_iso8601(cdsh_clock_wall_ms(), iso, sizeof iso);
    json_t *opts = json_array();
    size_t i;
    json_t *o;
    json_array_foreach(options, i, o) {
        const char *oid = json_string_value(json_object_get(o, "optionId"));
        const char *name = json_string_value(json_object_get(o, "name"));
        if (!oid)
            continue;
        json_array_append_new(opts, json_pack("{s:s, s:s, s:s?}", "optionId", oid, "name",
                                              name ? name : oid, "kind",
                                              json_string_value(json_object_get(o, "kind"))));
    }
    return json_pack("{s:s, s:s, s:s, s:s, s:s?, s:s?, s:o, s:s}", "id", id, "sessionId",
                     session_id, "source", source, "title", title, "description", description,
                     "toolName", tool_name, "options", opts, "createdAt", iso);
}

char *cdsh_approvals_ask(cdsh_approvals *ap, const char *session_id, const char *source,
                         const char *title, const char *description, const char *tool_name,
                         const json_t *options, cdsh_cancel *cancel, const char **outcome)
{
    const char *why = "unavailable";
    char *chosen = NULL;
    if (outcome)
        *outcome = why;
    if (!ap || !json_array_size(options))
        return NULL;
    pending *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->id = cdsh_random_id_dup("ap-");
    p->session_id = strdup(session_id ? session_id : "");
    if (p->id && p->session_id)
        p->request =
            request_new(p->id, p->session_id, source ? source : "tool",
                        title && *title ? title : "(untitled)", description, tool_name, options);
    if (!p->request || !json_array_size(json_object_get(p->request, "options"))) {
        json_decref(p->request);
        free(p->id);
        free(p->session_id);
        free(p);
        return NULL;
    }
    uint64_t sub = cdsh_cancel_subscribe(cancel, wake, ap);
    int64_t deadline = cdsh_clock_mono_ms() + ap->timeout_ms;
    cdsh_approval_channel ch;
    pthread_mutex_lock(&ap->mu);
    p->next = ap->list;
    ap->list = p;
    if (ap->closed || cdsh_cancel_is_fired(cancel)) {
        end_locked(ap, p, "cancelled", NULL);
    } else if (!channel_enter(ap, &ch)) {
        end_locked(ap, p, "unavailable", NULL);
    } else {
        pthread_mutex_unlock(&ap->mu);
        int rc = ch.present(ch.ud, p->request);
        pthread_mutex_lock(&ap->mu);
        channel_leave(ap);
        if (rc < 0)
            end_locked(ap, p, "unavailable", NULL);
    }
    while (!p->outcome) {
        if (cdsh_cancel_is_fired(cancel) || ap->closed) {
            end_locked(ap, p, "cancelled", NULL);
            break;
        }
        int64_t now = cdsh_clock_mono_ms();
        if (now >= deadline) {
            end_locked(ap, p, "timeout", NULL);
            break;
        }
        /* Slices: a token without a subscription (ENOMEM) is still polled. */
        int64_t slice = deadline - now < 200 ? deadline - now : 200;
        struct timespec ts;
        cdsh_clock_deadline(CLOCK_REALTIME, slice, &ts);
        pthread_cond_timedwait(&ap->cv, &ap->mu, &ts);
    }
    for (pending **pp = &ap->list; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    why = p->outcome;
    chosen = p->option_id;
    json_t *res = json_pack("{s:s, s:s, s:s, s:s?}", "id", p->id, "sessionId", p->session_id,
                            "outcome", why, "optionId", chosen);
    bool entered = channel_enter(ap, &ch);
    pthread_mutex_unlock(&ap->mu);
    cdsh_cancel_unsubscribe(cancel, sub);
    if (entered && ch.resolved && res)
        ch.resolved(ch.ud, res);
    if (entered) {
        pthread_mutex_lock(&ap->mu);
        channel_leave(ap);
        pthread_mutex_unlock(&ap->mu);
    }
    json_decref(res);
    json_decref(p->request);
    free(p->id);
    free(p->session_id);
    free(p);
    if (outcome)
        *outcome = why;
    return chosen;
}

/* ---- the tool registry's approval service ------------------------------------- */

static const char *session_of(const cdsh_scope *scope)
{
    for (const cdsh_scope *s = scope; s; s = cdsh_scope_parent(s))
        if (strncmp(cdsh_scope_id(s), "s-", 2) == 0)
            return cdsh_scope_id(s);
    return cdsh_scope_id(scope);
}

static cdsh_approval_outcome tool_request(void *ud, const cdsh_tool_exec *exec, const char *reason)
{
    cdsh_approvals *ap = ud;
    json_t *options =
        json_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:s}]", "optionId", CDSH_APPROVAL_TOOL_ALLOW,
                  "name", "Allow once", "kind", "allow_once", "optionId", CDSH_APPROVAL_TOOL_REJECT,
                  "name", "Reject", "kind", "reject_once");
    char *args = exec->args ? cdsh_json_dump_compact_dup(exec->args) : NULL;
    size_t n = (reason ? strlen(reason) : 0) + (args ? strlen(args) : 0) + 32;
    char *desc = malloc(n);
    if (desc)
        snprintf(desc, n, "%s%sarguments: %s", reason ? reason : "", reason ? "\n" : "",
                 args ? args : "{}");
    const char *outcome = NULL;
    char *chosen = cdsh_approvals_ask(ap, session_of(exec->agent), "tool", exec->name, desc,
                                      exec->name, options, exec->cancel, &outcome);
    cdsh_approval_outcome r = cdsh_approvals_tool_outcome(chosen, outcome);
    free(chosen);
    free(desc);
    free(args);
    json_decref(options);
    return r;
}

cdsh_approval_outcome cdsh_approvals_tool_outcome(const char *option_id, const char *outcome)
{
    if (!option_id)
        return outcome && strcmp(outcome, "unavailable") == 0 ? CDSH_APPROVAL_UNAVAILABLE
                                                              : CDSH_APPROVAL_CANCELLED;
    return strcmp(option_id, CDSH_APPROVAL_TOOL_ALLOW) == 0 ? CDSH_APPROVAL_ALLOWED_ONCE
                                                            : CDSH_APPROVAL_REJECTED;
}

int cdsh_approvals_install(cdsh_approvals *ap, cdsh_tools *tools, cdsh_disposer_t *out,
                           cdsh_error *err)
{
    if (!ap || !tools)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT", "approvals: tools are required");
    cdsh_approval_service svc = {tool_request, ap};
    return cdsh_tools_set_approval(tools, &svc, out, err);
}

cdsh_approvals *cdsh_approvals_installed(cdsh_tools *tools)
{
    cdsh_approval_service svc;
    if (!tools || !cdsh_tools_approval_current(tools, &svc) || svc.request != tool_request)
        return NULL;
    return svc.ud;
}

char *cdsh_approvals_option_for_dup(const json_t *params, cdsh_approval_outcome outcome)
{
    const char *prefs[3];
    if (outcome == CDSH_APPROVAL_ALLOWED_ONCE) {
        prefs[0] = "allow_once";
        prefs[1] = "allow_always";
        prefs[2] = "allow";
    } else if (outcome == CDSH_APPROVAL_REJECTED || outcome == CDSH_APPROVAL_UNAVAILABLE) {
        prefs[0] = "reject_once";
        prefs[1] = "reject_always";
        prefs[2] = "reject";
    } else {
        return NULL;
    }
    for (int p = 0; p < 3; p++) {
        size_t i;
        json_t *o;
        json_array_foreach(json_object_get(params, "options"), i, o) {
            const char *kind = json_string_value(json_object_get(o, "kind"));
            const char *id = json_string_value(json_object_get(o, "optionId"));
            if (!kind || !id)
                continue;
            bool match = p < 2 ? strcmp(kind, prefs[p]) == 0
                               : strncmp(kind, prefs[p], strlen(prefs[p])) == 0;
            if (match)
                return strdup(id);
        }
    }
    return NULL;
}
