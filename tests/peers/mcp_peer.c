/* mcp_peer.c — a small hand-written MCP stdio server for the client tests.
 * Deliberately independent of cdsh's own server core, and able to misbehave
 * on demand: `mcp_peer [--mode M] [--tools N] [--page P] [--log FILE]`.
 * Modes: normal, no-init (never answers initialize), garbage (noise lines
 * before every answer), big-instructions, dup-tools, same-cursor,
 * exit-at-start, old-version. Tools: echo, slow (progress, cancellable),
 * fail (isError), structured, env (prints the environment), die (exits
 * mid-call), oversize (an answer over 2 MiB), change (list_changed), t<i>. */
#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *mode = "normal";
static int extra_tools = 0, page = 100;
static FILE *log_file;
static bool changed = false;

static char inbuf[1 << 20];
static size_t inlen = 0;

/* Next line from stdin, waiting at most timeout_ms (-1 forever). Returns an
 * owned line, NULL on timeout; exits on EOF. */
static char *read_line(int timeout_ms)
{
    for (;;) {
        char *nl = memchr(inbuf, '\n', inlen);
        if (nl) {
            size_t n = (size_t)(nl - inbuf);
            char *line = strndup(inbuf, n);
            memmove(inbuf, nl + 1, inlen - n - 1);
            inlen -= n + 1;
            return line;
        }
        struct pollfd p = {.fd = 0, .events = POLLIN};
        int r = poll(&p, 1, timeout_ms);
        if (r == 0)
            return NULL;
        if (inlen == sizeof inbuf)
            inlen = 0; /* drop absurd lines */
        ssize_t got = read(0, inbuf + inlen, sizeof inbuf - inlen);
        if (got <= 0)
            exit(0);
        inlen += (size_t)got;
    }
}

static void send_json(json_t *v)
{
    if (strcmp(mode, "garbage") == 0)
        printf("this is not json\n{\"also\": not json}\n[1,2,3]\n");
    char *s = json_dumps(v, JSON_COMPACT);
    printf("%s\n", s);
    fflush(stdout);
    free(s);
    json_decref(v);
}

static void result(json_t *id, json_t *res)
{
    send_json(json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", res));
}

static void rpc_error(json_t *id, int code, const char *msg)
{
    send_json(json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id, "error", "code", code,
                        "message", msg));
}

static json_t *text_result(const char *text, int is_error)
{
    json_t *r = json_pack("{s:[{s:s,s:s}]}", "content", "type", "text", "text", text);
    if (is_error)
        json_object_set_new(r, "isError", json_true());
    return r;
}

static json_t *tool(const char *name, const char *desc)
{
    return json_pack("{s:s,s:s,s:{s:s,s:{}}}", "name", name, "description", desc, "inputSchema",
                     "type", "object", "properties");
}

static json_t *all_tools(void)
{
    json_t *t = json_array();
    json_array_append_new(t,
                          json_pack("{s:s,s:s,s:{s:s,s:{s:{s:s}},s:[s]}}", "name", "echo",
                                    "description", "Echoes text", "inputSchema", "type", "object",
                                    "properties", "text", "type", "string", "required", "text"));
    json_array_append_new(t, tool("slow", "Sleeps ms milliseconds with progress"));
    json_array_append_new(t, tool("fail", "Always fails"));
    json_t *st = tool("structured", "Returns structured content");
    json_object_set_new(
        st, "outputSchema",
        json_pack("{s:s,s:{s:{s:s}}}", "type", "object", "properties", "sum", "type", "number"));
    json_array_append_new(t, st);
    json_array_append_new(t, tool("env", "Prints the environment"));
    json_array_append_new(t, tool("die", "Exits mid-call"));
    json_array_append_new(t, tool("oversize", "Answers with a huge message"));
    json_array_append_new(t, tool("change", "Adds a tool and sends list_changed"));
    json_t *task = tool("task_only", "Requires tasks");
    json_object_set_new(task, "execution", json_pack("{s:s}", "taskSupport", "required"));
    json_array_append_new(t, task);
    if (changed)
        json_array_append_new(t, tool("added", "Appeared after change"));
    for (int i = 0; i < extra_tools; i++) {
        char n[32];
        snprintf(n, sizeof n, "t%d", i);
        json_array_append_new(t, tool(n, "numbered tool"));
    }
    if (strcmp(mode, "dup-tools") == 0)
        json_array_append_new(t, tool("echo", "again"));
    return t;
}

static void list(json_t *id, json_t *params)
{
    json_t *t = all_tools();
    const char *cursor = json_string_value(json_object_get(params, "cursor"));
    size_t off = cursor ? (size_t)atoi(cursor) : 0;
    json_t *pg = json_array();
    bool stuck = strcmp(mode, "same-cursor") == 0;
    for (size_t i = off; !(stuck && cursor) && i < json_array_size(t) && i < off + (size_t)page;
         i++)
        json_array_append(pg, json_array_get(t, i));
    json_t *r = json_pack("{s:o}", "tools", pg);
    if (off + (size_t)page < json_array_size(t) || strcmp(mode, "same-cursor") == 0) {
        char c[16];
        snprintf(c, sizeof c, "%zu", stuck ? 7 : off + (size_t)page);
        json_object_set_new(r, "nextCursor", json_string(c));
    }
    json_decref(t);
    result(id, r);
}

