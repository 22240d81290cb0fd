/* conn.c — the ACP client connection: process + stdout tee (raw lines for
 * evidence, parser rejects) + JSON-RPC peer, session table, prompt turns
 * with idle/overall gates, and the agent→client callbacks. Engine rows,
 * pools and state files live in plugins/acp; this file never reads them. */
#include "proto/acp/conn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/log.h"
#include "base/process.h"
#include "base/redact.h"
#include "base/strbuf.h"
#include "proto/acp/classify.h"
#include "proto/acp/fsconfine.h"
#include "proto/acp/terminal.h"

#define RAW_LINES_MAX 5000
#define REJECTS_MAX 200
#define REJECT_LINE_MAX ((size_t)64 * 1024)
#define STDERR_TAIL 4096
#define LINE_MAX_BYTES ((size_t)16 * 1024 * 1024)

typedef struct perm_tok {
    cdsh_cancel *tok;
    struct perm_tok *next;
} perm_tok;

typedef struct acp_session {
    char *id;
    char *cwd;
    cdsh_acp_session_handlers h;
    json_t *modes;          /* SessionModeState or NULL */
    json_t *config_options; /* array or NULL */
    int refs;
    bool removed;
    /* the running turn */
    bool prompting;
    bool cancel_requested;
    bool turn_cancelled; /* session/cancel sent: new permission asks are refused */
    int64_t last_update_ms;
    uint64_t updates;
    perm_tok *perms;
    struct acp_session *next;
} acp_session;

struct cdsh_acp_conn {
    char *name;
    cdsh_process *proc;
    cdsh_jsonrpc *rpc;
    pthread_t tee;
    bool tee_started;
    int pipe_r, pipe_w;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    acp_session *sessions;
    json_t *init_result;
    int64_t init_latency_ms;
    json_t *raw_lines, *rejects, *callbacks;
    bool record, fs_read, fs_write, terminal;
    cdsh_acp_terminals *terms; /* the agent's terminal commands, by session */
    int64_t request_timeout_ms, grace_ms;
    cdsh_cancel *cancel; /* borrowed (opts.cancel): ends a waiting handshake step */
    char stderr_tail[STDERR_TAIL];
    size_t stderr_len;
    bool stderr_done; /* the agent's stderr reached EOF (set by the reader) */
    uint64_t stderr_total; /* bytes of stderr seen so far */
    /* Responses are routed by the reader but notifications by the
     * dispatcher, so a prompt's answer can overtake the updates sent before
     * it. The tee counts notifications in wire order; handlers count them
     * done; a finished prompt waits for the count seen before its answer. */
    uint64_t notif_seen, notif_done;
};

static const char *const update_names[] = {
    [CDSH_ACP_UPDATE_USER_MESSAGE_CHUNK] = "user_message_chunk",
    [CDSH_ACP_UPDATE_AGENT_MESSAGE_CHUNK] = "agent_message_chunk",
    [CDSH_ACP_UPDATE_AGENT_THOUGHT_CHUNK] = "agent_thought_chunk",
    [CDSH_ACP_UPDATE_TOOL_CALL] = "tool_call",
    [CDSH_ACP_UPDATE_TOOL_CALL_UPDATE] = "tool_call_update",
    [CDSH_ACP_UPDATE_PLAN] = "plan",
    [CDSH_ACP_UPDATE_AVAILABLE_COMMANDS] = "available_commands_update",
    [CDSH_ACP_UPDATE_CURRENT_MODE] = "current_mode_update",
    [CDSH_ACP_UPDATE_CONFIG_OPTION] = "config_option_update",
    [CDSH_ACP_UPDATE_SESSION_INFO] = "session_info_update",
    [CDSH_ACP_UPDATE_USAGE] = "usage_update",
    [CDSH_ACP_UPDATE_NOTICE] = "notice",
    [CDSH_ACP_UPDATE_COMPACTION] = "compaction_update",
    [CDSH_ACP_UPDATE_COMPACTION_SUMMARY_CHUNK] = "compaction_summary_chunk",
};

/* Maps the wire name ("agent_message_chunk") to the enum; NULL → UNKNOWN. */
static cdsh_acp_update_kind update_kind_parse(const char *name)
{
    if (!name)
        return CDSH_ACP_UPDATE_UNKNOWN;
    for (size_t i = 1; i < sizeof update_names / sizeof update_names[0]; i++)
        if (update_names[i] && strcmp(update_names[i], name) == 0)
            return (cdsh_acp_update_kind)i;
    return CDSH_ACP_UPDATE_UNKNOWN;
}

/* ---- sessions ----------------------------------------------------------- */

static void session_free(acp_session *s)
{
    free(s->id);
    free(s->cwd);
    json_decref(s->modes);
    json_decref(s->config_options);
    free(s);
}

/* Borrowed-with-ref lookup; release with session_put. */
static acp_session *session_get(cdsh_acp_conn *c, const char *id)
{
    acp_session *found = NULL;
    if (!id)
        return NULL;
    pthread_mutex_lock(&c->mu);
    for (acp_session *s = c->sessions; s; s = s->next)
        if (strcmp(s->id, id) == 0) {
            s->refs++;
            found = s;
            break;
        }
    pthread_mutex_unlock(&c->mu);
    return found;
}

static void session_put(cdsh_acp_conn *c, acp_session *s)
{
    bool dead;
    pthread_mutex_lock(&c->mu);
    dead = --s->refs == 0 && s->removed;
    pthread_mutex_unlock(&c->mu);
    if (dead)
        session_free(s);
}

static void count_callback(cdsh_acp_conn *c, const char *prefix, const char *name)
{
    char key[160];
    snprintf(key, sizeof key, "%s%s", prefix, name ? name : "?");
    pthread_mutex_lock(&c->mu);
    json_t *n = json_object_get(c->callbacks, key);
    json_object_set_new(c->callbacks, key, json_integer(n ? json_integer_value(n) + 1 : 1));
    pthread_mutex_unlock(&c->mu);
    if (!*prefix) /* CDSH_LOG=debug shows which calls the agent delegated (the e2e matrix reads it) */
        cdsh_log_debug("acp", "%s: agent called %s", c->name, key);
}

/* ---- stdout tee ----------------------------------------------------------- */

static void tee_line(cdsh_acp_conn *c, const char *line, size_t len)
{
    json_error_t jerr;
    json_t *v = json_loadb(line, len, 0, &jerr);
    bool ok = v && json_is_object(v);
    bool notification =
        ok && json_is_string(json_object_get(v, "method")) && !json_object_get(v, "id");
    json_decref(v);
    pthread_mutex_lock(&c->mu);
    if (notification)
        c->notif_seen++;
    if (c->record && json_array_size(c->raw_lines) < RAW_LINES_MAX)
        json_array_append_new(c->raw_lines, json_stringn_nocheck(line, len));
    if (!ok && json_array_size(c->rejects) < REJECTS_MAX)
        json_array_append_new(
            c->rejects, json_stringn_nocheck(line, len < REJECT_LINE_MAX ? len : REJECT_LINE_MAX));
    pthread_mutex_unlock(&c->mu);
    if (!ok)
        cdsh_log_write(CDSH_LOG_DEBUG, "acp", "%s: line rejected by the parser (%zu bytes)",
                       c->name, len);
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0 && fd >= 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                struct pollfd pf = {.fd = fd, .events = POLLOUT};
                poll(&pf, 1, 100);
                continue;
            }
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

#define STDERR_GRACE_MS 500

/* Lets the JSON-RPC peer see the agent's EOF (idempotent). */
static void signal_eof(cdsh_acp_conn *c)
{
    pthread_mutex_lock(&c->mu);
    int w = c->pipe_w;
    c->pipe_w = -1;
    pthread_mutex_unlock(&c->mu);
    if (w >= 0)
        close(w);
}

