/* template.c — the EJS compiler and the Duktape worker (see template.h).
 * The worker is a fork of the calling process: it drops descriptors and
 * resources, evaluates one template and exits. The parent enforces the
 * wall clock and the output bound and never trusts the child's reply
 * beyond parsing it as bounded JSON. The one global (g_reply_fd) is only
 * ever set and read inside a worker process, which runs a single thread. */
#include "plugins/tavern/template.h"

#include <duktape.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/strbuf.h"

#if defined(__SANITIZE_ADDRESS__)
#define CDSH_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CDSH_UNDER_ASAN 1
#endif
#endif

void cdsh_tavern_template_limits_default(cdsh_tavern_template_limits *lim)
{
    lim->heap_bytes = 32u << 20;
    lim->wall_ms = 1000;
    lim->max_input = 16u << 20;
    lim->max_output = 1u << 20;
}

bool cdsh_tavern_template_has_tags(const char *text)
{
    return text && strstr(text, "<%");
}

/* ---- compiler ----------------------------------------------------------- */

static void js_string(cdsh_strbuf *sb, const char *s, size_t n)
{
    cdsh_strbuf_append_char(sb, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            cdsh_strbuf_append_char(sb, '\\');
            cdsh_strbuf_append_char(sb, (char)c);
        } else if (c == '\n') {
            cdsh_strbuf_append_str(sb, "\\n");
        } else if (c == '\r') {
            cdsh_strbuf_append_str(sb, "\\r");
        } else if (c < 0x20) {
            cdsh_strbuf_appendf(sb, "\\u%04x", c);
        } else if (c == 0xE2 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 &&
                   ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9)) {
            cdsh_strbuf_appendf(sb, "\\u%04x", (unsigned char)s[i + 2] == 0xA8 ? 0x2028 : 0x2029);
            i += 2;
        } else {
            cdsh_strbuf_append_char(sb, (char)c);
        }
    }
    cdsh_strbuf_append_char(sb, '"');
}

/* Appends literal text, turning "<%%" into "<%" and "%%>" into "%>". */
static void emit_text(cdsh_strbuf *js, const char *s, size_t n)
{
    if (!n)
        return;
    cdsh_strbuf t;
    cdsh_strbuf_init(&t);
    for (size_t i = 0; i < n; i++) {
        if (i + 2 < n && s[i] == '<' && s[i + 1] == '%' && s[i + 2] == '%') {
            cdsh_strbuf_append_str(&t, "<%");
            i += 2;
        } else if (i + 2 < n && s[i] == '%' && s[i + 1] == '%' && s[i + 2] == '>') {
            cdsh_strbuf_append_str(&t, "%>");
            i += 2;
        } else {
            cdsh_strbuf_append_char(&t, s[i]);
        }
    }
    cdsh_strbuf_append_str(js, "__w(");
    js_string(js, t.data, t.len);
    cdsh_strbuf_append_str(js, ");\n");
    cdsh_strbuf_deinit(&t);
}

