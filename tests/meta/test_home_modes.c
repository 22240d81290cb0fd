/* test_home_modes.c — one file-mode policy for everything cdsh creates,
 * proven on a realistic run: under umask 022 and again under umask 000, a
 * fresh home gets sessions (sessions.db and its -wal/-shm, locks, forks,
 * deletes), a tavern story played through the real agent loop, profile
 * edits, imported cards and a persona, import state, an ACP probe's
 * evidence, the web server and a home cdsh had to create itself; the whole
 * tree is walked while `cdsh web` runs, while a turn is in flight (so
 * sessions.db-wal and -shm exist) and at the end: every directory 0700, every file 0600, nothing else
 * (no symlink, FIFO or socket left behind). */
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/testkit.h"

#include "../acp/acp_fixture.h"
#include "support/model_env.h"
#include "support/tavern_world.h"

/* Appends every entry of dir (recursively) whose mode breaks the policy. */
static void walk(const char *dir, char *report, size_t cap, size_t *seen)
{
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(report + strlen(report), cap - strlen(report), "  cannot open %s\n", dir);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) != 0)
            continue; /* removed meanwhile */
        (*seen)++;
        mode_t perm = st.st_mode & 07777;
        const char *bad = NULL;
        if (S_ISDIR(st.st_mode))
            bad = perm == 0700 ? NULL : "directory not 0700";
        else if (S_ISREG(st.st_mode))
            bad = perm == 0600 ? NULL : "file not 0600";
        else
            bad = "neither a file nor a directory";
        if (bad && strlen(report) + strlen(path) + 64 < cap)
            snprintf(report + strlen(report), cap - strlen(report), "  %s: %s (%04o)\n", path, bad,
                     (unsigned)perm);
        if (S_ISDIR(st.st_mode))
            walk(path, report, cap, seen);
    }
    closedir(d);
}

/* Runs cdsh and asserts its exit status; returns stdout (owned). */
static char *cdsh_ok(int want, const char *what, const char *a1, const char *a2, const char *a3,
                     const char *a4, const char *a5, const char *a6)
{
    char *out = NULL, *err = NULL;
    int rc = cdsh_test_run_cdsh(NULL, &out, &err, a1, a2, a3, a4, a5, a6, NULL);
    if (rc != want)
        fail_msg("%s: exit %d (want %d)\n%s", what, rc, want, err ? err : "");
    free(err);
    return out;
}

/* `cdsh web` until it listens; the home is walked while it runs (its open
 * sessions.db has its -wal and -shm then), then SIGTERM. */