static void *tee_main(void *arg)
{
    cdsh_acp_conn *c = arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    int out = cdsh_process_stdout_fd(c->proc), errfd = cdsh_process_stderr_fd(c->proc);
    cdsh_strbuf line;
    cdsh_strbuf_init(&line);
    bool overflow = false;
    char buf[8192];
    /* When stdout ends, EOF reaches the peer only once stderr has ended too
     * (or after a short grace): an agent that dies at start writes why on
     * stderr, and the failed call's message must be able to include it. */
    int64_t eof_deadline = 0;
    while (out >= 0 || errfd >= 0) {
        if (out < 0 && (errfd < 0 || cdsh_clock_mono_ms() >= eof_deadline))
            signal_eof(c);
        struct pollfd pf[2] = {{.fd = out, .events = POLLIN}, {.fd = errfd, .events = POLLIN}};
        int wait_ms = -1;
        if (out < 0 && c->pipe_w >= 0) {
            int64_t left = eof_deadline - cdsh_clock_mono_ms();
            wait_ms = left > 0 ? (int)left : 0;
        }
        if (poll(pf, 2, wait_ms) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (errfd >= 0 && (pf[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t n = read(errfd, buf, sizeof buf);
            if (n <= 0 && !(n < 0 && errno == EINTR)) {
                errfd = -1;
                pthread_mutex_lock(&c->mu);
                c->stderr_done = true;
                pthread_cond_broadcast(&c->cv);
                pthread_mutex_unlock(&c->mu);
            } else if (n > 0) {
                pthread_mutex_lock(&c->mu);
                for (ssize_t i = 0; i < n; i++) {
                    if (c->stderr_len == STDERR_TAIL) {
                        memmove(c->stderr_tail, c->stderr_tail + 1024, STDERR_TAIL - 1024);
                        c->stderr_len -= 1024;
                    }
                    c->stderr_tail[c->stderr_len++] = buf[i];
                }
                c->stderr_total += (uint64_t)n;
                pthread_cond_broadcast(&c->cv);
                pthread_mutex_unlock(&c->mu);
            }
        }
        if (out >= 0 && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t n = read(out, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                out = -1;
                eof_deadline = cdsh_clock_mono_ms() + STDERR_GRACE_MS;
                continue;
            }
            for (ssize_t i = 0; i < n; i++) {
                if (buf[i] != '\n') {
                    if (line.len < LINE_MAX_BYTES)
                        cdsh_strbuf_append_char(&line, buf[i]);
                    else
                        overflow = true;
                    continue;
                }
                size_t len = line.len;
                const char *p = line.data ? line.data : "";
                if (len > 0 && p[len - 1] == '\r')
                    len--;
                bool blank = true;
                for (size_t k = 0; k < len; k++)
                    if (p[k] != ' ' && p[k] != '\t')
                        blank = false;
                if (!blank && !overflow)
                    tee_line(c, p, len);
                write_all(c->pipe_w, p, line.len);
                write_all(c->pipe_w, "\n", 1);
                cdsh_strbuf_reset(&line);
                overflow = false;
            }
        }
    }
    signal_eof(c);
    cdsh_strbuf_deinit(&line);
    return NULL;
}

/* ---- helpers ----------------------------------------------------------------- */

/* err from a failed call, with the agent's own message (and data.details)
 * verbatim for remote errors. */
static int remote_fail(int rc, const char *method, const cdsh_jsonrpc_remote_error *rerr,
                       cdsh_error *err)
{
    if (rc != CDSH_EPROTO || !rerr || !rerr->message || !err || strcmp(err->code, "RPC_ERROR") != 0)
        return rc;
    const char *details = NULL;
    if (json_is_string(rerr->data))
        details = json_string_value(rerr->data);
    else if (json_is_object(rerr->data) && json_is_string(json_object_get(rerr->data, "details")))
        details = json_string_value(json_object_get(rerr->data, "details"));
    if (details && strcmp(details, rerr->message) != 0)
        return cdsh_error_set(err, rc, "RPC_ERROR", "%s failed: %s (%lld): %s", method,
                              rerr->message, (long long)rerr->code, details);
    return cdsh_error_set(err, rc, "RPC_ERROR", "%s failed: %s (%lld)", method, rerr->message,
                          (long long)rerr->code);
}

/* The last lines of the agent's stderr, redacted, on one line (owned; NULL
 * when there is none): the cause an agent gives only there (Claude Code as
 * root: "--dangerously-skip-permissions cannot be used with root/sudo
 * privileges"). Waits up to wait_ms for stderr written just before the
 * failure to arrive (it travels on another pipe than the reply). */
static char *stderr_cause_dup(cdsh_acp_conn *c, uint64_t since, bool until_eof, int64_t wait_ms)
{
    int64_t deadline = cdsh_clock_mono_ms() + wait_ms;
    pthread_mutex_lock(&c->mu);
    while ((until_eof || c->stderr_total == since) && !c->stderr_done) {
        int64_t left = deadline - cdsh_clock_mono_ms();
        if (left <= 0)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += left / 1000;
        ts.tv_nsec += (left % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    }
    /* only what the agent wrote since the failed step began */
    uint64_t fresh = c->stderr_total - since;
    size_t len = c->stderr_len, keep = len < 400 ? len : 400;
    if (fresh < keep)
        keep = (size_t)fresh;
    size_t from = len - keep;
    char *raw = strndup(c->stderr_tail + from, len - from);
    pthread_mutex_unlock(&c->mu);
    if (!raw)
        return NULL;
    /* one line: newlines become " | ", other controls spaces, and a cut
     * UTF-8 sequence at the front is dropped by the sanitiser below */
    cdsh_strbuf b;
    cdsh_strbuf_init(&b);
    const char *p = raw;
    while (*p == '\n' || *p == '\r' || *p == ' ')
        p++;
    for (; *p; p++) {
        if (*p == '\n' || *p == '\r') {
            while (p[1] == '\n' || p[1] == '\r')
                p++;
            if (p[1])
                cdsh_strbuf_append(&b, " | ", 3);
        } else {
            cdsh_strbuf_append_char(&b, (unsigned char)*p < 0x20 ? ' ' : *p);
        }
    }
    free(raw);
    char *red = b.len ? cdsh_redact_dupn(b.data, b.len, NULL) : NULL;
    cdsh_strbuf_deinit(&b);
    if (!red)
        return NULL;
    json_t *js = json_string_nocheck(red);
    json_t *clean = js ? cdsh_json_sanitize_dup(js) : NULL;
    char *out = clean ? strdup(json_string_value(clean)) : NULL;
    json_decref(js);
    json_decref(clean);
    free(red);
    return out;
}

/* Adds the agent's stderr cause to a failed handshake step's message. */
static void add_stderr_cause(cdsh_acp_conn *c, uint64_t since, int rc, cdsh_error *err)
{
    if (!err || rc == CDSH_ENOMEM || rc == CDSH_EINVAL || rc == CDSH_EUNSUPPORTED ||
        strstr(err->message, "; agent stderr: "))
        return;
    bool died = rc == CDSH_ECLOSED;
    char *cause = stderr_cause_dup(c, since, died, died ? STDERR_GRACE_MS : 300);
    if (cause && *cause) {
        char msg[CDSH_ERROR_MESSAGE_MAX + 64];
        /* Claude Code as root (its ACP adapter passes a bypass flag when
         * IS_SANDBOX is merely non-empty; Claude Code accepts it as root only
         * when IS_SANDBOX is exactly 1): say what to do. */
        const char *hint = strstr(cause, "cannot be used with root/sudo privileges")
                               ? "; as root, set IS_SANDBOX=1 (exactly) in the engine's env"
                               : "";
        snprintf(msg, sizeof msg, "%.520s; agent stderr: %.420s%s", err->message, cause, hint);
        cdsh_error_set(err, rc, err->code, "%s", msg);
    } else if (rc == CDSH_ETIMEDOUT) {
        char msg[CDSH_ERROR_MESSAGE_MAX + 64];
        snprintf(msg, sizeof msg, "%.600s; the agent wrote nothing on stderr", err->message);
        cdsh_error_set(err, rc, err->code, "%s", msg);
    }
    free(cause);
}

/* An auth failure (-32000, or an error whose words say so: OpenCode answers
 * a rejected key with -32603 "Incorrect API key provided") is UNAUTHORIZED
 * and names the login methods the agent advertised in initialize (its
 * authMethods: id and name). */
static void unauthorized(cdsh_acp_conn *c, cdsh_error *err)
{
    cdsh_strbuf b;
    cdsh_strbuf_init(&b);
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(c->init_result, "authMethods"), i, m) {
        const char *id = json_string_value(json_object_get(m, "id"));
        const char *name = json_string_value(json_object_get(m, "name"));
        if (!id)
            continue;
        if (b.len)
            cdsh_strbuf_append(&b, ", ", 2);
        cdsh_strbuf_append(&b, id, strlen(id));
        if (name && strcmp(name, id) != 0) {
            cdsh_strbuf_append(&b, " (", 2);
            cdsh_strbuf_append(&b, name, strlen(name));
            cdsh_strbuf_append_char(&b, ')');
        }
    }
    char msg[CDSH_ERROR_MESSAGE_MAX + 64];
    if (b.len)
        snprintf(msg, sizeof msg, "%.500s; the agent's login methods: %.400s", err->message,
                 b.data);
    else
        snprintf(msg, sizeof msg, "%.500s; the agent advertises no login method", err->message);
    cdsh_error_set(err, err->rc, "UNAUTHORIZED", "%s", msg);
    cdsh_strbuf_deinit(&b);
}

int cdsh_acp_conn_request(cdsh_acp_conn *conn, const char *method, json_t *params,
                          int64_t timeout_ms, cdsh_cancel *cancel, json_t **result,
                          cdsh_jsonrpc_remote_error *rerr, cdsh_error *err)
{
    if (!conn || !method)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "acp request needs a method");
    cdsh_jsonrpc_remote_error local = {0};
    cdsh_jsonrpc_remote_error *re = rerr ? rerr : &local;
    json_t *res = NULL;
    int rc = cdsh_jsonrpc_call(conn->rpc, method, params,
                               timeout_ms > 0 ? timeout_ms : conn->request_timeout_ms, cancel, &res,
                               re, err);
    if (rc < 0)
        rc = remote_fail(rc, method, re, err);
    if (rc == CDSH_EPROTO && re->message && err && strcmp(err->code, "RPC_ERROR") == 0 &&
        (re->code == -32000 || strcasestr(re->message, "authentication required") ||
         strcmp(cdsh_acp_classify_error(rc, err->code, err->message), "UNAUTHORIZED") == 0))
        unauthorized(conn, err);
    cdsh_jsonrpc_remote_error_clear(&local);
    if (rc == 0 && result)
        *result = res;
    else
        json_decref(res);
    return rc;
}

/* ---- incoming: session/update --------------------------------------------------- */

static void notif_done(cdsh_acp_conn *c)
{
    pthread_mutex_lock(&c->mu);
    c->notif_done++;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void handle_update(cdsh_acp_conn *c, cdsh_jsonrpc_request *req);

static void on_update(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)peer;
    handle_update(arg, req);
    if (cdsh_jsonrpc_request_is_notification(req))
        notif_done(arg);
}

static void handle_update(cdsh_acp_conn *c, cdsh_jsonrpc_request *req)
{
    json_t *params = cdsh_jsonrpc_request_params(req);
    json_t *update = json_object_get(params, "update");
    const char *kind_name = json_string_value(json_object_get(update, "sessionUpdate"));
    count_callback(c, "sessionUpdate:", kind_name);
    acp_session *s = session_get(c, json_string_value(json_object_get(params, "sessionId")));
    if (!s || !json_is_object(update)) {
        cdsh_log_write(CDSH_LOG_DEBUG, "acp", "%s: update for an unknown session dropped", c->name);
        if (s)
            session_put(c, s);
        return;
    }
    cdsh_acp_update_kind kind = update_kind_parse(kind_name);
    pthread_mutex_lock(&c->mu);
    s->last_update_ms = cdsh_clock_mono_ms();
    s->updates++;
    if (kind == CDSH_ACP_UPDATE_CONFIG_OPTION &&
        json_is_array(json_object_get(update, "configOptions"))) {
        json_decref(s->config_options);
        s->config_options = json_deep_copy(json_object_get(update, "configOptions"));
    } else if (kind == CDSH_ACP_UPDATE_CURRENT_MODE && json_is_object(s->modes) &&
               json_is_string(json_object_get(update, "currentModeId"))) {
        json_object_set(s->modes, "currentModeId", json_object_get(update, "currentModeId"));
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (kind == CDSH_ACP_UPDATE_UNKNOWN)
        cdsh_log_write(CDSH_LOG_DEBUG, "acp", "%s: unknown update kind \"%s\" ignored", c->name,
                       kind_name ? kind_name : "?");
    if (s->h.on_update)
        s->h.on_update(s->h.ud, kind, kind_name ? kind_name : "", update);
    session_put(c, s);
}

/* ---- incoming: session/request_permission ------------------------------------------ */

static void respond_cancelled(cdsh_jsonrpc_request *req)
{
    json_t *r = json_pack("{s:{s:s}}", "outcome", "outcome", "cancelled");
    cdsh_jsonrpc_respond(req, r, NULL);
    json_decref(r);
}

static bool option_exists(const json_t *params, const char *option_id)
{
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(params, "options"), i, o) {
        const char *id = json_string_value(json_object_get(o, "optionId"));
        if (id && strcmp(id, option_id) == 0)
            return true;
    }
    return false;
}

static void on_permission(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)peer;
    cdsh_acp_conn *c = arg;
    count_callback(c, "", "session/request_permission");
    json_t *params = cdsh_jsonrpc_request_params(req);
    acp_session *s = session_get(c, json_string_value(json_object_get(params, "sessionId")));
    if (!s) {
        respond_cancelled(req); /* fail closed: nobody to ask */
        return;
    }
    perm_tok pt = {.tok = cdsh_cancel_new(cdsh_jsonrpc_request_cancel_get(req))};
    bool refuse;
    pthread_mutex_lock(&c->mu);
    refuse = !s->h.on_permission || s->turn_cancelled || !pt.tok;
    if (!refuse) {
        pt.next = s->perms;
        s->perms = &pt;
    }
    pthread_mutex_unlock(&c->mu);
    char *option = NULL;
    if (!refuse)
        option = s->h.on_permission(s->h.ud, params, pt.tok);
    if (!refuse) {
        pthread_mutex_lock(&c->mu);
        for (perm_tok **pp = &s->perms; *pp; pp = &(*pp)->next)
            if (*pp == &pt) {
                *pp = pt.next;
                break;
            }
        s->last_update_ms = cdsh_clock_mono_ms(); /* the idle gate restarts after the answer */
        pthread_mutex_unlock(&c->mu);
    }
    bool fired = cdsh_cancel_is_fired(pt.tok);
    cdsh_cancel_free(pt.tok);
    if (!option || fired || !option_exists(params, option)) {
        free(option);
        respond_cancelled(req);
    } else {
        json_t *r =
            json_pack("{s:{s:s,s:s}}", "outcome", "outcome", "selected", "optionId", option);
        cdsh_jsonrpc_respond(req, r, NULL);
        json_decref(r);
        free(option);
    }
    session_put(c, s);
}

/* ---- incoming: fs ------------------------------------------------------------------- */

/* The session a callback names (with a reference), or NULL after answering. */
static acp_session *callback_session(cdsh_acp_conn *c, cdsh_jsonrpc_request *req)
{
    json_t *params = cdsh_jsonrpc_request_params(req);
    acp_session *s = session_get(c, json_string_value(json_object_get(params, "sessionId")));
    if (!s)
        cdsh_jsonrpc_respond_error(req, -32002, "Resource not found: unknown session", NULL, NULL);
    return s;
}

/* path (relative to the session directory or absolute) confined to the
 * session directory once ".." and symlinks are resolved: the owned absolute
 * path, or NULL after answering. Used by the fs calls and terminal/create's cwd. */
static char *confine_dup(const acp_session *s, cdsh_jsonrpc_request *req, const char *path)
{
    char *full = cdsh_fs_path_join_dup(s->cwd, path);
    if (!full || !cdsh_fs_path_is_inside(s->cwd, full)) {
        char msg[600];
        snprintf(msg, sizeof msg,
                 "Permission denied: %.256s is outside the session directory %.256s", path, s->cwd);
        cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_INVALID_PARAMS, msg, NULL, NULL);
        free(full);
        return NULL;
    }
    return full;
}

