/* bench_session_store.c — session store figures in a temporary directory:
 * durable appends per second (each one fsynced), replay of a long tool-using
 * session into chat messages, and listing sessions. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/session_store.h"
#include "base/fs.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int add(cdsh_session_store *s, const char *id, const char *type, int64_t turn,
               json_t *payload)
{
    cdsh_error e = {0};
    int rc = cdsh_session_store_append(s, id, type, turn, 1, payload, NULL, &e);
    json_decref(payload);
    if (rc)
        fprintf(stderr, "append %s: %s\n", type, e.message);
    return rc;
}

int main(void)
{
    char dir[] = "/tmp/cdsh-bench-sessions-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char path[256];
    snprintf(path, sizeof path, "%s/sessions.db", dir);
    cdsh_session_store *s = NULL;
    cdsh_error e = {0};
    if (cdsh_session_store_open(NULL, path, &s, &e)) {
        fprintf(stderr, "open: %s\n", e.message);
        return 1;
    }
    char *id = NULL;
    cdsh_session_spec spec = {.title = "bench", .model = "deepseek-chat"};
    cdsh_session_store_create(s, &spec, &id, NULL);

    /* 100 turns of: user, assistant with 2 calls, 2 tool/call, 2 results, final answer. */
    const int turns = 100;
    int events = 0;
    double t0 = now();
    for (int t = 1; t <= turns; t++) {
        int rc = add(s, id, "turn/start", t, json_object());
        rc |= add(s, id, "user/message", t, json_pack("{s:s}", "text", "please read two files"));
        rc |= add(s, id, "assistant/message", t,
                  json_pack("{s:s, s:s, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}]}", "text", "",
                            "reasoning", "I should read both files first.", "toolCalls", "id", "c1",
                            "name", "read_file", "arguments", "{\"path\":\"a.c\"}", "id", "c2",
                            "name", "read_file", "arguments", "{\"path\":\"b.c\"}"));
        for (int c = 1; c <= 2; c++) {
            char cid[8];
            snprintf(cid, sizeof cid, "c%d", c);
            rc |= add(s, id, "tool/call", t,
                      json_pack("{s:s, s:s, s:s}", "callId", cid, "name", "read_file", "arguments",
                                "{}"));
            rc |= add(s, id, "tool/result", t,
                      json_pack("{s:s, s:b, s:[{s:s, s:s}]}", "callId", cid, "isError", 0,
                                "content", "type", "text", "text",
                                "int main(void) { return 0; } /* a short file */"));
        }
        rc |=
            add(s, id, "assistant/message", t, json_pack("{s:s}", "text", "Both files are fine."));
        rc |= add(s, id, "turn/end", t, json_pack("{s:s}", "reason", "done"));
        if (rc)
            return 1;
        events += 9;
    }
    double t1 = now();
    printf("append (durable, synchronous=FULL): %d events in %.2f s = %.0f events/s, "
           "%.2f ms each\n",
           events, t1 - t0, events / (t1 - t0), 1000.0 * (t1 - t0) / events);

    const int replays = 20;
    size_t n_messages = 0;
    t0 = now();
    for (int i = 0; i < replays; i++) {
        json_t *m = cdsh_session_store_messages(s, id, &e);
        if (!m)
            return 1;
        n_messages = json_array_size(m);
        json_decref(m);
    }
    t1 = now();
    printf("replay: %d events -> %zu messages in %.2f ms\n", events, n_messages,
           1000.0 * (t1 - t0) / replays);

    for (int i = 0; i < 199; i++) {
        char *other = NULL;
        cdsh_session_store_create(s, &spec, &other, NULL);
        free(other);
    }
    t0 = now();
    int64_t total = 0;
    for (int i = 0; i < replays; i++)
        json_decref(cdsh_session_store_list(s, 0, 50, &total, NULL));
    t1 = now();
    printf("list: first 50 of %lld sessions in %.2f ms\n", (long long)total,
           1000.0 * (t1 - t0) / replays);

    free(id);
    cdsh_session_store_close(s);
    cdsh_fs_remove_tree(dir, NULL);
    return 0;
}