int cdsh_tavern_template_compile(const char *src, size_t len, char **js_out, cdsh_error *err)
{
    if (!src || !js_out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "template_compile: no source");
    *js_out = NULL;
    if (len > CDSH_TAVERN_TEMPLATE_MAX_SOURCE)
        return cdsh_error_set(err, CDSH_ETOOBIG, "TEMPLATE_TOO_BIG",
                              "template is larger than %u bytes", CDSH_TAVERN_TEMPLATE_MAX_SOURCE);
    if (memchr(src, 0, len))
        return cdsh_error_set(err, CDSH_EINVAL, "TEMPLATE_SYNTAX", "template contains a NUL byte");
    cdsh_strbuf js;
    cdsh_strbuf_init(&js);
    cdsh_strbuf_append_str(&js, "var __out=[],__n=0;\n"
                                "function __w(s){__n+=s.length;if(__n>__max)throw new RangeError("
                                "'__OUTPUT_LIMIT__');__out.push(s);}\n"
                                "function print(){for(var i=0;i<arguments.length;i++)__w(__str("
                                "arguments[i]));}\n");
    size_t i = 0, text_start = 0;
    bool slurp_newline = false;
    while (i < len) {
        if (!(src[i] == '<' && i + 1 < len && src[i + 1] == '%')) {
            i++;
            continue;
        }
        if (i + 2 < len && src[i + 2] == '%') { /* "<%%": literal */
            i += 3;
            continue;
        }
        /* Text before the tag. */
        size_t tstart = text_start, tend = i;
        char kind = i + 2 < len ? src[i + 2] : 0;
        if (slurp_newline) {
            if (tstart < tend && src[tstart] == '\r' && tstart + 1 < tend &&
                src[tstart + 1] == '\n')
                tstart += 2;
            else if (tstart < tend && (src[tstart] == '\n' || src[tstart] == '\r'))
                tstart++;
            slurp_newline = false;
        }
        if (kind == '_') /* <%_ slurps spaces and tabs before it */
            while (tend > tstart && (src[tend - 1] == ' ' || src[tend - 1] == '\t'))
                tend--;
        emit_text(&js, src + tstart, tend - tstart);
        size_t body = i + 2;
        if (kind == '=' || kind == '-' || kind == '#' || kind == '_')
            body++;
        /* Find the close tag "%>" (not "%%>"). */
        size_t j = body;
        while (j + 1 < len &&
               !(src[j] == '%' && src[j + 1] == '>' && !(j > body && src[j - 1] == '%')))
            j++;
        if (j + 1 >= len) {
            size_t line = 1;
            for (size_t k = 0; k < i; k++)
                line += src[k] == '\n';
            cdsh_strbuf_deinit(&js);
            return cdsh_error_set(err, CDSH_EINVAL, "TEMPLATE_SYNTAX",
                                  "could not find the closing %%> for the <%% on line %zu", line);
        }
        size_t bend = j;
        char close_mod = bend > body ? src[bend - 1] : 0;
        if (close_mod == '-' || close_mod == '_')
            bend--;
        const char *b = src + body;
        size_t bl = bend - body;
        switch (kind) {
        case '=':
            cdsh_strbuf_append_str(&js, "__w(__esc(");
            cdsh_strbuf_append(&js, b, bl);
            cdsh_strbuf_append_str(&js, "\n));\n");
            break;
        case '-':
            cdsh_strbuf_append_str(&js, "__w(__str(");
            cdsh_strbuf_append(&js, b, bl);
            cdsh_strbuf_append_str(&js, "\n));\n");
            break;
        case '#': break;
        default:
            cdsh_strbuf_append(&js, b, bl);
            cdsh_strbuf_append_char(&js, '\n');
            break;
        }
        i = j + 2;
        if (close_mod == '_') /* _%> slurps spaces and tabs after it */
            while (i < len && (src[i] == ' ' || src[i] == '\t'))
                i++;
        slurp_newline = close_mod == '-' || close_mod == '_';
        text_start = i;
    }
    size_t tstart = text_start;
    if (slurp_newline && tstart < len) {
        if (src[tstart] == '\r' && tstart + 1 < len && src[tstart + 1] == '\n')
            tstart += 2;
        else if (src[tstart] == '\n' || src[tstart] == '\r')
            tstart++;
    }
    if (tstart < len)
        emit_text(&js, src + tstart, len - tstart);
    cdsh_strbuf_append_str(&js, "return __out.join('');\n");
    if (js.failed) {
        cdsh_strbuf_deinit(&js);
        return cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
    }
    *js_out = cdsh_strbuf_take(&js, NULL);
    return 0;
}

/* ---- worker ------------------------------------------------------------- */

/* The JavaScript environment: variables, world info, frozen clock and
 * randomness. Runs before the template; `__input` holds the request. */