/* path relative to root when the normalised path lies lexically inside it
 * (borrowed from full), or NULL. */
static const char *rel_inside(const char *root, const char *full)
{
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/')
        n--;
    if (strcmp(root, "/") == 0)
        return full + 1;
    if (strncmp(full, root, n) != 0 || (full[n] != '\0' && full[n] != '/'))
        return NULL;
    return full[n] ? full + n + 1 : full + n;
}

/* The path of a fs request relative to the session directory (owned, "" for
 * the directory itself), or NULL after answering. Only lexical here: the
 * file calls then resolve it beneath the directory's fd without following
 * any symlink (fsconfine.c), so a swapped path can never lead outside. */
static char *fs_rel(cdsh_acp_conn *c, cdsh_jsonrpc_request *req, acp_session **out)
{
    const char *path = json_string_value(json_object_get(cdsh_jsonrpc_request_params(req), "path"));
    acp_session *s = callback_session(c, req);
    if (!s)
        return NULL;
    if (!path || !*path || strlen(path) != json_string_length(json_object_get(
                                                 cdsh_jsonrpc_request_params(req), "path"))) {
        session_put(c, s);
        cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_INVALID_PARAMS,
                                   "Invalid params: path required (a string without NUL)", NULL,
                                   NULL);
        return NULL;
    }
    char *full = cdsh_fs_path_join_dup(s->cwd, path);
    char *root = cdsh_fs_path_normalize_dup(s->cwd);
    const char *rel = full && root ? rel_inside(root, full) : NULL;
    char *real = NULL;
    if (full && root && !rel && (real = realpath(s->cwd, NULL)) != NULL)
        rel = rel_inside(real, full); /* the agent may name the directory's real path */
    char *dup = rel ? strdup(rel) : NULL;
    free(full);
    free(root);
    free(real);
    if (!dup) {
        char msg[600];
        snprintf(msg, sizeof msg,
                 "Permission denied: %.256s is outside the session directory %.256s", path, s->cwd);
        cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_INVALID_PARAMS, msg, NULL, NULL);
        session_put(c, s);
        return NULL;
    }
    *out = s;
    return dup;
}