static void web_walk(const char *home, char *report, size_t cap, size_t *seen)
{
    int out[2];
    assert_int_equal(pipe(out), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        execl(CDSH_BINARY, "cdsh", "web", "--no-open", "--json", "--port", "0", (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    FILE *f = fdopen(out[0], "r");
    char line[1024];
    assert_non_null(fgets(line, sizeof line, f));
    /* A session listed through the server opens the database. */
    free(cdsh_ok(0, "list while serving", "sessions", "list", NULL, NULL, NULL, NULL));
    walk(home, report, cap, seen);
    kill(pid, SIGTERM);
    int st = 0;
    waitpid(pid, &st, 0);
    fclose(f);
}

static void realistic_run(mode_t mask)
{
    umask(mask);
    char *home = cdsh_test_home_new();
    unsetenv("DEEPSEEK_API_KEY");
    unsetenv("CDSH_API_KEY");
    /* "slowly" holds its reply until the go file exists: a turn in flight
     * keeps sessions.db open with its -wal and -shm. */
    char go[4200], script[8800];
    snprintf(go, sizeof go, "%s.go", home);
    snprintf(script, sizeof script,
             "[{\"match\":{\"last_user_contains\":\"slowly\"},\"chunks\":[{\"text\":\"a\"},"
             "{\"text\":\"b\",\"wait_file\":\"%s\"}],\"finish_reason\":\"stop\"},"
             "{\"chunks\":[{\"text\":\"Fine.\"}],\"finish_reason\":\"stop\",\"repeat\":true}]",
             go);
    cdsh_test_fake_model model;
    cdsh_test_model_env_start(&model, script);

    /* A tavern story, played through the agent loop in this process. */
    cdsh_test_tavern_world w;
    cdsh_test_tavern_world_open(&w);
    char *sid = cdsh_test_tavern_bound_session(&w, "import", "story", NULL);
    json_decref(cdsh_test_tavern_rpc(&w, "ensureGreeting", json_pack("{s:s}", "sessionId", sid)));
    cdsh_test_tavern_turn(&w, sid, "I look around.");
    free(sid);
    cdsh_test_tavern_world_close(&w);

    /* Sessions from the command line: two turns, a fork, a delete. */
    char *err = NULL;
    assert_int_equal(cdsh_test_run_cdsh(NULL, NULL, &err, "run", "hi", NULL), 0);
    char run_sid[64];
    assert_int_equal(sscanf(strstr(err, "(session ") + 9, "%63[^,]", run_sid), 1);
    free(err);
    free(cdsh_ok(0, "run again", "run", "--session", run_sid, "more", NULL, NULL));
    char *forked = cdsh_ok(0, "fork", "sessions", "fork", run_sid, "--json", NULL, NULL);
    json_t *fj = json_loads(forked, 0, NULL);
    const char *fid = json_string_value(json_object_get(fj, "id"));
    if (!fid)
        fid = json_string_value(json_object_get(fj, "sessionId"));
    if (fid)
        free(cdsh_ok(0, "rm fork", "sessions", "rm", fid, NULL, NULL, NULL));
    json_decref(fj);
    free(forked);
    free(cdsh_ok(0, "list", "sessions", "list", NULL, NULL, NULL, NULL));

    /* Profile edits, tavern library, a persona. */
    free(cdsh_ok(0, "config set", "config", "set", "skills.maxBodyBytes", "30000", NULL, NULL));
    free(cdsh_ok(0, "config disable", "config", "disable", "xiangqi", NULL, NULL, NULL));
    free(cdsh_ok(0, "tavern import", "tavern", "import", CDSH_TEST_TAVERN_SAMPLE_V2,
                 "--without-book", NULL, NULL));
    char persona[4200];
    snprintf(persona, sizeof persona, "%s.persona.json", home); /* outside the home */
    cdsh_test_write_file(persona, "{\"name\":\"Ada\",\"description\":\"a traveller\"}");
    free(cdsh_ok(0, "persona save", "tavern", "persona", "save", persona, NULL, NULL));
    unlink(persona);

    /* Import state: a project with a server and a command, scanned and enabled. */
    char root[4200], file[4400];
    snprintf(root, sizeof root, "%s.project", home);
    mkdir(root, 0700);
    snprintf(file, sizeof file, "%s/.mcp.json", root);
    cdsh_test_write_file(file, "{\"mcpServers\":{\"notes\":{\"command\":\"/bin/true\"}}}");
    snprintf(file, sizeof file, "%s/.claude", root);
    mkdir(file, 0700);
    snprintf(file, sizeof file, "%s/.claude/commands", root);
    mkdir(file, 0700);
    snprintf(file, sizeof file, "%s/.claude/commands/hello.md", root);
    cdsh_test_write_file(file, "---\ndescription: say hello\n---\nSay hello.\n");
    free(cdsh_ok(0, "import scan", "import", "scan", "--root", root, "--json", NULL));
    char *en = NULL;
    cdsh_test_run_cdsh(NULL, &en, NULL, "import", "enable", "--all-ok", "--root", root, NULL);
    free(en);

    /* An ACP probe writes its evidence; engines.json is the test's own
     * input, given the mode a person's editor would (not cdsh's doing). */
    acp_write_fixture_engine(home, "[]", "");
    char engines[4200];
    snprintf(engines, sizeof engines, "%s/multi-acp/engines.json", home);
    chmod(engines, 0600);
    free(cdsh_ok(0, "acp probe", "acp", "probe", "fixture", "--cwd", root, NULL));

    char report[16384] = "";
    size_t seen_live = 0, seen_turn = 0, seen = 0;
    web_walk(home, report, sizeof report, &seen_live);

    /* A turn in flight: walk while its reply is held. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open("/dev/null", O_RDWR);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(CDSH_BINARY, "cdsh", "run", "--session", run_sid, "reply slowly", (char *)NULL);
        _exit(127);
    }
    char wal[4300];
    snprintf(wal, sizeof wal, "%s/sessions.db-wal", home);
    struct stat st;
    int64_t budget = cdsh_test_scale_ms(30000);
    for (int64_t t = 0; t < budget && stat(wal, &st) != 0; t += 20)
        usleep(20000);
    if (stat(wal, &st) != 0)
        fail_msg("umask %03o: no sessions.db-wal while a turn was in flight", (unsigned)mask);
    walk(home, report, sizeof report, &seen_turn);
    cdsh_test_write_file(go, "go");
    int wst = 0;
    assert_int_equal(waitpid(pid, &wst, 0), pid);
    assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    unlink(go);

    /* A home cdsh has to create itself (two levels). */
    char fresh[4200];
    snprintf(fresh, sizeof fresh, "%s/nested/fresh-home", home);
    setenv("CDSH_HOME", fresh, 1);
    free(cdsh_ok(0, "fresh home", "run", "in a new home", NULL, NULL, NULL, NULL));
    setenv("CDSH_HOME", home, 1);

    cdsh_test_model_env_stop(&model);

    walk(home, report, sizeof report, &seen);
    assert_int_equal(stat(home, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    if (report[0])
        fail_msg("umask %03o: %zu entries under the home, these break the 0600/0700 policy:\n%s",
                 (unsigned)mask, seen, report);
    /* The run really produced the files the policy is about. */
    char p[4300];
    snprintf(p, sizeof p, "%s/sessions.db", home);
    assert_int_equal(stat(p, &st), 0);
    if (seen < 20)
        fail_msg("umask %03o: only %zu entries under the home; the run did too little",
                 (unsigned)mask, seen);
    fprintf(stderr,
            "umask %03o: entries checked while cdsh web ran %zu, during a turn %zu, after %zu\n",
            (unsigned)mask, seen_live, seen_turn, seen);
    if (getenv("T23_LIST")) {
        snprintf(p, sizeof p, "find '%s' -printf '%%m %%p\\n'", home);
        (void)!system(p);
    }
    char cmd[8800];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
    cdsh_test_home_free(home);
    umask(022);
}

static void umask_022(void **state)
{
    (void)state;
    realistic_run(022);
}

static void umask_000(void **state)
{
    (void)state;
    realistic_run(000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(umask_022),
        cmocka_unit_test(umask_000),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
