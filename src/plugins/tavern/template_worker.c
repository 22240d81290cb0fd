/* template_worker.c — the template worker process (see template.h): one
 * JavaScriptCore context group per worker. At start it evaluates the
 * pinned libraries and lib-realm.js in a library context whose whole
 * object graph is then frozen; every evaluation gets a fresh global
 * context in the same group that receives only those frozen library
 * objects and the request's data (as JSON text), runs template-realm.js
 * and is released. No host function is bridged into JavaScript. Limits:
 * JSC's execution time limit per evaluation, RLIMIT_DATA for memory, no
 * files (RLIMIT_FSIZE 0), descriptors closed but the socket. The globals
 * below are only ever touched inside the single-threaded worker loop. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "plugins/tavern/template_jsc.h"
#include "plugins/tavern/template_priv.h"

/* JavaScriptCore, through the table the host side loaded before the fork
 * (template_jsc.h); set first thing in cdsh_tavern_template_worker_main. */
static const cdsh_tavern_jsc *jsc;

#if defined(__SANITIZE_ADDRESS__)
#define CDSH_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CDSH_UNDER_ASAN 1
#endif
#endif

const char *const cdsh_tavern_template_files[CDSH_TPL_NFILES] = {
    [CDSH_TPL_LODASH] = "node_modules/lodash/lodash.min.js",
    [CDSH_TPL_EJS] = "node_modules/ejs/ejs.min.js",
    [CDSH_TPL_SHOWDOWN] = "node_modules/showdown/dist/showdown.js",
    [CDSH_TPL_JSONREPAIR] = "node_modules/jsonrepair/lib/umd/jsonrepair.min.js",
    [CDSH_TPL_FAKER] = "dist/faker.js",
    [CDSH_TPL_LIB_REALM] = "lib-realm.js",
    [CDSH_TPL_TEMPLATE_REALM] = "template-realm.js",
};

/* The current evaluation's watch (worker loop only): JSC calls on_watch
 * every WATCH_SLICE of script time; it ends the script at the deadline or
 * when the resident set outgrows the allowance. */