/* JSON-RPC code for a failed confined file call. */
static int64_t fs_code(int rc)
{
    switch (rc) {
    case CDSH_ENOTFOUND: return -32002;
    case CDSH_EPERM:
    case CDSH_EINVAL:
    case CDSH_ETOOBIG: return CDSH_JSONRPC_INVALID_PARAMS;
    default: return CDSH_JSONRPC_INTERNAL_ERROR;
    }
}

static void on_fs_read(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)peer;
    cdsh_acp_conn *c = arg;
    count_callback(c, "", "fs/read_text_file");
    if (!c->fs_read) {
        cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_METHOD_NOT_FOUND,
                                   "Method not found: fs/read_text_file", NULL, NULL);
        return;
    }
    acp_session *s = NULL;
    char *rel = fs_rel(c, req, &s);
    if (!rel)
        return;
    json_t *params = cdsh_jsonrpc_request_params(req);
    char *data = NULL;
    size_t len = 0;
    cdsh_error e = {0};
    int rc = cdsh_acp_fs_read_beneath(s->cwd, rel, CDSH_ACP_FS_MAX_BYTES, &data, &len, &e);
    if (rc == CDSH_ENOTFOUND && *rel) {
        /* A file that does not exist reads as empty, as in Zed (the file
         * opens as a new, empty buffer): agents read before they write, and
         * Gemini CLI cannot recognise an error (its SDK rejects with a plain
         * object), so only this lets it create files. */
        rc = 0;
        data = strdup("");
        if (!data)
            rc = cdsh_error_set(&e, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    }
    if (rc < 0) {
        cdsh_jsonrpc_respond_error(req, fs_code(rc), e.message, NULL, NULL);
        goto done;
    }
    /* line (1-based) and limit select whole lines. */
    json_int_t line = json_integer_value(json_object_get(params, "line"));
    json_int_t limit = json_integer_value(json_object_get(params, "limit"));
    const char *start = data, *end = data + len;
    if (line > 1) {
        for (json_int_t n = 1; n < line && start < end; n++) {
            const char *nl = memchr(start, '\n', (size_t)(end - start));
            start = nl ? nl + 1 : end;
        }
    }
    if (limit > 0) {
        const char *p = start;
        for (json_int_t n = 0; n < limit && p < end; n++) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            p = nl ? nl + 1 : end;
        }
        end = p;
    }
    /* Bytes that are not UTF-8 (and NULs) cannot travel in a JSON string:
     * they are answered as U+FFFD, as editors show such a file. */
    json_t *raw = json_stringn_nocheck(start, (size_t)(end - start));
    json_t *content = raw ? cdsh_json_sanitize_dup(raw) : NULL;
    json_decref(raw);
    json_t *r = content ? json_object() : NULL;
    if (!r || json_object_set_new(r, "content", content) < 0 ||
        cdsh_jsonrpc_respond(req, r, NULL) < 0)
        cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_INTERNAL_ERROR,
                                   "Internal error: the file's content cannot be sent", NULL, NULL);
    json_decref(r);
done:
    free(data);
    free(rel);
    session_put(c, s);
}

static void on_fs_write(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)peer;
    cdsh_acp_conn *c = arg;
    count_callback(c, "", "fs/write_text_file");
    if (!c->fs_write) {
        cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_METHOD_NOT_FOUND,
                                   "Method not found: fs/write_text_file", NULL, NULL);
        return;
    }
    json_t *content = json_object_get(cdsh_jsonrpc_request_params(req), "content");
    if (!json_is_string(content)) {
        cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_INVALID_PARAMS,
                                   "Invalid params: content must be a string", NULL, NULL);
        return;
    }
    if (json_string_length(content) > CDSH_ACP_FS_MAX_BYTES) {
        cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_INVALID_PARAMS,
                                   "Invalid params: content exceeds the 4 MiB limit", NULL, NULL);
        return;
    }
    acp_session *s = NULL;
    char *rel = fs_rel(c, req, &s);
    if (!rel)
        return;
    cdsh_error e = {0};
    int rc = cdsh_acp_fs_write_beneath(s->cwd, rel, json_string_value(content),
                                       json_string_length(content), &e);
    if (rc < 0) {
        cdsh_jsonrpc_respond_error(req, fs_code(rc), e.message, NULL, NULL);
    } else {
        json_t *r = json_object();
        cdsh_jsonrpc_respond(req, r, NULL);
        json_decref(r);
    }
    free(rel);
    session_put(c, s);
}

/* ---- incoming: terminals ----------------------------------------------------------- */

static void on_terminal(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)peer;
    cdsh_acp_conn *c = arg;
    const char *method = cdsh_jsonrpc_request_method(req);
    count_callback(c, "", method);
    if (!c->terminal) {
        char msg[300];
        snprintf(msg, sizeof msg, "Method not found: %.200s", method);
        cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_METHOD_NOT_FOUND, msg, NULL, NULL);
        return;
    }
    acp_session *s = callback_session(c, req);
    if (!s)
        return;
    char *cwd = NULL;
    if (strcmp(method, "terminal/create") == 0) {
        json_t *jc = json_object_get(cdsh_jsonrpc_request_params(req), "cwd");
        if (jc && !json_is_null(jc) && (!json_is_string(jc) || !*json_string_value(jc))) {
            cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_INVALID_PARAMS,
                                       "Invalid params: cwd must be a path or null", NULL, NULL);
            session_put(c, s);
            return;
        }
        cwd = confine_dup(s, req, json_is_string(jc) ? json_string_value(jc) : s->cwd);
        if (!cwd) {
            session_put(c, s);
            return;
        }
    }
    cdsh_acp_terminals_handle(c->terms, req, s->id, cwd);
    pthread_mutex_lock(&c->mu);
    bool removed = s->removed;
    pthread_mutex_unlock(&c->mu);
    /* The session closed while the command was being started. */
    if (removed)
        cdsh_acp_terminals_release_session(c->terms, s->id);
    free(cwd);
    session_put(c, s);
}

/* $/cancel_request {requestId}: the agent gives up on one of its requests
 * (a terminal/wait_for_exit, a permission request). Its handler still
 * answers it (-32800 "Request cancelled" where it stops waiting). */
static void on_cancel_request(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    cdsh_acp_conn *c = arg;
    count_callback(c, "", cdsh_jsonrpc_request_method(req));
    const json_t *id = json_object_get(cdsh_jsonrpc_request_params(req), "requestId");
    if (id && cdsh_jsonrpc_cancel_incoming(peer, id, "the agent cancelled the request") != 0)
        cdsh_log_debug("acp", "$/cancel_request names no request in flight");
    if (cdsh_jsonrpc_request_is_notification(req))
        notif_done(c);
    else
        cdsh_jsonrpc_respond(req, NULL, NULL);
}

