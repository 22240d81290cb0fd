/* acp_replay.c — replays a recorded ACP wire transcript (shared
 * reference/acp-evidence/peers/<name>.transcript.ndjson: {t, dir:"out"|"in", line}) as an
 * agent, so the client is tested against what real agents sent. For each
 * request from the client it finds the next recorded "out" request with the
 * same method and writes the recorded "in" lines up to the next recorded
 * "out" request, with the recorded response id replaced by the client's.
 * A recorded agent→client request waits for the client's answer first.
 * Usage: acp_replay TRANSCRIPT. Not an agent: it never invents a message. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    int out; /* 1: client → agent */
    json_t *msg;
} entry;

static entry *entries;
static size_t n_entries, cursor;

static json_t *read_client(void)
{
    static char *line;
    static size_t cap;
    for (;;) {
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0)
            return NULL;
        json_t *m = json_loads(line, 0, NULL);
        if (m)
            return m;
    }
}

static void emit(json_t *m)
{
    char *s = json_dumps(m, JSON_COMPACT | JSON_PRESERVE_ORDER);
    fprintf(stdout, "%s\n", s);
    fflush(stdout);
    free(s);
}

static void answer_unknown(json_t *id, const char *method)
{
    json_t *r = json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id, "error", "code",
                          -32601, "message", method ? method : "?");
    emit(r);
    json_decref(r);
}

/* Plays the recorded agent side after the recorded request at index i. */
static void play(size_t i, json_t *client_id)
{
    json_t *rec_id = json_object_get(entries[i].msg, "id");
    for (size_t k = i + 1; k < n_entries; k++) {
        entry *e = &entries[k];
        if (e->out) {
            if (json_object_get(e->msg, "method")) {
                cursor = k;
                return; /* the next recorded client request */
            }
            /* A recorded answer to an agent request: wait for the client's. */
            json_t *m;
            while ((m = read_client()) && json_object_get(m, "method"))
                json_decref(m);
            json_decref(m);
            continue;
        }
        json_t *m = json_deep_copy(e->msg);
        json_t *id = json_object_get(m, "id");
        if (!json_object_get(m, "method") && id && json_equal(id, rec_id))
            json_object_set(m, "id", client_id);
        emit(m);
        json_decref(m);
    }
    cursor = n_entries;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: acp_replay TRANSCRIPT\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        fprintf(stderr, "acp_replay: cannot open %s\n", argv[1]);
        return 2;
    }
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) >= 0) {
        json_t *rec = json_loads(line, 0, NULL);
        const char *dir = json_string_value(json_object_get(rec, "dir"));
        const char *raw = json_string_value(json_object_get(rec, "line"));
        json_t *msg = raw ? json_loads(raw, 0, NULL) : NULL;
        if (dir && msg) {
            entries = realloc(entries, (n_entries + 1) * sizeof *entries);
            entries[n_entries++] = (entry){strcmp(dir, "out") == 0, msg};
        } else {
            json_decref(msg);
        }
        json_decref(rec);
    }
    free(line);
    fclose(f);
    fprintf(stderr, "acp_replay: %zu recorded messages\n", n_entries);
    json_t *m;
    while ((m = read_client())) {
        const char *method = json_string_value(json_object_get(m, "method"));
        json_t *id = json_object_get(m, "id");
        if (method && id) {
            size_t i = cursor;
            while (i < n_entries &&
                   !(entries[i].out && json_equal(json_object_get(entries[i].msg, "method"),
                                                  json_object_get(m, "method"))))
                i++;
            if (i < n_entries)
                play(i, id);
            else
                answer_unknown(id, method);
        }
        json_decref(m);
    }
    for (size_t i = 0; i < n_entries; i++)
        json_decref(entries[i].msg);
    free(entries);
    return 0;
}