#define WATCH_SLICE 0.01
static bool g_timed_out, g_out_of_memory;
static int64_t g_deadline_ms;
static size_t g_rss_cap;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Resident set size in bytes (0 if unknown). */
static size_t rss_bytes(void)
{
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    unsigned long size = 0, res = 0;
    if (sscanf(buf, "%lu %lu", &size, &res) != 2)
        return 0;
    return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

static bool on_watch(JSContextRef ctx, void *ud)
{
    (void)ud;
    if (mono_ms() >= g_deadline_ms) {
        g_timed_out = true;
        return true; /* terminate the script */
    }
    if (g_rss_cap && rss_bytes() > g_rss_cap) {
        g_out_of_memory = true;
        return true;
    }
    /* Go on. This JSC does not re-arm the watch by itself when the
     * callback returns false: set it again for the next slice. */
    jsc->JSContextGroupSetExecutionTimeLimit(jsc->JSContextGetGroup(ctx), WATCH_SLICE, on_watch, NULL);
    return false;
}

static int write_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int cdsh_tavern_template_frame_write(int fd, const char *payload, size_t len, uint32_t time_ms,
                                     uint32_t max_output)
{
    unsigned char h[CDSH_TPL_HEADER];
    put_u32(h, (uint32_t)len);
    put_u32(h + 4, time_ms);
    put_u32(h + 8, max_output);
    if (write_all(fd, (const char *)h, sizeof h) < 0)
        return -1;
    return write_all(fd, payload, len);
}

static int read_all(int fd, char *buf, size_t n)
{
    while (n) {
        ssize_t r = read(fd, buf, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        buf += r;
        n -= (size_t)r;
    }
    return 0;
}

static void reply_error(int fd, const char *code, const char *msg)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    cdsh_strbuf_append_str(&sb, "{\"ok\":false,\"code\":");
    cdsh_strbuf_append_json_string(&sb, code, strlen(code));
    cdsh_strbuf_append_str(&sb, ",\"message\":");
    cdsh_strbuf_append_json_string(&sb, msg, strlen(msg));
    cdsh_strbuf_append_char(&sb, '}');
    cdsh_tavern_template_frame_write(fd, sb.data ? sb.data : "{}", sb.data ? sb.len : 2, 0, 0);
    cdsh_strbuf_deinit(&sb);
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

#ifndef CDSH_UNDER_ASAN
/* The data segment size the worker inherited (VmData, bytes), 0 if unknown. */
static size_t vm_data(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return 0;
    char line[256];
    size_t kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmData: %zu kB", &kb) == 1)
            break;
    fclose(f);
    return kb * 1024;
}
#endif

static char *slurp(const char *dir, const char *rel, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "rbe");
    if (!f)
        return NULL;
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    char buf[65536];
    size_t r;
    while ((r = fread(buf, 1, sizeof buf, f)) > 0)
        cdsh_strbuf_append(&sb, buf, r);
    fclose(f);
    return cdsh_strbuf_take(&sb, len);
}

/* A JS value as owned UTF-8 (exceptions are Error objects: name: message). */
static char *js_to_utf8(JSContextRef ctx, JSValueRef v)
{
    JSStringRef s = jsc->JSValueToStringCopy(ctx, v, NULL);
    if (!s)
        return strdup("(unprintable value)");
    size_t max = jsc->JSStringGetMaximumUTF8CStringSize(s);
    char *out = malloc(max ? max : 1);
    if (out)
        jsc->JSStringGetUTF8CString(s, out, max ? max : 1);
    jsc->JSStringRelease(s);
    return out;
}

/* Evaluates src in ctx; NULL and *msg (owned) on an exception. */
static JSValueRef eval_in(JSContextRef ctx, const char *src, const char *url, char **msg)
{
    JSStringRef s = jsc->JSStringCreateWithUTF8CString(src);
    JSStringRef u = jsc->JSStringCreateWithUTF8CString(url);
    JSValueRef exc = NULL;
    JSValueRef v = jsc->JSEvaluateScript(ctx, s, NULL, u, 1, &exc);
    jsc->JSStringRelease(s);
    jsc->JSStringRelease(u);
    if (exc || !v) {
        *msg = exc ? js_to_utf8(ctx, exc) : strdup("evaluation failed");
        return NULL;
    }
    return v;
}

static void set_global(JSContextRef ctx, const char *name, JSValueRef v)
{
    JSStringRef n = jsc->JSStringCreateWithUTF8CString(name);
    jsc->JSObjectSetProperty(ctx, jsc->JSContextGetGlobalObject(ctx), n, v, kJSPropertyAttributeDontEnum,
                        NULL);
    jsc->JSStringRelease(n);
}

static JSValueRef utf8_value(JSContextRef ctx, const char *s)
{
    JSStringRef js = jsc->JSStringCreateWithUTF8CString(s);
    JSValueRef v = jsc->JSValueMakeString(ctx, js);
    jsc->JSStringRelease(js);
    return v;
}

/* The libraries the worker loads into the library realm on demand: their
 * text stays in C memory (src[file]) until then, so start-up converts none
 * of it to JavaScript strings. The first, ejs (evaluated at start for its
 * compiler; file -1), is "loaded" when lib-realm.js has sealed the library
 * realm, which happens before any library reaches a template. Worker loop
 * only. */
static struct {
    int file;
    const char *name;
    bool loaded;
} g_lazy[] = {{-1, "ejs", false},
              {CDSH_TPL_LODASH, "lodash", false},
              {CDSH_TPL_JSONREPAIR, "jsonrepair", false},
              {CDSH_TPL_SHOWDOWN, "showdown", false},
              {CDSH_TPL_FAKER, "faker", false}};
#define NLAZY (sizeof g_lazy / sizeof g_lazy[0])

/* The library realm as the worker holds it. */
typedef struct {
    JSGlobalContextRef ctx;
    JSObjectRef lib;     /* lib-realm.js's library object (protected) */
    JSObjectRef sources; /* where a library's text is put to load it (protected) */
    JSObjectRef get;     /* lib.get (protected) */
    char **src;          /* the runtime files' text; a library's is freed once given */
} lib_realm;

/* Loads library i into the library realm (lib.get after handing it its
 * text) under a watch ending at deadline_ms; 0, or -1 with *msg (owned). */
static int load_library(lib_realm *lr, size_t i, int64_t deadline_ms, char **msg)
{
    if (g_lazy[i].loaded)
        return 0;
    if (i > 0 && load_library(lr, 0, deadline_ms, msg) < 0)
        return -1; /* the seal first */
    JSContextRef ctx = lr->ctx;
    JSStringRef n = jsc->JSStringCreateWithUTF8CString(g_lazy[i].name);
    char **text = g_lazy[i].file >= 0 ? &lr->src[g_lazy[i].file] : NULL;
    if (text && *text) {
        jsc->JSObjectSetProperty(ctx, lr->sources, n, utf8_value(ctx, *text), 0, NULL);
        free(*text);
        *text = NULL;
    }
    g_timed_out = g_out_of_memory = false;
    g_deadline_ms = deadline_ms;
    jsc->JSContextGroupSetExecutionTimeLimit(jsc->JSContextGetGroup(ctx), WATCH_SLICE, on_watch, NULL);
    JSValueRef arg = jsc->JSValueMakeString(ctx, n);
    jsc->JSStringRelease(n);
    JSValueRef exc = NULL;
    jsc->JSObjectCallAsFunction(ctx, lr->get, lr->lib, 1, &arg, &exc);
    if (exc) {
        *msg = js_to_utf8(ctx, exc);
        return -1;
    }
    g_lazy[i].loaded = true;
    return 0;
}

/* Idle time: loads the next library not loaded; false when none is left
 * (or loading failed: the templates that use it then see the error). */
static bool preload(lib_realm *lr)
{
    for (size_t i = 0; i < NLAZY; i++)
        if (!g_lazy[i].loaded) {
            char *msg = NULL;
            int rc = load_library(lr, i, mono_ms() + 10000, &msg);
            free(msg);
            return rc == 0 && i + 1 < NLAZY;
        }
    return false;
}

/* An error reply (owned JSON text). */
static char *error_reply(const char *code, const char *text)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    cdsh_strbuf_append_str(&sb, "{\"ok\":false,\"code\":");
    cdsh_strbuf_append_json_string(&sb, code, strlen(code));
    cdsh_strbuf_append_str(&sb, ",\"message\":");
    cdsh_strbuf_append_json_string(&sb, text, strlen(text));
    cdsh_strbuf_append_char(&sb, '}');
    return cdsh_strbuf_take(&sb, NULL);
}