static const char PRELUDE[] =
    "(function(g){\n"
    "var req=JSON.parse(g.__input); delete g.__input; delete g.Duktape;\n"
    "var ctx=req.ctx||{}; var vars=ctx.vars||{};\n"
    "['global','local','message'].forEach(function(s){ if(!vars[s]||typeof vars[s]!=='object') "
    "vars[s]={}; });\n"
    "g.__vars=vars; g.__changed=false;\n"
    "function scopeOf(o){ var s=(o&&o.scope)||'local'; if(!vars[s]) throw new Error('unknown scope "
    "'+s); return vars[s]; }\n"
    "function walk(obj,path,make){ var p=String(path).split('.'); for(var i=0;i<p.length-1;i++){ "
    "if(obj[p[i]]==null||typeof obj[p[i]]!=='object'){ if(!make) return [undefined,null]; "
    "obj[p[i]]={}; } obj=obj[p[i]]; } return [obj,p[p.length-1]]; }\n"
    "g.getvar=function(path,o){ var w=walk(scopeOf(o),path,false); var "
    "v=w[0]?w[0][w[1]]:undefined; return v===undefined&&o&&('defaults' in o)?o.defaults:v; };\n"
    "g.setvar=function(path,v,o){ var w=walk(scopeOf(o),path,true); w[0][w[1]]=v; "
    "g.__changed=true; return v; };\n"
    "g.incvar=function(path,by,o){ var cur=Number(g.getvar(path,o))||0; return "
    "g.setvar(path,cur+(by===undefined?1:Number(by)),o); };\n"
    "g.decvar=function(path,by,o){ return g.incvar(path,-(by===undefined?1:Number(by)),o); };\n"
    "g.delvar=function(path,o){ var w=walk(scopeOf(o),path,false); if(w[0]&&(w[1] in w[0])){ "
    "delete w[0][w[1]]; g.__changed=true; return true;} return false; };\n"
    "var wi=ctx.wi||{}; var books=wi.books||{};\n"
    "g.getwi=function(book,key){ var list=books[book]||[]; for(var i=0;i<list.length;i++){ var "
    "e=list[i]; if(e.uid===key||String(e.uid)===String(key)||e.comment===key) return e.content; } "
    "return ''; };\n"
    "g.activewi=function(){ return JSON.parse(JSON.stringify(wi.active||[])); };\n"
    "g.entry=ctx.entry&&typeof ctx.entry==='object'?ctx.entry:null;\n"
    "g.macros=ctx.macros||{}; g.charName=g.macros.char||''; g.userName=g.macros.user||'';\n"
    "var seed=(ctx.seed>>>0)||1; Math.random=function(){ seed=(seed+0x6D2B79F5)>>>0; var t=seed; "
    "t=Math.imul(t^(t>>>15),t|1); t^=t+Math.imul(t^(t>>>7),t|61); return "
    "((t^(t>>>14))>>>0)/4294967296; };\n"
    "var now=typeof ctx.now==='number'?ctx.now:0; var RD=Date;\n"
    "var FD=function(){ if(!(this instanceof FD)) return new RD(now).toString(); "
    "if(arguments.length===0) return new RD(now); var a=[null]; for(var "
    "i=0;i<arguments.length;i++) a.push(arguments[i]); return new "
    "(Function.prototype.bind.apply(RD,a))(); };\n"
    "FD.prototype=RD.prototype; FD.now=function(){return now;}; FD.UTC=RD.UTC; FD.parse=RD.parse; "
    "g.Date=FD;\n"
    "g.__esc=function(v){ return g.__str(v).replace(/[&<>\"']/g,function(c){ return "
    "{'&':'&amp;','<':'&lt;','>':'&gt;','\"':'&#34;','\\'':'&#39;'}[c]; }); };\n"
    "g.__str=function(v){ return v===undefined||v===null?'':String(v); };\n"
    "})(this);\n";

typedef struct heap_acct {
    size_t used, cap;
    bool hit;
} heap_acct;

/* Every block carries its size in front so realloc/free can account. */
static void *acct_alloc(void *ud, duk_size_t size)
{
    heap_acct *a = ud;
    if (a->used + size + 16 > a->cap) {
        a->hit = true;
        return NULL;
    }
    size_t *p = malloc(size + 16);
    if (!p)
        return NULL;
    p[0] = size;
    a->used += size + 16;
    return (char *)p + 16;
}

static void acct_free(void *ud, void *ptr)
{
    if (!ptr)
        return;
    heap_acct *a = ud;
    size_t *p = (size_t *)((char *)ptr - 16);
    a->used -= p[0] + 16;
    free(p);
}

static void *acct_realloc(void *ud, void *ptr, duk_size_t size)
{
    heap_acct *a = ud;
    if (!ptr)
        return acct_alloc(ud, size);
    if (!size) {
        acct_free(ud, ptr);
        return NULL;
    }
    size_t *p = (size_t *)((char *)ptr - 16);
    size_t old = p[0];
    if (size > old && a->used + (size - old) > a->cap) {
        a->hit = true;
        return NULL;
    }
    size_t *q = realloc(p, size + 16);
    if (!q)
        return NULL;
    a->used = a->used - old + size;
    q[0] = size;
    return (char *)q + 16;
}

