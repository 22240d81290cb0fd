/* fake_peer.c — the scripted fake model as a child process for tests. */
#include "support/testkit.h"

#include "support/fake_peer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/process.h"

void cdsh_test_fake_start(cdsh_test_fake *f, const char *script)
{
    memset(f, 0, sizeof *f);
    strcpy(f->dir, "/tmp/cdsh-fake-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    char script_path[128];
    snprintf(script_path, sizeof script_path, "%s/script.json", f->dir);
    snprintf(f->record, sizeof f->record, "%s/requests.jsonl", f->dir);
    cdsh_test_write_file(script_path, script);
    char *peer = cdsh_test_peer_path_dup("fake_model");
    const char *argv[] = {peer, "--script", script_path, "--record", f->record, NULL};
    cdsh_process_opts opts = {.stdin_mode = CDSH_PROCESS_PIPE, .stdout_mode = CDSH_PROCESS_PIPE};
    assert_int_equal(cdsh_process_spawn(argv, &opts, &f->proc, NULL), 0);
    free(peer);
    char line[256];
    size_t n = 0;
    while (n < sizeof line - 1 && read(cdsh_process_stdout_fd(f->proc), line + n, 1) == 1 &&
           line[n] != '\n')
        n++;
    line[n] = '\0';
    json_t *ready = json_loads(line, 0, NULL);
    assert_non_null(ready);
    snprintf(f->url, sizeof f->url, "%s", json_string_value(json_object_get(ready, "url")));
    json_decref(ready);
    setenv("CDSH_BASE_URL", f->url, 1);
    setenv("CDSH_MODEL", "fake", 1);
}

void cdsh_test_fake_stop(cdsh_test_fake *f)
{
    cdsh_process_close_stdin(f->proc);
    cdsh_process_wait(f->proc, 5000, NULL, NULL, NULL);
    cdsh_process_free(f->proc);
    char path[160];
    unlink(f->record);
    snprintf(path, sizeof path, "%s/script.json", f->dir);
    unlink(path);
    rmdir(f->dir);
    unsetenv("CDSH_BASE_URL");
}

json_t *cdsh_test_fake_bodies(cdsh_test_fake *f)
{
    json_t *arr = json_array();
    char *text = cdsh_test_read_file(f->record, NULL);
    if (!text)
        return arr;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        json_t *rec = json_loads(line, 0, NULL);
        json_array_append(arr, json_object_get(rec, "body"));
        json_decref(rec);
    }
    free(text);
    return arr;
}
