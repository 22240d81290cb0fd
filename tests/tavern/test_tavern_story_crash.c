/* test_tavern_story_crash.c — SIGKILL in the middle of floor writes, undo
 * and branch publication (peer tavern_crash), then every story must open and
 * be either before or after each interrupted operation: the write log and
 * the bodies agree, no undo is left half done, published branches carry no
 * floor they were meant to undo, the source is never rolled back.
 * Each kill comes after a random number (1..4) of operations the peer reports
 * as completed, plus a random part of the peer's own measured time per
 * operation, so the kill lands inside an operation and the stories grow on
 * any machine. CDSH_TAVERN_CRASH_KILLS sets the number of kills (default 300;
 * the unit tier runs 24); the seed (support/seed.h) replays the operations
 * and kill counts. */
#include "support/testkit.h"

#include "support/tavern_world.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plugins/tavern/binding.h"
#include "plugins/tavern/store.h"

static void bind(cdsh_tavern_bindings *b, const char *card, const char *session)
{
    cdsh_error err = {0};
    json_t *spec = json_pack("{s:s,s:s}", "sessionId", session, "cardId", card);
    assert_int_equal(cdsh_tavern_binding_set(b, spec, NULL, &err), 0);
    json_decref(spec);
}

static int64_t scalar(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return v;
}

static char *col_dup(sqlite3_stmt *st, int i)
{
    const char *t = (const char *)sqlite3_column_text(st, i);
    return t ? strdup(t) : NULL;
}

/* One (kind, key) of the log once its records were read: the value its body
 * must have. */
static void check_key(sqlite3_stmt *body, const char *story, const char *kind, const char *key,
                      const char *oldest_before, const char *newest_live_after, bool any_live)
{
    sqlite3_reset(body);
    sqlite3_bind_text(body, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(body, 2, key, -1, SQLITE_STATIC);
    const char *have =
        sqlite3_step(body) == SQLITE_ROW ? (const char *)sqlite3_column_text(body, 0) : NULL;
    const char *want = any_live ? newest_live_after : oldest_before;
    if ((want == NULL) != (have == NULL) || (want && strcmp(want, have) != 0))
        fail_msg("story %s key %s: log says %s, body is %s", story, key, want ? want : "(absent)",
                 have ? have : "(absent)");
}

/* Write log and bodies agree: a key's value is the after of its newest live
 * record, or the before of its oldest record when all its floors were undone.
 * One ordered pass over the log (the test verifies after every kill, so a
 * query per key would make the whole run cubic in the number of kills). */
static void check_log_matches_bodies(sqlite3 *db, const char *story)
{
    sqlite3_stmt *st = NULL, *body = NULL;
    const char *sql = "SELECT l.kind, l.key, l.before, l.after, f.rolled_back_at IS NULL"
                      " FROM log l JOIN floors f ON f.name=l.floor"
                      " ORDER BY l.kind, l.key, f.pos, l.seq";
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT value FROM objects WHERE kind=?1 AND key=?2",
                                        -1, &body, NULL),
                     SQLITE_OK);
    char *kind = NULL, *key = NULL, *oldest_before = NULL, *newest_live_after = NULL;
    bool any_live = false;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(st, 0);
        const char *y = (const char *)sqlite3_column_text(st, 1);
        if (!kind || strcmp(kind, k) != 0 || strcmp(key, y) != 0) {
            if (kind)
                check_key(body, story, kind, key, oldest_before, newest_live_after, any_live);
            free(kind), free(key), free(oldest_before), free(newest_live_after);
            kind = strdup(k), key = strdup(y);
            oldest_before = col_dup(st, 2);
            newest_live_after = NULL;
            any_live = false;
        }
        if (sqlite3_column_int(st, 4)) {
            free(newest_live_after);
            newest_live_after = col_dup(st, 3);
            any_live = true;
        }
    }
    if (kind)
        check_key(body, story, kind, key, oldest_before, newest_live_after, any_live);
    free(kind), free(key), free(oldest_before), free(newest_live_after);
    sqlite3_finalize(body);
    sqlite3_finalize(st);
}

