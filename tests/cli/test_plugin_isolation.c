/* test_plugin_isolation.c — every built-in plugin disabled in turn: the
 * others still load and work (their tools are listed, an RPC method of
 * theirs answers, their hooks are registered), nothing of the disabled one
 * stays, and every plugin's `cdsh <name>` subcommand is still found and
 * runs (they hang off the descriptors, not off loaded plugins). Also the
 * explicit load order: the facade loads after the others. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/session_runner.h"
#include "cli/subcommands.h"
#include "host/cli.h"
#include "host/host.h"
#include "plugins/builtin.h"
#include "server/connection.h"

/* What each plugin shows when it works: a tool, an RPC call that answers ok. */
typedef struct probe {
    const char *plugin;
    const char *tool;                       /* NULL: registers none by default */
    const char *channel, *endpoint, *payload; /* NULL: no channel */
    const char *hook_kind;                  /* NULL: no hook */
    const char *answer;                     /* NULL: ok; else the plugin's own error code */
} probe;

static const probe PROBES[] = {
    {"skills", "skill", NULL, NULL, NULL, NULL, NULL},
    {"skills-local", NULL, NULL, NULL, NULL, NULL, NULL}, /* a skill provider, no tool */
    {"jobs", "job_list", "/jobs", "list", "{}", NULL, NULL},
    {"systemPrompt", NULL, NULL, NULL, NULL, NULL, NULL}, /* no toolOrder by default */
    {"acp", NULL, "/acp", "engines", NULL, CDSH_SESSION_RUNNERS, NULL},
    /* The plugin itself answers (the router's "not-found" would mean no channel). */
    {"xiangqi", "xiangqi_new", "/xiangqi-mate", "state", "{\"sessionId\":\"s-iso\"}", NULL,
     "session-not-found"},
    {"import", NULL, NULL, NULL, NULL, NULL, NULL}, /* mcpimport */
    {"tavern", "tavern_asset_list", "/tavern", "listCharacters", "{}", NULL, NULL},
    {"facade", NULL, NULL, NULL, NULL, NULL, NULL},
};

static bool has_tool(cdsh_host *h, const char *name)
{
    json_t *list = cdsh_tools_names(cdsh_host_tools(h), NULL);
    bool found = false;
    size_t i;
    json_t *t;
    json_array_foreach(list, i, t) {
        if (strcmp(json_string_value(t), name) == 0)
            found = true;
    }
    json_decref(list);
    return found;
}

/* A profile "default" in the current home with every built-in enabled but `off`. */
static cdsh_profile *profile_without(const char *home, const char *off)
{
    cdsh_profile *p = NULL;
    assert_int_equal(cdsh_profile_load(home, "default", &p, NULL), 0);
    for (const cdsh_plugin_def *const *d = cdsh_builtin_plugins; *d; d++)
        assert_int_equal(cdsh_profile_set_enabled(p, (*d)->name, strcmp((*d)->name, off) != 0), 0);
    assert_int_equal(cdsh_profile_save(p, NULL), 0);
    return p;
}

static void check_probe(cdsh_host *h, const probe *pr, bool on)
{
    cdsh_plugin *pl = cdsh_host_plugin_find(h, pr->plugin);
    if (on) {
        if (!pl)
            fail_msg("plugin %s did not load", pr->plugin);
        assert_string_equal(cdsh_plugin_state_name(cdsh_plugin_state_get(pl)), "active");
    } else {
        assert_null(pl);
    }
    if (pr->tool)
        assert_int_equal(has_tool(h, pr->tool), on);
    if (pr->channel) {
        json_t *payload = pr->payload ? json_loads(pr->payload, 0, NULL) : NULL;
        json_t *r = cdsh_rpc_call(cdsh_host_rpc(h), pr->channel, pr->endpoint, payload, NULL);
        json_decref(payload);
        const char *code = json_string_value(json_object_get(json_object_get(r, "error"), "code"));
        if (on && pr->answer) {
            assert_string_equal(code, pr->answer);
        } else if (on) {
            if (!json_is_true(json_object_get(r, "ok"))) {
                char *d = json_dumps(r, 0);
                fail_msg("%s%s/%s did not answer: %s", pr->plugin, pr->channel, pr->endpoint, d);
            }
        } else {
            assert_string_equal(
                json_string_value(json_object_get(json_object_get(r, "error"), "code")),
                "not-found");
        }
        json_decref(r);
    }
    if (pr->hook_kind) {
        const void **hooks = cdsh_host_hooks_dup(h, pr->hook_kind);
        assert_non_null(hooks);
        assert_int_equal(hooks[0] != NULL, on);
        free(hooks);
    }
}