static int g_reply_fd = -1; /* the child's socket; only used inside the worker process */

static void write_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void reply_error(const char *code, const char *msg)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    cdsh_strbuf_append_str(&sb, "{\"ok\":false,\"code\":");
    cdsh_strbuf_append_json_string(&sb, code, strlen(code));
    cdsh_strbuf_append_str(&sb, ",\"message\":");
    cdsh_strbuf_append_json_string(&sb, msg, strlen(msg));
    cdsh_strbuf_append_char(&sb, '}');
    write_all(g_reply_fd, sb.data, sb.len);
}

static void fatal_handler(void *ud, const char *msg)
{
    heap_acct *a = ud;
    /* No allocation here: a fixed reply. */
    static const char mem[] =
        "{\"ok\":false,\"code\":\"TEMPLATE_MEMORY\",\"message\":\"template exceeded its heap\"}";
    static const char other[] =
        "{\"ok\":false,\"code\":\"TEMPLATE_CRASHED\",\"message\":\"template engine failed\"}";
    (void)msg;
    if (a && a->hit)
        write_all(g_reply_fd, mem, sizeof mem - 1);
    else
        write_all(g_reply_fd, other, sizeof other - 1);
    _exit(3);
}

static void close_other_fds(int keep)
{
#ifdef SYS_close_range
    if (keep > 3) {
        syscall(SYS_close_range, 3, (unsigned)keep - 1, 0);
        if (syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0) == 0)
            return;
    }
#endif
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (int fd = 3; fd < max; fd++)
        if (fd != keep)
            close(fd);
}

static void limit(int res, rlim_t v)
{
    struct rlimit rl = {v, v};
    setrlimit(res, &rl);
}

/* Runs in the forked child; never returns. */
static void worker_main(int fd, const char *js, size_t heap, size_t max_input, size_t max_output,
                        int wall_ms)
{
    g_reply_fd = fd;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull >= 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
    }
    close_other_fds(fd);
    limit(RLIMIT_CPU, (rlim_t)(wall_ms / 1000 + 1));
    limit(RLIMIT_FSIZE, 0);
    limit(RLIMIT_NOFILE, (rlim_t)fd + 1); /* no new descriptors above the socket */
    limit(RLIMIT_NPROC, 0);
    limit(RLIMIT_CORE, 0);
#ifndef CDSH_UNDER_ASAN
    /* Address-space cap as a second line behind the heap accounting;
     * sanitizer builds reserve huge shadow mappings, so they skip it. */
    limit(RLIMIT_AS, (rlim_t)(heap * 4 + (256u << 20)));