/* One run of template-realm.js in a fresh global context; the reply
 * (owned JSON text). */
static char *run_once(JSContextGroupRef group, JSObjectRef lib, JSStringRef tpl_realm,
                      JSStringRef tpl_url, const char *input, uint32_t time_ms)
{
    JSGlobalContextRef ctx = jsc->JSGlobalContextCreateInGroup(group, NULL);
    set_global(ctx, "__lib", lib);
    set_global(ctx, "__input", utf8_value(ctx, input));
    char *reply = NULL;
    JSValueRef exc = NULL;
    JSValueRef v = jsc->JSEvaluateScript(ctx, tpl_realm, NULL, tpl_url, 1, &exc);
    if (!exc && v && jsc->JSValueIsString(ctx, v)) {
        reply = js_to_utf8(ctx, v);
    } else {
        char *msg = exc ? js_to_utf8(ctx, exc) : NULL;
        const char *code = g_timed_out       ? "TEMPLATE_TIMEOUT"
                           : g_out_of_memory ? "TEMPLATE_MEMORY"
                                             : "TEMPLATE_CRASHED";
        char text[256];
        if (g_timed_out)
            snprintf(text, sizeof text, "template ran longer than %u ms and was stopped", time_ms);
        else if (g_out_of_memory)
            snprintf(text, sizeof text, "template used more memory than its allowance and was "
                                        "stopped");
        else
            snprintf(text, sizeof text, "template engine failed: %.200s",
                     msg ? msg : "no reply");
        if (!g_timed_out && !g_out_of_memory && msg && strstr(msg, "Out of memory"))
            code = "TEMPLATE_MEMORY";
        reply = error_reply(code, text);
        free(msg);
    }
    jsc->JSGlobalContextRelease(ctx);
    return reply;
}