static void verify(const char *home, cdsh_tavern_bindings *b)
{
    char *dir = NULL;
    assert_true(asprintf(&dir, "%s/tavern/stories", home) > 0);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 4 || strcmp(e->d_name + len - 3, ".db") != 0)
            continue;
        char *path = NULL;
        assert_true(asprintf(&path, "%s/%s", dir, e->d_name) > 0);
        cdsh_tavern_story *s = NULL;
        cdsh_error err = {0};
        if (cdsh_tavern_story_open(path, &s, &err) < 0)
            fail_msg("story %s does not open: %s %s", e->d_name, err.code, err.message);
        char *owner = strdup(cdsh_tavern_story_session_get(s));
        char *id = strdup(cdsh_tavern_story_id_get(s));
        cdsh_tavern_story_free(s);
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        sqlite3_busy_timeout(db, 5000);
        assert_int_equal(scalar(db, "SELECT COUNT(*) FROM undo"), 0);
        check_log_matches_bodies(db, e->d_name);
        json_t *binding = NULL;
        bool bound = cdsh_tavern_binding_load(b, owner, &binding, NULL) == 0 &&
                     strcmp(json_string_value(json_object_get(binding, "storyId")), id) == 0;
        if (bound && strcmp(owner, "s-p") == 0)
            assert_int_equal(scalar(db, "SELECT COUNT(*) FROM floors WHERE rolled_back_at IS NOT "
                                        "NULL"),
                             0);
        if (strncmp(owner, "s-c", 3) == 0 || strcmp(owner, id) == 0)
            /* a branch: published only after its undo finished */
            assert_int_equal(scalar(db, "SELECT COUNT(*) FROM floors WHERE session='s-p' AND "
                                        "turn>=2 AND rolled_back_at IS NULL"),
                             0);
        if (!bound)
            assert_true(strcmp(owner, id) == 0 || strncmp(owner, "s-c", 3) == 0);
        json_decref(binding);
        sqlite3_close(db);
        free(owner);
        free(id);
        free(path);
    }
    closedir(d);
    free(dir);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct run_stats {
    int ops;            /* operations reported complete */
    int committed;      /* of them, s-p floors committed ('p') */
    double startup_sum; /* seconds from exec to the first report, summed */
    double op_sum;      /* seconds between consecutive reports, summed */
    int op_gaps;        /* how many such gaps */
} run_stats;

/* The peer's measured time per operation (its start-up while no gap is known). */
static double op_time(const run_stats *st, int runs)
{
    return st->op_gaps ? st->op_sum / st->op_gaps : st->startup_sum / (runs ? runs : 1);
}

static void count_reports(const char *buf, ssize_t n, run_stats *st, int *seen)
{
    static double last;
    double now = now_s();
    for (ssize_t i = 0; i < n; i++) {
        if (!buf[i] || !strchr("pub.", buf[i]))
            fail_msg("peer reported '%c' (0x%02x), not an operation", buf[i],
                     (unsigned char)buf[i]);
        if (*seen > 0) {
            st->op_sum += (now - last) / (double)n;
            st->op_gaps++;
        }
        (*seen)++;
        st->ops++;
        st->committed += buf[i] == 'p';
    }
    last = now;
}

/* Starts the peer with `peer_seed`, waits until it has reported `target`
 * completed operations, lets it run a random part (`frac`) of one more
 * operation and kills it; then reads what it reported meanwhile. */
