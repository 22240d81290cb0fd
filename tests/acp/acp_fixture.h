/* acp_fixture.h — helpers shared by the ACP tests: the fixture agent's path
 * and writing engines.json rows that point at it. Header-only. */
#ifndef CDSH_TESTS_ACP_FIXTURE_H
#define CDSH_TESTS_ACP_FIXTURE_H

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "support/testkit.h"

/* Writes $CDSH_HOME/multi-acp/engines.json with the given rows text
 * (a JSON array). */
static inline void acp_write_engines(const char *home, const char *rows_json)
{
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/multi-acp", home);
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/engines.json", dir);
    char *text = malloc(strlen(rows_json) + 64);
    sprintf(text, "{\"version\":1,\"engines\":%s}", rows_json);
    cdsh_test_write_file(path, text);
    free(text);
}

/* One engine row "fixture" running the C fixture agent with extra args
 * (a JSON array text, e.g. "[\"--leak\"]") and extra fields (text to put
 * inside the object, may be ""). */
static inline void acp_write_fixture_engine(const char *home, const char *args_json,
                                            const char *extra)
{
    char *peer = cdsh_test_peer_path_dup("acp_agent");
    char rows[16384];
    snprintf(rows, sizeof rows, "[{\"id\":\"fixture\",\"command\":\"%s\",\"args\":%s%s%s}]", peer,
             args_json, extra && *extra ? "," : "", extra ? extra : "");
    acp_write_engines(home, rows);
    free(peer);
}

/* True while a process with this pid exists (and is not a zombie of ours). */
static inline int acp_pid_alive(int pid)
{
    if (pid <= 0)
        return 0;
    char path[64], state = '?';
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int n = fscanf(f, "%*d %*s %c", &state);
    fclose(f);
    return n == 1 && state != 'Z';
}

#endif