static void on_other(void *arg, cdsh_jsonrpc *peer, cdsh_jsonrpc_request *req)
{
    (void)peer;
    cdsh_acp_conn *c = arg;
    const char *m = cdsh_jsonrpc_request_method(req);
    count_callback(c, "unknown:", m);
    if (cdsh_jsonrpc_request_is_notification(req)) {
        notif_done(c);
        return;
    }
    char msg[300];
    snprintf(msg, sizeof msg, "Method not found: %.200s", m ? m : "?");
    cdsh_jsonrpc_respond_error(req, CDSH_JSONRPC_METHOD_NOT_FOUND, msg, NULL, NULL);
}

/* ---- lifecycle ------------------------------------------------------------------------ */

static void conn_destroy(cdsh_acp_conn *c)
{
    if (!c)
        return;
    cdsh_jsonrpc_free(c->rpc);
    c->rpc = NULL;
    /* After the dispatcher stopped, so no terminal/create can race it. */
    cdsh_acp_terminals_free(c->terms);
    c->terms = NULL;
    /* Nobody reads the pipe any more: close it so a tee blocked writing
     * into it gets EPIPE instead of hanging the join below. */
    if (c->pipe_r >= 0)
        close(c->pipe_r);
    c->pipe_r = -1;
    if (c->proc) {
        cdsh_process_close_stdin(c->proc);
        cdsh_process_terminate(c->proc, c->grace_ms, NULL, NULL);
    }
    if (c->tee_started)
        pthread_join(c->tee, NULL);
    if (c->pipe_r >= 0)
        close(c->pipe_r);
    if (c->pipe_w >= 0)
        close(c->pipe_w);
    cdsh_process_free(c->proc);
    while (c->sessions) {
        acp_session *s = c->sessions;
        c->sessions = s->next;
        session_free(s);
    }
    json_decref(c->init_result);
    json_decref(c->raw_lines);
    json_decref(c->rejects);
    json_decref(c->callbacks);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c->name);
    free(c);
}

void cdsh_acp_conn_free(cdsh_acp_conn *conn)
{
    conn_destroy(conn);
}

/* ---- handshake progress ---------------------------------------------------------- */

typedef struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    const cdsh_acp_conn_opts *opts;
    const char *name;
    const char *step;
    int64_t t0, budget_ms;
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    int64_t every = w->opts->wait_notice_ms > 0 ? w->opts->wait_notice_ms : CDSH_ACP_WAIT_NOTICE_MS;
    pthread_mutex_lock(&w->mu);
    for (int64_t next = w->t0 + every; !w->done; next += every) {
        while (!w->done && cdsh_clock_mono_ms() < next) {
            int64_t left = next - cdsh_clock_mono_ms();
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += left / 1000;
            ts.tv_nsec += (left % 1000) * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        }
        if (w->done)
            break;
        pthread_mutex_unlock(&w->mu);
        w->opts->on_wait(w->opts->wait_ud, w->name, w->step, cdsh_clock_mono_ms() - w->t0,
                         w->budget_ms);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* The request of one handshake step, with progress notices while it waits. */
static int handshake_request(cdsh_acp_conn *c, const cdsh_acp_conn_opts *opts, const char *method,
                             json_t *params, int64_t budget_ms, json_t **result, cdsh_error *err)
{
    waiter w = {.opts = opts, .name = c->name, .step = method, .t0 = cdsh_clock_mono_ms(),
                .budget_ms = budget_ms};
    pthread_t th;
    bool started = false;
    if (opts->on_wait) {
        pthread_mutex_init(&w.mu, NULL);
        pthread_cond_init(&w.cv, NULL);
        started = pthread_create(&th, NULL, waiter_main, &w) == 0;
    }
    int rc = cdsh_acp_conn_request(c, method, params, budget_ms, c->cancel, result, NULL, err);
    if (opts->on_wait) {
        pthread_mutex_lock(&w.mu);
        w.done = true;
        pthread_cond_broadcast(&w.cv);
        pthread_mutex_unlock(&w.mu);
        if (started)
            pthread_join(th, NULL);
        pthread_mutex_destroy(&w.mu);
        pthread_cond_destroy(&w.cv);
    }
    return rc;
}

int cdsh_acp_conn_open(const cdsh_acp_conn_opts *opts, cdsh_acp_conn **out, cdsh_error *err)
{
    if (!opts || !opts->argv || !opts->argv[0] || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "acp: a command is required");
    *out = NULL;
    int rc = CDSH_ENOMEM;
    cdsh_acp_conn *c = calloc(1, sizeof *c);
    if (!c)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    c->pipe_r = c->pipe_w = -1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->name = strdup(opts->name ? opts->name : opts->argv[0]);
    c->raw_lines = json_array();
    c->rejects = json_array();
    c->callbacks = json_object();
    c->record = opts->record;
    c->fs_read = opts->fs_read;
    c->fs_write = opts->fs_write;
    c->terminal = opts->terminal;
    c->terms = cdsh_acp_terminals_new();
    c->request_timeout_ms = opts->request_timeout_ms > 0 ? opts->request_timeout_ms : 300000;
    c->grace_ms = opts->dispose_grace_ms > 0 ? opts->dispose_grace_ms : 6000;
    c->cancel = opts->cancel;
    if (!c->name || !c->raw_lines || !c->rejects || !c->callbacks || !c->terms) {
        cdsh_error_set(err, rc, "NO_MEMORY", "out of memory");
        goto fail;
    }
    cdsh_process_opts po = {.stdin_mode = CDSH_PROCESS_PIPE,
                            .stdout_mode = CDSH_PROCESS_PIPE,
                            .stderr_mode = CDSH_PROCESS_PIPE,
                            .env_allow = opts->env_allow,
                            .env_set = opts->env_set,
                            .cwd = opts->cwd};
    rc = cdsh_process_spawn(opts->argv, &po, &c->proc, err);
    if (rc < 0)
        goto fail;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        rc = cdsh_error_set(err, CDSH_EIO, "IO_ERROR", "pipe: %s", strerror(errno));
        goto fail;
    }
    c->pipe_r = fds[0];
    c->pipe_w = fds[1];
    cdsh_jsonrpc_config rc_cfg = {.name = c->name};
    c->rpc = cdsh_jsonrpc_new(c->pipe_r, cdsh_process_stdin_fd(c->proc), &rc_cfg, err);
    if (!c->rpc) {
        rc = err ? err->rc : CDSH_EIO;
        goto fail;
    }
    if ((rc = cdsh_jsonrpc_handle(c->rpc, "session/update", on_update, c, err)) < 0 ||
        (rc = cdsh_jsonrpc_handle(c->rpc, "session/request_permission", on_permission, c, err)) <
            0 ||
        (rc = cdsh_jsonrpc_handle(c->rpc, "fs/read_text_file", on_fs_read, c, err)) < 0 ||
        (rc = cdsh_jsonrpc_handle(c->rpc, "fs/write_text_file", on_fs_write, c, err)) < 0)
        goto fail;
    static const char *const terminal_methods[] = {"terminal/create", "terminal/output",
                                                   "terminal/wait_for_exit", "terminal/kill",
                                                   "terminal/release"};
    for (size_t i = 0; i < sizeof terminal_methods / sizeof *terminal_methods; i++)
        if ((rc = cdsh_jsonrpc_handle(c->rpc, terminal_methods[i], on_terminal, c, err)) < 0)
            goto fail;
    if ((rc = cdsh_jsonrpc_handle(c->rpc, "$/cancel_request", on_cancel_request, c, err)) < 0)
        goto fail;
    cdsh_jsonrpc_handle_fallback(c->rpc, on_other, c);
    if (pthread_create(&c->tee, NULL, tee_main, c) != 0) {
        rc = cdsh_error_set(err, CDSH_EIO, "IO_ERROR", "cannot start the reader thread");
        goto fail;
    }
    c->tee_started = true;
    if ((rc = cdsh_jsonrpc_start(c->rpc, err)) < 0)
        goto fail;
    json_t *params =
        json_pack("{s:i,s:{s:{s:b,s:b},s:b},s:{s:s,s:s,s:s}}", "protocolVersion",
                  CDSH_ACP_PROTOCOL_VERSION, "clientCapabilities", "fs", "readTextFile",
                  opts->fs_read, "writeTextFile", opts->fs_write, "terminal", opts->terminal,
                  "clientInfo", "name", "cdsh", "title", "cdsh", "version", CDSH_VERSION);
    int64_t t0 = cdsh_clock_mono_ms();
    rc = handshake_request(c, opts, "initialize", params,
                           opts->init_timeout_ms > 0 ? opts->init_timeout_ms : 30000,
                           &c->init_result, err);
    json_decref(params);
    c->init_latency_ms = cdsh_clock_mono_ms() - t0;
    if (rc < 0)
        goto fail;
    if (!json_is_object(c->init_result) ||
        !json_is_integer(json_object_get(c->init_result, "protocolVersion"))) {
        rc = cdsh_error_set(err, CDSH_EPROTO, "BAD_RESPONSE",
                            "%s: initialize answered without an integer protocolVersion", c->name);
        goto fail;
    }
    if (json_integer_value(json_object_get(c->init_result, "protocolVersion")) !=
        CDSH_ACP_PROTOCOL_VERSION) {
        rc = cdsh_error_set(
            err, CDSH_EUNSUPPORTED, "PROTOCOL_VERSION",
            "%s speaks ACP protocol version %lld; cdsh speaks 1", c->name,
            (long long)json_integer_value(json_object_get(c->init_result, "protocolVersion")));
        goto fail;
    }
    *out = c;
    return 0;
fail:
    /* The agent's stderr says why (it may die, refuse or time out). */
    if (c->proc && c->tee_started)
        add_stderr_cause(c, 0, rc, err);
    conn_destroy(c);
    return rc;
}