static void run_and_kill(const char *peer, uint64_t peer_seed, int target, double frac, int run,
                         run_stats *st)
{
    char seed_arg[32];
    snprintf(seed_arg, sizeof seed_arg, "%" PRIu64, peer_seed);
    int out_p[2], err_p[2];
    assert_int_equal(pipe(out_p), 0);
    assert_int_equal(pipe(err_p), 0);
    double start = now_s();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(out_p[1], 1);
        dup2(err_p[1], 2);
        close(out_p[0]);
        close(err_p[0]);
        execl(peer, peer, seed_arg, (char *)NULL);
        _exit(127);
    }
    close(out_p[1]);
    close(err_p[1]);
    /* An operation takes milliseconds; this budget only ends a hung peer. */
    int budget = cdsh_test_scale_ms(120000);
    double deadline = start + budget / 1000.0;
    int seen = 0;
    char buf[256];
    while (seen < target) {
        double left = deadline - now_s();
        struct pollfd pfd = {out_p[0], POLLIN, 0};
        int pr = left > 0 ? poll(&pfd, 1, (int)(left * 1000) + 1) : 0;
        if (pr < 0 && errno == EINTR)
            continue;
        ssize_t n = pr > 0 ? read(out_p[0], buf, sizeof buf) : -1;
        if (n <= 0) {
            kill(pid, SIGKILL);
            int status = 0;
            waitpid(pid, &status, 0);
            char tail[2048];
            ssize_t e = read(err_p[0], tail, sizeof tail - 1);
            tail[e > 0 ? e : 0] = '\0';
            fail_msg("peer (seed %s) reported %d of %d operations, then %s (status %d) after "
                     "%.1f s; stderr: %s",
                     seed_arg, seen, target,
                     pr == 0 ? "nothing within its budget" : "ended on its own", status,
                     now_s() - start, tail);
        }
        if (seen == 0)
            st->startup_sum += now_s() - start;
        count_reports(buf, n, st, &seen);
    }
    double wait = frac * op_time(st, run + 1);
    struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    kill(pid, SIGKILL);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        fail_msg("peer (seed %s) ended with status %d instead of being killed", seed_arg, status);
    ssize_t n;
    while ((n = read(out_p[0], buf, sizeof buf)) > 0)
        count_reports(buf, n, st, &seen);
    close(out_p[0]);
    close(err_p[0]);
}

static void killed_operations_leave_every_story_before_or_after(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_tavern_store *store = NULL;
    cdsh_tavern_bindings *b = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_store_open(cdsh_test_home(), NULL, &store, &err), 0);
    char *card = cdsh_test_tavern_import_sample(store);
    assert_int_equal(cdsh_tavern_bindings_open(store, &b, &err), 0);
    bind(b, card, "s-p");
    bind(b, card, "s-u");
    free(card);
    int kills = 300;
    const char *env = getenv("CDSH_TAVERN_CRASH_KILLS");
    if (env && atoi(env) > 0)
        kills = atoi(env);
    char *peer = cdsh_test_peer_path_dup("tavern_crash");
    uint64_t rng = cdsh_test_seed("kills");
    run_stats st = {0};
    int killed = 0;
    for (int i = 0; i < kills; i++) {
        uint64_t peer_seed = cdsh_test_rand(&rng);
        int target = 1 + (int)cdsh_test_rand_below(&rng, 4);
        double frac = (double)cdsh_test_rand_below(&rng, 1000) / 1000.0;
        run_and_kill(peer, peer_seed, target, frac, i, &st);
        killed++;
        verify(home, b);
        if (killed % 50 == 0 && killed < kills) { /* progress, should a backstop end the run */
            printf("%d/%d kills, %d operations\n", killed, kills, st.ops);
            fflush(stdout);
        }
    }
    assert_int_equal(killed, kills);
    printf("%d kills after %d completed operations (%d s-p floors committed); peer start-up "
           "%.1f ms, %.1f ms per operation\n",
           killed, st.ops, st.committed, st.startup_sum * 1000 / killed,
           op_time(&st, killed) * 1000);
    /* the stories grew: every floor the peer reported committed is there */
    cdsh_tavern_story *s = NULL;
    assert_int_equal(cdsh_tavern_binding_open_story(b, "s-p", &s, &err), 0);
    json_t *floors = NULL;
    assert_int_equal(cdsh_tavern_story_floors(s, &floors, &err), 0);
    size_t mine = 0, fi;
    json_t *f;
    json_array_foreach(floors, fi, f) {
        const char *owner = json_string_value(json_object_get(f, "session"));
        mine += owner && strcmp(owner, "s-p") == 0;
    }
    if (mine < (size_t)st.committed)
        fail_msg("s-p has %zu floors, the peer reported %d committed", mine, st.committed);
    assert_true(st.ops >= kills); /* every kill came after at least one operation */
    if (kills >= 24) {            /* 2 in 5 operations commit an s-p floor */
        assert_true(st.committed >= 5);
        assert_true(json_array_size(floors) >= 5);
    }
    json_decref(floors);
    cdsh_tavern_story_free(s);
    free(peer);
    cdsh_tavern_bindings_free(b);
    cdsh_tavern_store_free(store);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(killed_operations_leave_every_story_before_or_after),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