#endif
    cdsh_strbuf in;
    cdsh_strbuf_init(&in);
    char buf[65536];
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (in.len + (size_t)r > max_input) {
            reply_error("TEMPLATE_INPUT_TOO_BIG", "template input is too large");
            _exit(2);
        }
        cdsh_strbuf_append(&in, buf, (size_t)r);
    }
    heap_acct acct = {0, heap, false};
    duk_context *ctx = duk_create_heap(acct_alloc, acct_realloc, acct_free, &acct, fatal_handler);
    if (!ctx) {
        reply_error("TEMPLATE_MEMORY", "cannot create the template heap");
        _exit(2);
    }
    duk_push_global_object(ctx);
    duk_push_lstring(ctx, in.data, in.len);
    duk_put_prop_string(ctx, -2, "__input");
    duk_push_number(ctx, (double)max_output);
    duk_put_prop_string(ctx, -2, "__max");
    duk_pop(ctx);
    cdsh_strbuf_deinit(&in);
    if (duk_peval_string(ctx, PRELUDE) != 0) {
        reply_error("TEMPLATE_CRASHED", duk_safe_to_string(ctx, -1));
        _exit(2);
    }
    duk_pop(ctx);
    /* The template body becomes a function so `return` works. */
    cdsh_strbuf f;
    cdsh_strbuf_init(&f);
    cdsh_strbuf_append_str(&f, "(function(){\n");
    cdsh_strbuf_append_str(&f, js);
    cdsh_strbuf_append_str(&f, "\n})");
    if (duk_pcompile_lstring(ctx, DUK_COMPILE_EVAL, f.data, f.len) != 0 || duk_pcall(ctx, 0) != 0) {
        reply_error(acct.hit ? "TEMPLATE_MEMORY" : "TEMPLATE_SYNTAX", duk_safe_to_string(ctx, -1));
        _exit(2);
    }
    cdsh_strbuf_deinit(&f);
    if (duk_pcall(ctx, 0) != 0) {
        const char *m = duk_safe_to_string(ctx, -1);
        if (m && strstr(m, "__OUTPUT_LIMIT__"))
            reply_error("TEMPLATE_OUTPUT_TOO_BIG", "template output is larger than the limit");
        else
            reply_error(acct.hit ? "TEMPLATE_MEMORY" : "TEMPLATE_ERROR", m ? m : "error");
        _exit(2);
    }
    duk_size_t olen = 0;
    const char *out = duk_safe_to_lstring(ctx, -1, &olen);
    if (olen > max_output) {
        reply_error("TEMPLATE_OUTPUT_TOO_BIG", "template output is larger than the limit");
        _exit(2);
    }
    /* Reply: {"ok":true,"output":...,"changed":bool,"vars":...}. */
    duk_push_global_object(ctx);
    duk_get_prop_string(ctx, -1, "__changed");
    bool changed = duk_to_boolean(ctx, -1);
    duk_pop(ctx);
    duk_get_prop_string(ctx, -1, "__vars");
    /* The encoded string lives on the value stack: nothing is popped below. */
    const char *vars = duk_json_encode(ctx, -1);
    size_t vlen = vars ? strlen(vars) : 0;
    if (vlen > max_output) {
        reply_error("TEMPLATE_OUTPUT_TOO_BIG", "template variables are larger than the limit");
        _exit(2);
    }
    cdsh_strbuf rep;
    cdsh_strbuf_init(&rep);
    cdsh_strbuf_append_str(&rep, "{\"ok\":true,\"changed\":");
    cdsh_strbuf_append_str(&rep, changed ? "true" : "false");
    cdsh_strbuf_append_str(&rep, ",\"output\":");
    cdsh_strbuf_append_json_string(&rep, out, olen);
    cdsh_strbuf_append_str(&rep, ",\"vars\":");
    cdsh_strbuf_append(&rep, vars ? vars : "{}", vars ? vlen : 2);
    cdsh_strbuf_append_char(&rep, '}');
    write_all(fd, rep.data, rep.len);
    _exit(0);
}

static int64_t left_ms(int64_t deadline)
{
    int64_t l = deadline - cdsh_clock_mono_ms();
    return l < 0 ? 0 : l;
}

/* Long by design: one forked worker's life (request, reply under one
 * deadline, reaping); every descriptor and the child are released on the one
 * cleanup path, which a split would have to thread through. */