int cdsh_acp_conn_signal(cdsh_acp_conn *conn, int sig, cdsh_error *err)
{
    if (!conn || !conn->proc)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "no agent process");
    return cdsh_process_signal(conn->proc, sig, err);
}

bool cdsh_acp_conn_is_closed(cdsh_acp_conn *conn)
{
    return !conn || cdsh_jsonrpc_is_closed(conn->rpc);
}

int cdsh_acp_conn_pid(cdsh_acp_conn *conn)
{
    return conn && conn->proc ? (int)cdsh_process_pid(conn->proc) : -1;
}

const json_t *cdsh_acp_conn_init_result_get(cdsh_acp_conn *conn)
{
    return conn ? conn->init_result : NULL;
}

int64_t cdsh_acp_conn_init_latency_ms(cdsh_acp_conn *conn)
{
    return conn ? conn->init_latency_ms : 0;
}

bool cdsh_acp_conn_supports(cdsh_acp_conn *conn, const char *method)
{
    if (!conn || !method)
        return false;
    const json_t *caps = json_object_get(conn->init_result, "agentCapabilities");
    if (strcmp(method, "session/load") == 0)
        return json_is_true(json_object_get(caps, "loadSession"));
    if (strcmp(method, "logout") == 0) {
        json_t *v = json_object_get(json_object_get(caps, "auth"), "logout");
        return v && !json_is_null(v) && !json_is_false(v); /* codex-acp sends {} */
    }
    if (strncmp(method, "session/", 8) == 0) {
        const char *k = method + 8;
        if (strcmp(k, "resume") == 0 || strcmp(k, "close") == 0 || strcmp(k, "list") == 0 ||
            strcmp(k, "fork") == 0 || strcmp(k, "delete") == 0) {
            json_t *v = json_object_get(json_object_get(caps, "sessionCapabilities"), k);
            return v && !json_is_null(v) && !json_is_false(v);
        }
    }
    return true;
}

int cdsh_acp_conn_authenticate(cdsh_acp_conn *conn, const char *method_id, cdsh_error *err)
{
    if (!conn || !method_id)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "authenticate needs a method id");
    json_t *params = json_pack("{s:s}", "methodId", method_id);
    json_t *res = NULL;
    int rc = cdsh_acp_conn_request(conn, "authenticate", params, 0, NULL, &res, NULL, err);
    json_decref(params);
    json_decref(res);
    return rc;
}

/* ---- sessions --------------------------------------------------------------------------- */

static acp_session *session_register(cdsh_acp_conn *c, const char *id, const char *cwd,
                                     const cdsh_acp_session_handlers *h)
{
    acp_session *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->id = strdup(id);
    s->cwd = strdup(cwd);
    if (!s->id || !s->cwd) {
        session_free(s);
        return NULL;
    }
    if (h)
        s->h = *h;
    s->refs = 1; /* the table's reference */
    pthread_mutex_lock(&c->mu);
    s->next = c->sessions;
    c->sessions = s;
    pthread_mutex_unlock(&c->mu);
    return s;
}

static void session_unregister(cdsh_acp_conn *c, const char *id)
{
    acp_session *dead = NULL;
    pthread_mutex_lock(&c->mu);
    for (acp_session **pp = &c->sessions; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->id, id) == 0) {
            acp_session *s = *pp;
            *pp = s->next;
            s->removed = true;
            if (--s->refs == 0)
                dead = s;
            break;
        }
    pthread_mutex_unlock(&c->mu);
    /* A closed session's commands never outlive it (killed and released). */
    cdsh_acp_terminals_release_session(c->terms, id);
    if (dead)
        session_free(dead);
}

int cdsh_acp_conn_session_open(cdsh_acp_conn *conn, cdsh_acp_open_mode mode, const char *session_id,
                               const char *cwd, json_t *mcp_servers,
                               const cdsh_acp_session_handlers *handlers, char **out_session_id,
                               cdsh_error *err)
{
    if (!conn || !cwd || cwd[0] != '/' || !out_session_id ||
        (mode != CDSH_ACP_OPEN_NEW && (!session_id || !*session_id)))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "session open needs an absolute cwd (and a session id to load)");
    *out_session_id = NULL;
    const char *method = mode == CDSH_ACP_OPEN_NEW    ? "session/new"
                         : mode == CDSH_ACP_OPEN_LOAD ? "session/load"
                         : mode == CDSH_ACP_OPEN_FORK ? "session/fork"
                                                      : "session/resume";
    /* Never a blind call: an unadvertised method is refused before the wire. */
    if (!cdsh_acp_conn_supports(conn, method))
        return cdsh_error_set(err, CDSH_EUNSUPPORTED, "METHOD_NOT_ADVERTISED",
                              "%s does not advertise %s", conn->name, method);
    /* New and fork answer with the new session's id: registered after. */
    bool fresh = mode == CDSH_ACP_OPEN_NEW || mode == CDSH_ACP_OPEN_FORK;
    json_t *params =
        json_pack("{s:s,s:O}", "cwd", cwd, "mcpServers", mcp_servers ? mcp_servers : json_array());
    if (!mcp_servers)
        json_decref(json_object_get(params, "mcpServers")); /* O took a second reference */
    if (mode != CDSH_ACP_OPEN_NEW)
        json_object_set_new(params, "sessionId", json_string(session_id));
    if (!fresh) {
        /* Load replays history as updates: the handlers must be in place first. */
        if (!session_register(conn, session_id, cwd, handlers)) {
            json_decref(params);
            return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        }
    }
    json_t *res = NULL;
    pthread_mutex_lock(&conn->mu);
    uint64_t seen = conn->stderr_total;
    pthread_mutex_unlock(&conn->mu);
    int rc = cdsh_acp_conn_request(conn, method, params, 0, conn->cancel, &res, NULL, err);
    json_decref(params);
    if (rc < 0)
        add_stderr_cause(conn, seen, rc, err);
    const char *sid = fresh ? json_string_value(json_object_get(res, "sessionId")) : session_id;
    if (rc == 0 && (!json_is_object(res) || !sid || !*sid))
        rc = cdsh_error_set(err, CDSH_EPROTO, "BAD_RESPONSE", "%s: %s answered without a sessionId",
                            conn->name, method);
    if (rc == 0 && fresh && !session_register(conn, sid, cwd, handlers))
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    if (rc < 0) {
        if (!fresh)
            session_unregister(conn, session_id);
        json_decref(res);
        return rc;
    }
    acp_session *s = session_get(conn, sid);
    if (s) {
        pthread_mutex_lock(&conn->mu);
        json_t *m = json_object_get(res, "modes"), *o = json_object_get(res, "configOptions");
        if (json_is_object(m)) {
            json_decref(s->modes);
            s->modes = json_deep_copy(m);
        }
        if (json_is_array(o)) {
            json_decref(s->config_options);
            s->config_options = json_deep_copy(o);
        }
        pthread_mutex_unlock(&conn->mu);
        session_put(conn, s);
    }
    *out_session_id = strdup(sid);
    json_decref(res);
    if (!*out_session_id)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    return 0;
}