/* Runs `cdsh <argv...>` in this process with stdout sent to /dev/null. */
static int run_quiet(int argc, char **argv)
{
    const cdsh_subcommand *c = cdsh_subcommand_find(argv[0]);
    assert_non_null(c);
    fflush(stdout);
    int saved = dup(1);
    FILE *null = fopen("/dev/null", "w");
    dup2(fileno(null), 1);
    int rc = c->run(argc, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    fclose(null);
    return rc;
}

static void each_plugin_disabled_in_turn_leaves_the_others_working(void **state)
{
    (void)state;
    cdsh_cli_host_set_plugins(cdsh_builtin_plugins);
    size_t n = sizeof PROBES / sizeof PROBES[0];
    for (const cdsh_plugin_def *const *off = cdsh_builtin_plugins; *off; off++) {
        char *home = cdsh_test_home_new();
        cdsh_profile *prof = profile_without(home, (*off)->name);
        cdsh_host *h = cdsh_host_new();
        /* As under `cdsh web`: panels' channels exist with a connection. */
        assert_int_equal(cdsh_plugin_load(h, &cdsh_web_connection_plugin, NULL, NULL, NULL), 0);
        cdsh_host_load_plugins(h, cdsh_builtin_plugins, prof, NULL);
        size_t probed = 0;
        for (size_t i = 0; i < n; i++) {
            check_probe(h, &PROBES[i], strcmp(PROBES[i].plugin, (*off)->name) != 0);
            probed += strcmp(PROBES[i].plugin, (*off)->name) == 0;
        }
        assert_int_equal(probed, 1); /* every built-in has a probe row */
        /* The facade comes last whenever it loads (its descriptor says so). */
        json_t *list = cdsh_host_plugins_list(h);
        const char *last =
            json_string_value(json_object_get(json_array_get(list, json_array_size(list) - 1),
                                              "name"));
        assert_string_equal(last, strcmp((*off)->name, "facade") == 0 ? "tavern" : "facade");
        json_decref(list);
        cdsh_host_free(h);

        /* Every plugin's subcommands are there and run, the disabled one's too. */
        char *acp[] = {"acp", "engines", "--json", NULL};
        char *tavern[] = {"tavern", "list", "--json", NULL};
        char *xq[] = {"xiangqi", "perft", "--depth", "2", NULL};
        char *facade[] = {"facade", "list", "--json", NULL};
        char *import[] = {"import", "--help", NULL};
        char *profile[] = {"profile", "--help", NULL};
        assert_int_equal(run_quiet(3, acp), 0);
        assert_int_equal(run_quiet(3, tavern), 0);
        assert_int_equal(run_quiet(4, xq), 0);
        assert_int_equal(run_quiet(3, facade), 0);
        assert_int_equal(run_quiet(2, import), 0);
        assert_int_equal(run_quiet(2, profile), 0);
        cdsh_profile_free(prof);
        cdsh_test_home_free(home);
    }
}

static void plugin_subcommands_are_listed_with_the_front_ends_own(void **state)
{
    (void)state;
    cdsh_cli_host_set_plugins(cdsh_builtin_plugins);
    for (const cdsh_plugin_def *const *d = cdsh_builtin_plugins; *d; d++)
        for (const cdsh_subcommand *c = (*d)->subcommands; c && c->name; c++)
            assert_ptr_equal(cdsh_subcommand_find(c->name), c);
    char buf[8192] = {0};
    FILE *out = fmemopen(buf, sizeof buf - 1, "w");
    cdsh_cli_print_usage(out);
    fclose(out);
    assert_non_null(strstr(buf, "  xiangqi      xiangqi (Chinese chess): play in the terminal, "
                                "perft, bench, analyze, UCI/UCCI engine\n"));
    assert_non_null(strstr(buf, "  tavern       role-play"));
    assert_non_null(strstr(buf, "  chat         "));
    /* Sorted: acp before chat before xiangqi. */
    assert_true(strstr(buf, "  acp ") < strstr(buf, "  chat "));
    assert_true(strstr(buf, "  chat ") < strstr(buf, "  xiangqi "));
    assert_string_equal(cdsh_subcommand_suggest("tavrn"), "tavern");
    /* Without the built-in table, plugin subcommands do not exist. */
    cdsh_cli_host_set_plugins(NULL);
    assert_null(cdsh_subcommand_find("tavern"));
    assert_non_null(cdsh_subcommand_find("chat"));
    cdsh_cli_host_set_plugins(cdsh_builtin_plugins);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_plugin_disabled_in_turn_leaves_the_others_working),
        cmocka_unit_test(plugin_subcommands_are_listed_with_the_front_ends_own),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