/* The library a run's reply asks for ({"ok":false,"need":"name"}), or -1. */
static int needed_library(const char *reply)
{
    static const char pre[] = "{\"ok\":false,\"need\":\"";
    if (!reply || strncmp(reply, pre, sizeof pre - 1))
        return -1;
    const char *name = reply + sizeof pre - 1;
    for (size_t i = 0; i < NLAZY; i++) {
        size_t n = strlen(g_lazy[i].name);
        if (!strncmp(name, g_lazy[i].name, n) && !strcmp(name + n, "\"}"))
            return (int)i;
    }
    return -1;
}

/* One evaluation: runs it, and again after loading each library it asks
 * for (each run in a fresh context; a run that stopped for a library left
 * nothing behind). One deadline for the whole. The reply (owned JSON). */
static char *evaluate(lib_realm *lr, JSStringRef tpl_realm, JSStringRef tpl_url, const char *input,
                      uint32_t time_ms)
{
    JSContextGroupRef group = jsc->JSContextGetGroup(lr->ctx);
    int64_t deadline = mono_ms() + time_ms;
    for (size_t attempt = 0;; attempt++) {
        g_timed_out = g_out_of_memory = false;
        g_deadline_ms = deadline;
        jsc->JSContextGroupSetExecutionTimeLimit(group, WATCH_SLICE, on_watch, NULL);
        char *reply = run_once(group, lr->lib, tpl_realm, tpl_url, input, time_ms);
        int want = needed_library(reply);
        if (want < 0)
            return reply;
        free(reply);
        char *msg = NULL;
        if (g_lazy[want].loaded || attempt >= NLAZY) {
            /* only a forged reply asks twice */
            return error_reply("TEMPLATE_RUNTIME", "the template asked for a library again");
        }
        if (load_library(lr, (size_t)want, deadline, &msg) < 0) {
            char text[300];
            snprintf(text, sizeof text, "%s failed to load: %.200s", g_lazy[want].name,
                     msg ? msg : "?");
            free(msg);
            if (g_timed_out)
                snprintf(text, sizeof text, "template ran longer than %u ms and was stopped "
                                            "(while %s loaded)",
                         time_ms, g_lazy[want].name);
            return error_reply(g_timed_out       ? "TEMPLATE_TIMEOUT"
                               : g_out_of_memory ? "TEMPLATE_MEMORY"
                                                 : "TEMPLATE_RUNTIME",
                               text);
        }
    }
}

/* Long by design: the worker's whole life — start-up (files, limits, the
 * library realm) and the request loop — in one frame, since it never
 * returns and owns everything until _exit. */