int cdsh_acp_conn_fork(cdsh_acp_conn *conn, const char *source_session_id, const char *cwd,
                       json_t *mcp_servers, const cdsh_acp_session_handlers *handlers,
                       char **out_session_id, cdsh_error *err)
{
    return cdsh_acp_conn_session_open(conn, CDSH_ACP_OPEN_FORK, source_session_id, cwd, mcp_servers,
                                      handlers, out_session_id, err);
}

int cdsh_acp_conn_list_sessions(cdsh_acp_conn *conn, const char *cwd, int max_pages,
                                cdsh_cancel *cancel, json_t **out_sessions, bool *more,
                                cdsh_error *err)
{
    if (!conn || !out_sessions || (cwd && cwd[0] != '/'))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "session/list needs a connection (and an absolute cwd if any)");
    *out_sessions = NULL;
    if (more)
        *more = false;
    if (!cdsh_acp_conn_supports(conn, "session/list"))
        return cdsh_error_set(err, CDSH_EUNSUPPORTED, "METHOD_NOT_ADVERTISED",
                              "%s does not advertise session/list", conn->name);
    if (max_pages <= 0)
        max_pages = CDSH_ACP_LIST_MAX_PAGES;
    json_t *all = json_array();
    char *cursor = NULL;
    int rc = 0;
    for (int page = 0; page < max_pages; page++) {
        json_t *params = json_object();
        if (cwd)
            json_object_set_new(params, "cwd", json_string(cwd));
        if (cursor)
            json_object_set_new(params, "cursor", json_string(cursor));
        json_t *res = NULL;
        rc = cdsh_acp_conn_request(conn, "session/list", params, 0, cancel, &res, NULL, err);
        json_decref(params);
        if (rc < 0)
            break;
        json_t *sessions = json_object_get(res, "sessions");
        if (!json_is_array(sessions)) {
            json_decref(res);
            rc = cdsh_error_set(err, CDSH_EPROTO, "BAD_RESPONSE",
                                "%s: session/list answered without a sessions array", conn->name);
            break;
        }
        size_t i;
        json_t *info;
        json_array_foreach(sessions, i, info) {
            /* SessionInfo needs sessionId and cwd; others are skipped, as the SDK does. */
            if (json_is_string(json_object_get(info, "sessionId")) &&
                json_is_string(json_object_get(info, "cwd")))
                json_array_append(all, info);
        }
        const char *next = json_string_value(json_object_get(res, "nextCursor"));
        /* A cursor handed back unchanged would loop for ever: stop there. */
        bool again = next && *next && (!cursor || strcmp(next, cursor) != 0);
        free(cursor);
        cursor = again ? strdup(next) : NULL;
        json_decref(res);
        if (!again)
            break;
        if (!cursor) {
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
            break;
        }
    }
    if (rc == 0 && cursor && more)
        *more = true; /* stopped at the bound with pages left */
    free(cursor);
    if (rc < 0) {
        json_decref(all);
        return rc;
    }
    *out_sessions = all;
    return 0;
}

int cdsh_acp_conn_session_release(cdsh_acp_conn *conn, const char *session_id, bool send_close,
                                  cdsh_error *err)
{
    if (!conn || !session_id)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "no session");
    int rc = 0;
    if (send_close && cdsh_acp_conn_supports(conn, "session/close") &&
        !cdsh_acp_conn_is_closed(conn)) {
        json_t *params = json_pack("{s:s}", "sessionId", session_id);
        rc = cdsh_acp_conn_request(conn, "session/close", params, 10000, NULL, NULL, NULL, err);
        json_decref(params);
    }
    session_unregister(conn, session_id);
    return rc;
}

size_t cdsh_acp_conn_terminal_count(cdsh_acp_conn *conn)
{
    return conn ? cdsh_acp_terminals_count(conn->terms) : 0;
}

size_t cdsh_acp_conn_session_count(cdsh_acp_conn *conn)
{
    size_t n = 0;
    if (!conn)
        return 0;
    pthread_mutex_lock(&conn->mu);
    for (acp_session *s = conn->sessions; s; s = s->next)
        n++;
    pthread_mutex_unlock(&conn->mu);
    return n;
}

json_t *cdsh_acp_conn_session_config_dup(cdsh_acp_conn *conn, const char *session_id)
{
    acp_session *s = conn ? session_get(conn, session_id) : NULL;
    if (!s)
        return NULL;
    pthread_mutex_lock(&conn->mu);
    json_t *r = json_pack("{s:o,s:o}", "configOptions",
                          s->config_options ? json_deep_copy(s->config_options) : json_null(),
                          "modes", s->modes ? json_deep_copy(s->modes) : json_null());
    pthread_mutex_unlock(&conn->mu);
    session_put(conn, s);
    return r;
}

static bool has_mode(const json_t *modes, const char *id)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(modes, "availableModes"), i, m) {
        const char *mid = json_string_value(json_object_get(m, "id"));
        if (mid && strcmp(mid, id) == 0)
            return true;
    }
    return false;
}

int cdsh_acp_conn_set_config(cdsh_acp_conn *conn, const char *session_id, const char *config_id,
                             const char *value, const char **via, cdsh_error *err)
{
    if (!conn || !session_id || !config_id || !value)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "set_config needs id and value");
    acp_session *s = session_get(conn, session_id);
    if (!s)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "NO_SESSION", "unknown ACP session %s",
                              session_id);
    pthread_mutex_lock(&conn->mu);
    bool mode_ok = s->modes && (strcmp(config_id, "mode") == 0 || has_mode(s->modes, value));
    pthread_mutex_unlock(&conn->mu);
    json_t *params =
        json_pack("{s:s,s:s,s:s}", "sessionId", session_id, "configId", config_id, "value", value);
    json_t *res = NULL;
    int rc =
        cdsh_acp_conn_request(conn, "session/set_config_option", params, 0, NULL, &res, NULL, err);
    json_decref(params);
    if (rc == 0) {
        if (via)
            *via = "set_config_option";
        json_t *o = json_object_get(res, "configOptions");
        if (json_is_array(o)) {
            pthread_mutex_lock(&conn->mu);
            json_decref(s->config_options);
            s->config_options = json_deep_copy(o);
            pthread_mutex_unlock(&conn->mu);
        }
    } else if (mode_ok) {
        cdsh_error first = err ? *err : (cdsh_error){0};
        params = json_pack("{s:s,s:s}", "sessionId", session_id, "modeId", value);
        rc = cdsh_acp_conn_request(conn, "session/set_mode", params, 0, NULL, NULL, NULL, err);
        json_decref(params);
        if (rc == 0) {
            if (via)
                *via = "set_mode";
            pthread_mutex_lock(&conn->mu);
            json_object_set_new(s->modes, "currentModeId", json_string(value));
            pthread_mutex_unlock(&conn->mu);
        } else if (err) {
            char msg[1000];
            snprintf(msg, sizeof msg, "%.480s; then %.480s", first.message, err->message);
            cdsh_error_set(err, rc, err->code, "%s", msg);
        }
    }
    json_decref(res);
    session_put(conn, s);
    return rc;
}

/* Waits on conn->cv (conn->mu held) for at most ms milliseconds. */
static void wait_cv(cdsh_acp_conn *c, long ms)
{
    struct timespec ts;
    cdsh_clock_deadline(CLOCK_REALTIME, ms, &ts);
    pthread_cond_timedwait(&c->cv, &c->mu, &ts);
}

/* ---- prompt ------------------------------------------------------------------------------- */

typedef struct prompt_wait {
    cdsh_acp_conn *c;
    bool done;
    uint64_t notif_target;
    int rc;
    json_t *result;
    char message[CDSH_ERROR_MESSAGE_MAX];
    char code[CDSH_ERROR_CODE_MAX];
} prompt_wait;

