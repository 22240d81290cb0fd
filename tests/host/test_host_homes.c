/* test_host_homes.c — a host keeps its state in its own home: two hosts in
 * one process, each with a home of its own (cdsh_host_new_at), load every
 * built-in plugin and make state; everything lands in the right home and
 * nothing in the home the environment names. */
#include "support/testkit.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/home.h"
#include "host/host.h"
#include "plugins/acp/plugin.h"
#include "plugins/acp/service.h"
#include "plugins/builtin.h"

static bool exists(const char *dir, const char *rel)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    struct stat st;
    return stat(path, &st) == 0;
}

/* The sessions.json of <dir>/multi-acp, parsed (owned), or NULL. */
static json_t *acp_sessions(const char *dir)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/multi-acp/sessions.json", dir);
    return json_load_file(path, 0, NULL);
}

static cdsh_host *host_at(const char *dir)
{
    cdsh_home *home = NULL;
    assert_int_equal(cdsh_home_new(dir, &home, NULL), 0);
    cdsh_host *host = cdsh_host_new_at(home);
    assert_non_null(host);
    assert_string_equal(cdsh_home_dir_get(cdsh_host_home(host)), dir);
    /* Every built-in, also those a default profile leaves off. */
    for (const cdsh_plugin_def *const *d = cdsh_builtin_plugins; *d; d++) {
        cdsh_error err = {0};
        cdsh_plugin *p = NULL;
        assert_int_equal(cdsh_plugin_load(host, *d, NULL, &p, &err), 0);
        assert_int_equal(cdsh_plugin_state_get(p), CDSH_PLUGIN_ACTIVE);
    }
    return host;
}

static void two_hosts_in_one_process_keep_state_in_their_own_homes(void **state)
{
    (void)state;
    char *env_home = cdsh_test_home_new(); /* CDSH_HOME: must stay empty */
    char a[1024], b[1024];
    assert_true(strlen(env_home) < 512);
    snprintf(a, sizeof a, "%s/a", env_home);
    snprintf(b, sizeof b, "%s/b", env_home);
    cdsh_host *ha = host_at(a), *hb = host_at(b);
    /* Loading made each plugin's state below its own host's home. */
    const char *const per_plugin[] = {"tavern", "xiangqi", "sessions.db"};
    for (size_t i = 0; i < sizeof per_plugin / sizeof *per_plugin; i++) {
        assert_true(exists(a, per_plugin[i]));
        assert_true(exists(b, per_plugin[i]));
        assert_false(exists(env_home, per_plugin[i]));
    }
    /* Runtime state: an engine binding made through each host's service. */
    cdsh_acp_service *sa = cdsh_host_service(ha, CDSH_ACP_SERVICE);
    cdsh_acp_service *sb = cdsh_host_service(hb, CDSH_ACP_SERVICE);
    assert_non_null(sa);
    assert_non_null(sb);
    cdsh_error err = {0};
    assert_int_equal(cdsh_acp_service_bind(sa, "s-in-a", "opencode", "/tmp", &err), 0);
    assert_int_equal(cdsh_acp_service_bind(sb, "s-in-b", "opencode", "/tmp", &err), 0);
    json_t *ja = acp_sessions(a), *jb = acp_sessions(b);
    assert_non_null(ja);
    assert_non_null(jb);
    assert_non_null(json_object_get(json_object_get(ja, "sessions"), "s-in-a"));
    assert_null(json_object_get(json_object_get(ja, "sessions"), "s-in-b"));
    assert_non_null(json_object_get(json_object_get(jb, "sessions"), "s-in-b"));
    assert_null(json_object_get(json_object_get(jb, "sessions"), "s-in-a"));
    assert_false(exists(env_home, "multi-acp"));
    json_decref(ja);
    json_decref(jb);
    /* Freeing one host leaves the other's home in use. */
    cdsh_host_free(ha);
    assert_int_equal(cdsh_acp_service_bind(sb, "s-in-b2", "opencode", "/tmp", &err), 0);
    jb = acp_sessions(b);
    assert_non_null(json_object_get(json_object_get(jb, "sessions"), "s-in-b2"));
    json_decref(jb);
    cdsh_host_free(hb);
    cdsh_test_home_free(env_home);
}

static void a_host_without_a_home_is_refused(void **state)
{
    (void)state;
    assert_null(cdsh_host_new_at(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_hosts_in_one_process_keep_state_in_their_own_homes),
        cmocka_unit_test(a_host_without_a_home_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
