/* fake_model.c — test-side launcher of the scripted fake model endpoint. */
#include "support/fake_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/process.h"
#include "support/testkit.h"

void cdsh_test_fake_model_start(cdsh_test_fake_model *f, const char *script,
                                const char *const *extra_args)
{
    memset(f, 0, sizeof *f);
    strcpy(f->dir, "/tmp/cdsh-fake-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->script, sizeof f->script, "%s/script.json", f->dir);
    snprintf(f->record, sizeof f->record, "%s/requests.jsonl", f->dir);
    cdsh_test_write_file(f->script, script);

    char *peer = cdsh_test_peer_path_dup("fake_model");
    const char *argv[32] = {peer, "--script", f->script, "--record", f->record};
    size_t n = 5;
    for (size_t i = 0; extra_args && extra_args[i] && n < 31; i++)
        argv[n++] = extra_args[i];
    argv[n] = NULL;
    cdsh_process_opts opts = {.stdin_mode = CDSH_PROCESS_PIPE, .stdout_mode = CDSH_PROCESS_PIPE};
    cdsh_error err;
    assert_int_equal(cdsh_process_spawn(argv, &opts, &f->proc, &err), 0);
    free(peer);

    /* The fake prints one JSON line with its URL once it listens. */
    char line[256];
    size_t len = 0;
    while (len < sizeof line - 1) {
        ssize_t r = read(cdsh_process_stdout_fd(f->proc), line + len, 1);
        if (r <= 0 || line[len] == '\n')
            break;
        len++;
    }
    line[len] = '\0';
    json_t *ready = json_loads(line, 0, NULL);
    assert_non_null(ready);
    snprintf(f->url, sizeof f->url, "%s", json_string_value(json_object_get(ready, "url")));
    assert_true(json_integer_value(json_object_get(ready, "port")) > 0);
    json_decref(ready);
}

void cdsh_test_fake_model_stop(cdsh_test_fake_model *f)
{
    cdsh_process_close_stdin(f->proc);
    cdsh_process_status status;
    assert_int_equal(cdsh_process_wait(f->proc, 5000, NULL, &status, NULL), 0);
    assert_true(status.exited);
    assert_int_equal(status.exit_code, 0);
    cdsh_process_free(f->proc);
    f->proc = NULL;
    unlink(f->record);
    unlink(f->script);
    rmdir(f->dir);
}

json_t *cdsh_test_fake_model_requests(const cdsh_test_fake_model *f)
{
    json_t *arr = json_array();
    char *text = cdsh_test_read_file(f->record, NULL);
    if (!text)
        return arr;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        json_array_append_new(arr, json_loads(line, 0, NULL));
    free(text);
    return arr;
}

size_t cdsh_test_fake_model_count(const cdsh_test_fake_model *f)
{
    json_t *r = cdsh_test_fake_model_requests(f);
    size_t n = json_array_size(r);
    json_decref(r);
    return n;
}