static void slow(json_t *id, json_t *params)
{
    json_t *args = json_object_get(params, "arguments");
    int ms = (int)json_integer_value(json_object_get(args, "ms"));
    json_t *tok = json_object_get(json_object_get(params, "_meta"), "progressToken");
    int steps = ms / 50, i;
    for (i = 0; i < steps; i++) {
        char *line = read_line(50);
        if (line) {
            json_t *m = json_loads(line, 0, NULL);
            free(line);
            const char *method = json_string_value(json_object_get(m, "method"));
            if (method && strcmp(method, "notifications/cancelled") == 0 &&
                json_equal(json_object_get(json_object_get(m, "params"), "requestId"), id)) {
                if (log_file) {
                    fprintf(
                        log_file, "cancelled %s\n",
                        json_string_value(json_object_get(json_object_get(m, "params"), "reason")));
                    fflush(log_file);
                }
                json_decref(m);
                return; /* never answer a cancelled request */
            }
            json_decref(m);
        }
        if (tok)
            send_json(json_pack("{s:s,s:s,s:{s:O,s:i,s:i}}", "jsonrpc", "2.0", "method",
                                "notifications/progress", "params", "progressToken", tok,
                                "progress", i + 1, "total", steps));
    }
    result(id, text_result("slept", 0));
}

static void call(json_t *id, json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    if (!name) {
        rpc_error(id, -32602, "missing name");
    } else if (strcmp(name, "echo") == 0) {
        const char *text = json_string_value(json_object_get(args, "text"));
        result(id, text_result(text ? text : "(no text)", 0));
    } else if (strcmp(name, "slow") == 0) {
        slow(id, params);
    } else if (strcmp(name, "fail") == 0) {
        result(id, text_result("it failed on purpose", 1));
    } else if (strcmp(name, "structured") == 0) {
        json_t *r = text_result("{\"sum\":3}", 0);
        json_object_set_new(r, "structuredContent", json_pack("{s:i}", "sum", 3));
        result(id, r);
    } else if (strcmp(name, "env") == 0) {
        json_t *lines = json_array();
        for (char **e = environ; *e; e++)
            json_array_append_new(lines, json_string(*e));
        char *s = json_dumps(lines, JSON_COMPACT);
        result(id, text_result(s, 0));
        free(s);
        json_decref(lines);
    } else if (strcmp(name, "die") == 0) {
        fprintf(stderr, "peer: dying on purpose\n");
        exit(3);
    } else if (strcmp(name, "oversize") == 0) {
        size_t n = 3u << 20;
        char *big = malloc(n + 1);
        memset(big, 'x', n);
        big[n] = '\0';
        result(id, text_result(big, 0));
        free(big);
    } else if (strcmp(name, "change") == 0) {
        changed = true;
        send_json(
            json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", "notifications/tools/list_changed"));
        result(id, text_result("changed", 0));
    } else {
        rpc_error(id, -32602, "Unknown tool");
    }
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mode") == 0)
            mode = argv[i + 1];
        else if (strcmp(argv[i], "--tools") == 0)
            extra_tools = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--page") == 0)
            page = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--log") == 0)
            log_file = fopen(argv[i + 1], "a");
    }
    if (strcmp(mode, "exit-at-start") == 0) {
        fprintf(stderr, "peer: refusing to start\n");
        return 7;
    }
    for (;;) {
        char *line = read_line(-1);
        json_t *m = json_loads(line, 0, NULL);
        free(line);
        const char *method = json_string_value(json_object_get(m, "method"));
        json_t *id = json_object_get(m, "id");
        json_t *params = json_object_get(m, "params");
        if (!method || !id) {
            json_decref(m);
            continue;
        }
        if (strcmp(method, "initialize") == 0) {
            if (strcmp(mode, "no-init") == 0) {
                json_decref(m);
                continue;
            }
            json_t *r = json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s}}", "protocolVersion",
                                  strcmp(mode, "old-version") == 0 ? "1999-01-01" : "2025-06-18",
                                  "capabilities", "tools", "listChanged", 1, "serverInfo", "name",
                                  "mcp_peer", "version", "1.0");
            if (strcmp(mode, "big-instructions") == 0) {
                char *big = malloc(40000);
                memset(big, 'i', 39999);
                big[39999] = '\0';
                json_object_set_new(r, "instructions", json_string(big));
                free(big);
            } else {
                json_object_set_new(r, "instructions", json_string("Use echo to echo."));
            }
            result(id, r);
        } else if (strcmp(method, "tools/list") == 0) {
            list(id, params);
        } else if (strcmp(method, "tools/call") == 0) {
            call(id, params);
        } else if (strcmp(method, "ping") == 0) {
            result(id, json_object());
        } else {
            rpc_error(id, -32601, "Method not found");
        }
        json_decref(m);
    }
}
