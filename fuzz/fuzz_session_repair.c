/* fuzz_session_repair.c — drives the session store with an arbitrary sequence
 * of turn/message/tool events (each byte one attempt; the store refuses what
 * breaks its turn rules), then "crashes" and checks what repair promises: no
 * open turn afterwards, a second repair adds nothing, and the replayed
 * transcript answers every tool call right after its assistant message. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/session_store.h"
#include "base/fs.h"

static cdsh_session_store *store;
static char dir[] = "/tmp/cdsh-fuzz-sessions-XXXXXX";

static void cleanup(void)
{
    cdsh_session_store_close(store);
    cdsh_fs_remove_tree(dir, NULL);
}

static void add(const char *id, const char *type, int64_t turn, json_t *payload)
{
    /* Refusals are expected: the input does not know the rules. */
    cdsh_session_store_append(store, id, type, turn, 1, payload, NULL, NULL);
    json_decref(payload);
}

static void check_transcript(const json_t *m)
{
    size_t i = 0, n = json_array_size(m);
    while (i < n) {
        const json_t *msg = json_array_get(m, i++);
        const json_t *calls = json_object_get(msg, "tool_calls");
        for (size_t k = 0; k < json_array_size(calls); k++, i++) {
            const json_t *r = json_array_get(m, i);
            const char *want = json_string_value(json_object_get(json_array_get(calls, k), "id"));
            const char *got = json_string_value(json_object_get(r, "tool_call_id"));
            if (!got || !want || strcmp(got, want) != 0)
                abort(); /* a call without its result: providers reject this transcript */
        }
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (!store) {
        if (!mkdtemp(dir))
            abort();
        atexit(cleanup);
        char path[128];
        snprintf(path, sizeof path, "%s/sessions.db", dir);
        if (cdsh_session_store_open(NULL, path, &store, NULL))
            abort();
    }
    if (size > 64)
        size = 64; /* every append is fsynced; keep inputs short */
    char *id = NULL;
    if (cdsh_session_store_create(store, NULL, &id, NULL))
        abort();
    int64_t turn = 0, calls = 0;
    for (size_t i = 0; i < size; i++) {
        unsigned b = data[i];
        int64_t t = turn + ((b & 0x80) ? 1 : 0); /* sometimes the wrong turn */
        char cid[32];
        snprintf(cid, sizeof cid, "c%lld", (long long)(calls - ((b >> 3) & 3)));
        switch (b & 7) {
        case 0:
            add(id, "turn/start", turn + 1, json_object());
            json_t *s = cdsh_session_store_info_dup(store, id, NULL);
            turn = json_integer_value(json_object_get(s, "lastTurn"));
            json_decref(s);
            break;
        case 1: add(id, "user/message", t, json_pack("{s:s}", "text", "hi")); break;
        case 2: {
            json_t *list = json_array();
            for (unsigned k = 0; k < ((b >> 3) & 3); k++) {
                char nid[32];
                snprintf(nid, sizeof nid, "c%lld", (long long)++calls);
                json_array_append_new(
                    list, json_pack("{s:s, s:s, s:s}", "id", nid, "name", "t", "arguments", "{}"));
            }
            add(id, "assistant/message", t,
                json_pack("{s:s, s:o}", "text", (b & 0x40) ? "" : "answer", "toolCalls", list));
            break;
        }
        case 3:
            add(id, "tool/call", t,
                json_pack("{s:s, s:s, s:s}", "callId", cid, "name", "t", "arguments", "{}"));
            break;
        case 4:
            add(id, "tool/result", t,
                json_pack("{s:s, s:b, s:[{s:s, s:s}]}", "callId", cid, "isError", (int)(b & 0x40),
                          "content", "type", "text", "text", "r"));
            break;
        case 5:
            add(id, "turn/end", t, json_pack("{s:s}", "reason", (b & 0x40) ? "done" : "error"));
            break;
        case 6: add(id, "notice", 0, json_pack("{s:s, s:s}", "level", "info", "text", "n")); break;
        default: i = size; break; /* the crash */
        }
    }
    int n = 0;
    if (cdsh_session_store_repair(store, id, NULL, &n, NULL))
        abort();
    json_t *s = cdsh_session_store_info_dup(store, id, NULL);
    if (!s || !json_is_null(json_object_get(s, "openTurn")))
        abort();
    json_decref(s);
    if (cdsh_session_store_repair(store, id, NULL, &n, NULL) || n != 0)
        abort();
    json_t *m = cdsh_session_store_messages(store, id, NULL);
    if (!m)
        abort();
    check_transcript(m);
    json_decref(m);
    cdsh_session_store_delete(store, id, NULL);
    free(id);
    return 0;
}