void cdsh_tavern_template_worker_main(int fd, const char *dir, size_t mem_bytes)
{
    jsc = cdsh_tavern_jsc_get();
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull >= 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
    }
    close_other_fds(fd);
    char *src[CDSH_TPL_NFILES] = {0};
    for (int i = 0; i < CDSH_TPL_NFILES; i++) {
        src[i] = slurp(dir, cdsh_tavern_template_files[i], NULL);
        if (!src[i]) {
            char m[4200];
            snprintf(m, sizeof m, "%s/%s is missing: run scripts/bootstrap.sh", dir,
                     cdsh_tavern_template_files[i]);
            reply_error(fd, "TEMPLATE_RUNTIME_MISSING", m);
            _exit(2);
        }
    }
    limit(RLIMIT_FSIZE, 0);
    limit(RLIMIT_CORE, 0);
    JSContextGroupRef group = jsc->JSContextGroupCreate();
    JSGlobalContextRef lib_ctx = jsc->JSGlobalContextCreateInGroup(group, NULL);
    char *msg = NULL;
    if (!eval_in(lib_ctx, src[CDSH_TPL_EJS], cdsh_tavern_template_files[CDSH_TPL_EJS], &msg))
        goto failed;
    /* The other libraries wait as text in C memory until an evaluation
     * asks for one or the worker is idle (g_lazy): the worker is ready as
     * soon as the compiler is. */
    JSObjectRef sources = jsc->JSObjectMake(lib_ctx, NULL, NULL);
    jsc->JSValueProtect(lib_ctx, sources);
    set_global(lib_ctx, "__sources", sources);
    JSValueRef libv = eval_in(lib_ctx, src[CDSH_TPL_LIB_REALM], "cdsh:lib-realm.js", &msg);
    if (!libv)
        goto failed;
    if (!jsc->JSValueIsObject(lib_ctx, libv)) {
        msg = strdup("lib-realm.js did not return the library object");
        goto failed;
    }
    lib_realm lr = {.ctx = lib_ctx, .lib = jsc->JSValueToObject(lib_ctx, libv, NULL),
                    .sources = sources, .src = src};
    jsc->JSValueProtect(lib_ctx, lr.lib);
    JSStringRef get_name = jsc->JSStringCreateWithUTF8CString("get");
    JSValueRef getv = jsc->JSObjectGetProperty(lib_ctx, lr.lib, get_name, NULL);
    jsc->JSStringRelease(get_name);
    if (!getv || !jsc->JSValueIsObject(lib_ctx, getv)) {
        msg = strdup("lib-realm.js's library object has no get");
        goto failed;
    }
    lr.get = jsc->JSValueToObject(lib_ctx, getv, NULL);
    jsc->JSValueProtect(lib_ctx, lr.get);
    /* template-realm.js runs for every evaluation: converted once. */
    JSStringRef tpl_realm = jsc->JSStringCreateWithUTF8CString(src[CDSH_TPL_TEMPLATE_REALM]);
    JSStringRef tpl_url = jsc->JSStringCreateWithUTF8CString("cdsh:template-realm.js");
    for (int i = 0; i < CDSH_TPL_NFILES; i++)
        if (i == CDSH_TPL_EJS || i == CDSH_TPL_LIB_REALM || i == CDSH_TPL_TEMPLATE_REALM) {
            free(src[i]);
            src[i] = NULL;
        }
    /* Memory: RLIMIT_DATA at what the worker holds once the libraries are
     * in plus twice its allowance, a backstop behind the resident-set watches
     * (on_watch here, and the host's). Set only now because JavaScriptCore reserves
     * several GiB of writable address space when it starts (counted as data
     * though never touched); what it allocates later for a template (string
     * and heap growth) is new mappings and meets the limit. Sanitizer
     * builds reserve huge shadow mappings of their own and skip it. */
#ifndef CDSH_UNDER_ASAN
    if (mem_bytes)
        limit(RLIMIT_DATA, (rlim_t)(vm_data() + 2 * mem_bytes));
#endif
    /* The resident-set watch works in every build (the allowance counts
     * from the ready worker, libraries still to load included). */
    g_rss_cap = mem_bytes ? rss_bytes() + mem_bytes : 0;
    /* The ready frame's second word: the start-up's CPU time (us), all threads. */
    struct timespec cs;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cs);
    cdsh_tavern_template_frame_write(fd, "{\"ok\":true}", 11,
                                     (uint32_t)(cs.tv_sec * 1000000 + cs.tv_nsec / 1000), 0);
    bool more = true;
    for (;;) {
        /* Idle time (50 ms without a request) loads the next library. */
        while (more) {
            struct pollfd p = {fd, POLLIN, 0};
            if (poll(&p, 1, 50) != 0)
                break;
            more = preload(&lr);
        }
        unsigned char h[CDSH_TPL_HEADER];
        if (read_all(fd, (char *)h, sizeof h) < 0)
            _exit(0); /* the host closed the socket */
        uint32_t len = get_u32(h), time_ms = get_u32(h + 4);
        if (len > CDSH_TPL_MAX_FRAME)
            _exit(2);
        char *in = malloc((size_t)len + 1);
        if (!in || read_all(fd, in, len) < 0)
            _exit(2);
        in[len] = 0;
        struct timespec c0, c1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        char *reply = evaluate(&lr, tpl_realm, tpl_url, in, time_ms);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        free(in);
        int64_t cpu_us = (int64_t)(c1.tv_sec - c0.tv_sec) * 1000000 + (c1.tv_nsec - c0.tv_nsec) / 1000;
        /* The reply header's second word: the evaluation's CPU time (us). */
        if (!reply ||
            cdsh_tavern_template_frame_write(fd, reply, strlen(reply), (uint32_t)cpu_us, 0) < 0)
            _exit(2);
        free(reply);
    }
failed:
    reply_error(fd, "TEMPLATE_WORKER_FAILED", msg ? msg : "the template runtime failed to load");
    _exit(2);
}