int cdsh_tavern_template_render(const char *src, const json_t *ctx, bool write,
                                const cdsh_tavern_template_limits *lim, json_t **result,
                                cdsh_error *err)
{
    if (!src || !result)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "template_render: no source");
    *result = NULL;
    cdsh_tavern_template_limits L;
    if (lim)
        L = *lim;
    else
        cdsh_tavern_template_limits_default(&L);
    char *js = NULL, *req = NULL;
    int rc = cdsh_tavern_template_compile(src, strlen(src), &js, err);
    if (rc < 0)
        return rc;
    json_t *reqj = json_pack("{s:O?}", "ctx", ctx);
    req = reqj ? json_dumps(reqj, JSON_COMPACT) : NULL;
    json_decref(reqj);
    int sv[2] = {-1, -1};
    pid_t pid = -1;
    cdsh_strbuf rep;
    cdsh_strbuf_init(&rep);
    json_t *reply = NULL;
    if (!req) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
        goto cleanup;
    }
    if (strlen(req) > L.max_input) {
        rc = cdsh_error_set(err, CDSH_ETOOBIG, "TEMPLATE_INPUT_TOO_BIG",
                            "template input is larger than %zu bytes", L.max_input);
        goto cleanup;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        rc = cdsh_error_set(err, CDSH_EIO, "TEMPLATE_WORKER_FAILED", "socketpair: %s",
                            strerror(errno));
        goto cleanup;
    }
    int64_t deadline = cdsh_clock_mono_ms() + L.wall_ms;
    pid = fork();
    if (pid < 0) {
        rc = cdsh_error_set(err, CDSH_EIO, "TEMPLATE_WORKER_FAILED", "fork: %s", strerror(errno));
        goto cleanup;
    }
    if (pid == 0) {
        close(sv[0]);
        worker_main(sv[1], js, L.heap_bytes, L.max_input, L.max_output, L.wall_ms);
        _exit(4);
    }
    close(sv[1]);
    sv[1] = -1;
    /* Send the request, then read the reply, both under the deadline. */
    size_t rl = strlen(req), sent = 0;
    bool timed_out = false, too_big = false;
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    while (sent < rl) {
        struct pollfd p = {sv[0], POLLOUT, 0};
        int pr = poll(&p, 1, (int)left_ms(deadline));
        if (pr == 0) {
            timed_out = true;
            break;
        }
        if (pr < 0 && errno == EINTR)
            continue;
        ssize_t w = send(sv[0], req + sent, rl - sent, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (w <= 0)
            break;
        sent += (size_t)w;
    }
    shutdown(sv[0], SHUT_WR);
    size_t cap = L.max_output * 2 + 4096; /* JSON escaping of output + vars */
    char buf[65536];
    while (!timed_out) {
        struct pollfd p = {sv[0], POLLIN, 0};
        int pr = poll(&p, 1, (int)left_ms(deadline));
        if (pr == 0) {
            timed_out = true;
            break;
        }
        if (pr < 0 && errno == EINTR)
            continue;
        ssize_t r = recv(sv[0], buf, sizeof buf, 0);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (r <= 0)
            break;
        if (rep.len + (size_t)r > cap) {
            too_big = true;
            break;
        }
        cdsh_strbuf_append(&rep, buf, (size_t)r);
    }
    int status = 0;
    if (timed_out || too_big)
        kill(pid, SIGKILL);
    else if (waitpid(pid, &status, WNOHANG) == 0) {
        /* Reply complete; give the worker a moment to exit, then kill it. */
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    pid = -1;
    if (timed_out) {
        rc = cdsh_error_set(err, CDSH_ETIMEDOUT, "TEMPLATE_TIMEOUT",
                            "template ran longer than %d ms and was stopped", L.wall_ms);
        goto cleanup;
    }
    if (too_big) {
        rc = cdsh_error_set(err, CDSH_ETOOBIG, "TEMPLATE_OUTPUT_TOO_BIG",
                            "template output is larger than %zu bytes", L.max_output);
        goto cleanup;
    }
    reply = rep.len ? json_loadb(rep.data, rep.len, 0, NULL) : NULL;
    if (!json_is_object(reply)) {
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU)
            rc = cdsh_error_set(err, CDSH_ETIMEDOUT, "TEMPLATE_TIMEOUT",
                                "template used up its CPU time and was stopped");
        else
            rc = cdsh_error_set(err, CDSH_EIO, "TEMPLATE_CRASHED",
                                "template worker ended without a reply (%s %d)",
                                WIFSIGNALED(status) ? "signal" : "exit",
                                WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        goto cleanup;
    }
    if (!json_is_true(json_object_get(reply, "ok"))) {
        const char *code = json_string_value(json_object_get(reply, "code"));
        const char *msg = json_string_value(json_object_get(reply, "message"));
        int erc = code && !strcmp(code, "TEMPLATE_OUTPUT_TOO_BIG")  ? CDSH_ETOOBIG
                  : code && !strcmp(code, "TEMPLATE_INPUT_TOO_BIG") ? CDSH_ETOOBIG
                  : code && !strcmp(code, "TEMPLATE_MEMORY")        ? CDSH_ETOOBIG
                                                                    : CDSH_EINVAL;
        rc = cdsh_error_set(err, erc, code ? code : "TEMPLATE_CRASHED", "%s",
                            msg ? msg : "template failed");
        goto cleanup;
    }
    json_t *res = json_pack("{s:O}", "output", json_object_get(reply, "output"));
    if (write && res) {
        json_object_set(res, "vars", json_object_get(reply, "vars"));
        json_object_set(res, "changed", json_object_get(reply, "changed"));
    }
    *result = res;
    rc = res ? 0 : cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
cleanup:
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    if (sv[0] >= 0)
        close(sv[0]);
    if (sv[1] >= 0)
        close(sv[1]);
    json_decref(reply);
    cdsh_strbuf_deinit(&rep);
    free(js);
    free(req);
    return rc;
}