static void prompt_done(void *arg, int rc, json_t *result, const cdsh_jsonrpc_remote_error *rerr,
                        const cdsh_error *err)
{
    prompt_wait *w = arg;
    cdsh_error e = err ? *err : (cdsh_error){0};
    if (rc < 0 && rerr)
        remote_fail(rc, "session/prompt", rerr, &e);
    if (rc == CDSH_EPROTO && rerr && rerr->message && strcmp(e.code, "RPC_ERROR") == 0 &&
        (rerr->code == -32000 || strcasestr(rerr->message, "authentication required") ||
         strcmp(cdsh_acp_classify_error(CDSH_EPROTO, e.code, e.message), "UNAUTHORIZED") == 0))
        unauthorized(w->c, &e); /* init_result is written once, before any prompt */
    pthread_mutex_lock(&w->c->mu);
    w->rc = rc;
    w->notif_target = w->c->notif_seen;
    w->result = rc == 0 && result ? json_deep_copy(result) : NULL;
    snprintf(w->message, sizeof w->message, "%s", e.message);
    snprintf(w->code, sizeof w->code, "%s", e.code);
    w->done = true;
    pthread_cond_broadcast(&w->c->cv);
    pthread_mutex_unlock(&w->c->mu);
}

void cdsh_acp_prompt_result_deinit(cdsh_acp_prompt_result *res)
{
    if (!res)
        return;
    json_decref(res->response);
    res->response = NULL;
}

/* Sends session/cancel and refuses the turn's pending permission asks. */
static void turn_cancel(cdsh_acp_conn *c, acp_session *s)
{
    pthread_mutex_lock(&c->mu);
    bool first = !s->turn_cancelled;
    s->turn_cancelled = true;
    for (perm_tok *p = s->perms; p; p = p->next)
        cdsh_cancel_fire(p->tok, "the turn was cancelled");
    pthread_mutex_unlock(&c->mu);
    if (first) {
        json_t *params = json_pack("{s:s}", "sessionId", s->id);
        cdsh_jsonrpc_notify(c->rpc, "session/cancel", params, NULL);
        json_decref(params);
    }
}

int cdsh_acp_conn_prompt(cdsh_acp_conn *conn, const char *session_id, json_t *prompt,
                         const cdsh_acp_prompt_opts *opts, cdsh_cancel *cancel,
                         cdsh_acp_prompt_result *res, cdsh_error *err)
{
    if (!conn || !session_id || !json_is_array(prompt) || !res)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "prompt needs a session and a content array");
    memset(res, 0, sizeof *res);
    cdsh_acp_prompt_opts o = opts ? *opts : (cdsh_acp_prompt_opts){0};
    if (o.cancel_grace_ms <= 0)
        o.cancel_grace_ms = 5000;
    acp_session *s = session_get(conn, session_id);
    if (!s)
        return cdsh_error_set(err, CDSH_ENOTFOUND, "NO_SESSION", "unknown ACP session %s",
                              session_id);
    pthread_mutex_lock(&conn->mu);
    if (s->prompting) {
        pthread_mutex_unlock(&conn->mu);
        session_put(conn, s);
        return cdsh_error_set(err, CDSH_EBUSY, "TURN_RUNNING",
                              "session %s already has a prompt running", session_id);
    }
    int64_t start = cdsh_clock_mono_ms();
    s->prompting = true;
    s->cancel_requested = s->turn_cancelled = false;
    s->last_update_ms = start;
    s->updates = 0;
    pthread_mutex_unlock(&conn->mu);

    prompt_wait w = {.c = conn};
    json_t *params = json_pack("{s:s,s:O}", "sessionId", session_id, "prompt", prompt);
    uint64_t call_id = 0;
    int rc = cdsh_jsonrpc_call_async(conn->rpc, "session/prompt", params, -1, NULL, prompt_done, &w,
                                     &call_id, err);
    json_decref(params);
    if (rc < 0) {
        pthread_mutex_lock(&conn->mu);
        s->prompting = false;
        pthread_mutex_unlock(&conn->mu);
        session_put(conn, s);
        return rc;
    }
    enum { RUNNING, USER_CANCEL, IDLE, TOTAL } why = RUNNING;
    int64_t give_up_at = 0, idle_secs = 0, since_update = 0;
    bool gave_up = false;
    pthread_mutex_lock(&conn->mu);
    while (!w.done) {
        wait_cv(conn, 50);
        if (w.done)
            break;
        int64_t now = cdsh_clock_mono_ms();
        bool user = s->cancel_requested;
        /* A person deciding a permission request is not a stalled engine. */
        int64_t last = s->perms ? now : s->last_update_ms;
        pthread_mutex_unlock(&conn->mu);
        user = user || cdsh_cancel_is_fired(cancel);
        if (why == RUNNING) {
            if (user)
                why = USER_CANCEL;
            else if (o.idle_timeout_ms > 0 && now - last >= o.idle_timeout_ms)
                why = IDLE;
            else if (o.total_timeout_ms > 0 && now - start >= o.total_timeout_ms)
                why = TOTAL;
            if (why != RUNNING) {
                idle_secs = (now - start) / 1000;
                since_update = (now - last) / 1000;
                give_up_at = now + o.cancel_grace_ms;
                turn_cancel(conn, s);
            }
        } else if (!gave_up && now >= give_up_at) {
            gave_up = true;
            cdsh_jsonrpc_cancel_call(conn->rpc, call_id, "the agent did not answer session/cancel");
        }
        pthread_mutex_lock(&conn->mu);
    }
    /* Let the updates sent before the answer reach the handlers first. */
    int64_t drain_until = cdsh_clock_mono_ms() + 2000;
    while (conn->notif_done < w.notif_target && cdsh_clock_mono_ms() < drain_until) {
        wait_cv(conn, 20);
    }
    s->prompting = false;
    res->updates = s->updates;
    int64_t last = s->last_update_ms;
    pthread_mutex_unlock(&conn->mu);
    res->latency_ms = cdsh_clock_mono_ms() - start;
    const char *stop = json_string_value(json_object_get(w.result, "stopReason"));
    if (w.rc == 0 && stop)
        snprintf(res->stop_reason, sizeof res->stop_reason, "%s", stop);
    if (why == IDLE) {
        rc = cdsh_error_set(err, CDSH_ETIMEDOUT, "TIMEOUT",
                            "no session/update from the engine for %llds (engine looks stuck)",
                            (long long)((o.idle_timeout_ms + 999) / 1000));
    } else if (why == TOTAL) {
        rc = cdsh_error_set(err, CDSH_ETIMEDOUT, "TIMEOUT",
                            "timed out after %llds (overall cap; last engine update %llds ago)",
                            (long long)idle_secs, (long long)since_update);
    } else if (w.rc < 0) {
        rc = w.rc;
        if (why == USER_CANCEL)
            rc = cdsh_error_set(err, CDSH_ECANCELED, "CANCELED",
                                "the turn was cancelled; the engine did not confirm within %llds",
                                (long long)(o.cancel_grace_ms / 1000));
        else
            cdsh_error_set(err, rc, w.code[0] ? w.code : "RPC_ERROR", "%s", w.message);
    } else if (!stop) {
        rc = cdsh_error_set(err, CDSH_EPROTO, "BAD_RESPONSE",
                            "%s: session/prompt answered without a stopReason", conn->name);
    } else {
        rc = 0;
        res->response = w.result;
        w.result = NULL;
    }
    (void)last;
    json_decref(w.result);
    session_put(conn, s);
    return rc;
}

/* ---- evidence ---------------------------------------------------------------------------------
 */

/* A deep copy of one of the connection's evidence values, under its lock. */
static json_t *copy_locked(cdsh_acp_conn *conn, json_t *const *field)
{
    if (!conn)
        return NULL;
    pthread_mutex_lock(&conn->mu);
    json_t *r = json_deep_copy(*field);
    pthread_mutex_unlock(&conn->mu);
    return r;
}

json_t *cdsh_acp_conn_raw_lines_dup(cdsh_acp_conn *conn)
{
    return copy_locked(conn, conn ? &conn->raw_lines : NULL);
}

json_t *cdsh_acp_conn_rejects_dup(cdsh_acp_conn *conn)
{
    return copy_locked(conn, conn ? &conn->rejects : NULL);
}

char *cdsh_acp_conn_stderr_tail_dup(cdsh_acp_conn *conn)
{
    if (!conn)
        return NULL;
    pthread_mutex_lock(&conn->mu);
    char *r = strndup(conn->stderr_tail, conn->stderr_len);
    pthread_mutex_unlock(&conn->mu);
    return r;
}

json_t *cdsh_acp_conn_callbacks_dup(cdsh_acp_conn *conn)
{
    return copy_locked(conn, conn ? &conn->callbacks : NULL);
}
