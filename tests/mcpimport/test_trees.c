/* test_trees.c — the importer over a realistic hand-written install
 * (tests/data/import-trees: installed_plugins.json v2, a marketplace with
 * strict and strict:false entries, enabledPlugins, user/project/local
 * installs, ~/.claude.json scopes, a Codex home with its plugin cache),
 * plus hostile entries made at run time (symlinks out of the tree, a loop,
 * a FIFO). Pins discovery, verdict levels, redaction, safe walking, command
 * semantics and the host's user-only skills. */
#include "support/testkit.h"

#include "support/import_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/events.h"
#include "host/skills.h"
#include "plugins/mcpimport/commands.h"
#include "plugins/mcpimport/redact.h"
#include "plugins/mcpimport/report.h"
#include "plugins/mcpimport/service.h"

#define TREE CDSH_SOURCE_DIR "/tests/data/import-trees/home"

typedef struct fx {
    cdsh_test_import_tree t;
    char home[1024], claude[1100], cjson[1100], codex[1100], app[1100];
} fx;

/* The scan's judged command IR as JSON (made at the first call). */
static json_t *cmds(cdsh_mcpimport_scan *sc)
{
    return cdsh_mcpimport_scan_commands_json(sc);
}

/* The report `cdsh import scan` makes (from the command structs, each
 * distinct string redacted once, equal parts shared) is the report of the
 * JSON IR, and each of its commands and skills is exactly the redacted copy
 * of the item's IR (cdsh_mcpimport_redact_json_dup), in order and in key
 * order. */
static void report_is_the_redacted_ir(cdsh_mcpimport_scan *sc)
{
    json_t *fast = cdsh_mcpimport_report_of_scan(sc);
    json_t *ir_report = cdsh_mcpimport_report_new(sc->servers, cmds(sc), sc->skills, sc->notes);
    char *a = json_dumps(fast, JSON_PRESERVE_ORDER), *b = json_dumps(ir_report, JSON_PRESERVE_ORDER);
    assert_string_equal(a, b);
    free(a), free(b);
    size_t n_cmds = 0, n_skills = 0;
    static const char *const order[] = {"claude", "codex"};
    for (size_t o = 0; o < 2; o++) {
        const json_t *src = NULL, *x;
        size_t i;
        json_array_foreach(json_object_get(fast, "sources"), i, x) {
            if (strcmp(json_string_value(json_object_get(x, "source")), order[o]) == 0)
                src = x;
        }
        assert_non_null(src);
        size_t k = 0;
        const json_t *ir;
        json_array_foreach(cmds(sc), i, ir) {
            const char *from =
                json_string_value(json_object_get(json_object_get(ir, "provenance"), "source"));
            if (strcmp(from ? from : "claude", order[o]) != 0)
                continue;
            json_t *want = cdsh_mcpimport_redact_json_dup(ir);
            char *w = json_dumps(want, JSON_PRESERVE_ORDER);
            char *g = json_dumps(json_array_get(json_object_get(src, "commands"), k++),
                                 JSON_PRESERVE_ORDER);
            assert_string_equal(g, w);
            free(w), free(g);
            json_decref(want);
        }
        assert_int_equal(k, json_array_size(json_object_get(src, "commands")));
        n_cmds += k;
        size_t ks[2] = {0, 0};
        json_array_foreach(sc->skills, i, ir) {
            const char *from =
                json_string_value(json_object_get(json_object_get(ir, "provenance"), "source"));
            if (strcmp(from ? from : "claude", order[o]) != 0)
                continue;
            int agent = strcmp(json_string_value(json_object_get(ir, "kind")), "agent") == 0;
            json_t *want = cdsh_mcpimport_redact_json_dup(ir);
            char *w = json_dumps(want, JSON_PRESERVE_ORDER);
            char *g = json_dumps(
                json_array_get(json_object_get(src, agent ? "agents" : "skills"), ks[agent]++),
                JSON_PRESERVE_ORDER);
            assert_string_equal(g, w);
            free(w), free(g);
            json_decref(want);
        }
        assert_int_equal(ks[0], json_array_size(json_object_get(src, "skills")));
        assert_int_equal(ks[1], json_array_size(json_object_get(src, "agents")));
        n_skills += ks[0] + ks[1];
    }
    assert_int_equal(n_cmds, json_array_size(cmds(sc)));
    assert_int_equal(n_skills, json_array_size(sc->skills));
    json_decref(fast);
    json_decref(ir_report);
}

static void sh(const char *fmt, const char *a)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, fmt, a, a, a);
    assert_int_equal(system(cmd), 0);
}

static void build(fx *f)
{
    cdsh_test_import_tree_open(&f->t);
    snprintf(f->home, sizeof f->home, "%s", f->t.home);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cp -a '%s/.' '%s/'", TREE, f->home);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && sed -i \"s#@HOME@#%s#g\" .claude.json "
             ".claude/plugins/installed_plugins.json .claude/plugins/known_marketplaces.json",
             f->home, f->home);
    assert_int_equal(system(cmd), 0);
    snprintf(f->claude, sizeof f->claude, "%s/.claude", f->home);
    snprintf(f->cjson, sizeof f->cjson, "%s/.claude.json", f->home);
    snprintf(f->codex, sizeof f->codex, "%s/.codex", f->home);
    snprintf(f->app, sizeof f->app, "%s/work/app", f->home);
}

static void scan_from(fx *f, const char *project, cdsh_mcpimport_scan *out)
{
    const char *projects[] = {project, NULL};
    cdsh_mcpimport_roots roots = {f->claude, f->cjson, f->codex, projects};
    assert_int_equal(cdsh_mcpimport_scan_run(&roots, NULL, NULL, out, NULL), 0);
}

static const char *s(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static size_t count_named(const json_t *list, const char *name)
{
    size_t i, n = 0;
    json_t *x;
    json_array_foreach(list, i, x) {
        n += strcmp(s(x, "name"), name) == 0;
    }
    return n;
}

static json_t *named(const json_t *list, const char *name)
{
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x) {
        if (strcmp(s(x, "name"), name) == 0)
            return x;
    }
    return NULL;
}

/* Number of notes whose message contains all of a and b (b may be NULL). */
static size_t notes_with(const cdsh_mcpimport_scan *sc, const char *a, const char *b)
{
    size_t i, n = 0;
    json_t *x;
    json_array_foreach(sc->notes, i, x) {
        const char *m = s(x, "message");
        n += m && strstr(m, a) && (!b || strstr(m, b));
    }
    return n;
}

static bool has_reason(const json_t *ir, const char *level, const char *needle)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(ir, "reasons"), i, r) {
        if (strcmp(s(r, "level"), level) == 0 && strstr(s(r, "message"), needle))
            return true;
    }
    return false;
}

static void discovery_follows_enabled_state_scope_and_marketplaces(void **state)
{
    (void)state;
    fx f;
    build(&f);
    cdsh_mcpimport_scan sc;
    scan_from(&f, f.app, &sc);
    /* installed, enabled, strict plugin: its command */
    assert_int_equal(count_named(cmds(&sc), "commit-tools_commit"), 1);
    /* strict:false entry: exactly the listed command and agent */
    assert_int_equal(count_named(cmds(&sc), "review-kit_review"), 1);
    assert_int_equal(count_named(cmds(&sc), "review-kit_unlisted"), 0);
    assert_int_equal(count_named(sc.skills, "review-kit-critic"), 1);
    /* disabled in settings.json: one note, nothing offered */
    assert_int_equal(count_named(cmds(&sc), "legacy-lint_lint"), 0);
    assert_int_equal(notes_with(&sc, "plugin legacy-lint@acme-market is disabled", "settings.json"),
                     1);
    /* installed for another project: one note, nothing here */
    assert_int_equal(count_named(cmds(&sc), "other-proj_other"), 0);
    assert_int_equal(
        notes_with(&sc, "plugin other-proj@acme-market is installed for project", "work/other"), 1);
    /* installed (local scope) for this project: imported */
    assert_int_equal(count_named(sc.skills, "here-proj-helper"), 1);
    /* strict:false with only an LSP server: a note saying why */
    assert_int_equal(notes_with(&sc, "LSP servers are not imported", "typescript"), 1);
    /* cached but not installed, offered but not installed, enabled but missing */
    assert_int_equal(
        notes_with(&sc, "orphan@acme-market is in the plugin cache but not installed", NULL), 1);
    assert_int_equal(notes_with(&sc, "marketplace acme-market offers 1 plugin", "(extra)"), 1);
    assert_int_equal(notes_with(&sc, "ghost@acme-market is enabled in", "not installed"), 1);
    /* Codex plugin cache: the latest version of an enabled plugin */
    assert_int_equal(count_named(sc.skills, "notes-kit-jot"), 1);
    assert_int_equal(count_named(sc.skills, "notes-kit-old"), 0);
    assert_int_equal(count_named(sc.servers, "notes"), 1);
    assert_string_equal(s(json_object_get(named(sc.servers, "notes"), "provenance"), "source"),
                        "codex");
    assert_int_equal(count_named(sc.skills, "off-kit-off"), 0);
    assert_int_equal(notes_with(&sc, "Codex plugin off-kit@openai-curated is disabled", NULL), 1);
    /* every plugin on disk appears */
    static const char *const ids[] = {"commit-tools@acme-market", "legacy-lint@acme-market",
                                      "ts-lsp@acme-market",       "review-kit@acme-market",
                                      "other-proj@acme-market",   "here-proj@acme-market",
                                      "orphan@acme-market",       "notes-kit@openai-curated",
                                      "off-kit@openai-curated",   NULL};
    report_is_the_redacted_ir(&sc);
    json_t *report = cdsh_mcpimport_report_new(sc.servers, cmds(&sc), sc.skills, sc.notes);
    char *json = json_dumps(report, 0);
    for (const char *const *id = ids; *id; id++) {
        char want[256];
        snprintf(want, sizeof want, "\"plugin\": \"%s\"", *id);
        char *j2 = json_dumps(report, JSON_INDENT(0));
        bool found = strstr(j2, want) != NULL;
        free(j2);
        if (!found)
            fprintf(stderr, "plugin %s does not appear\n", *id);
        assert_true(found);
    }
    free(json);
    json_decref(report);
    cdsh_mcpimport_scan_deinit(&sc);
    cdsh_test_import_tree_close(&f.t);
}

static void scanning_from_home_scans_user_folders_once(void **state)
{
    (void)state;
    fx f;
    build(&f);
    cdsh_mcpimport_scan sc;
    scan_from(&f, f.home, &sc);
    assert_int_equal(count_named(cmds(&sc), "hello"), 1);
    assert_string_equal(s(json_object_get(named(cmds(&sc), "hello"), "provenance"), "scope"),
                        "user");
    assert_int_equal(count_named(sc.skills, "user-notes"), 1);
    assert_int_equal(count_named(sc.skills, "planner"), 1);
    size_t i;
    json_t *x;
    json_array_foreach(cmds(&sc), i, x) {
        assert_false(has_reason(x, "blocked", "also defined in"));
    }
    json_array_foreach(sc.skills, i, x) {
        assert_false(has_reason(x, "blocked", "also defined in"));
    }
    cdsh_mcpimport_scan_deinit(&sc);
    cdsh_test_import_tree_close(&f.t);
}

static void untrusted_trees_are_walked_safely(void **state)
{
    (void)state;
    fx f;
    build(&f);
    char p[2048];
    snprintf(p, sizeof p, "%s/.claude/commands/passwd.md", f.app);
    assert_int_equal(symlink("/etc/passwd", p), 0);
    snprintf(p, sizeof p, "%s/.claude/commands/root", f.app);
    assert_int_equal(symlink("/", p), 0);
    snprintf(p, sizeof p, "%s/.claude/commands/self", f.app);
    assert_int_equal(symlink(".", p), 0);
    snprintf(p, sizeof p, "%s/.claude/commands/alias.md", f.app);
    assert_int_equal(symlink("fix-issue.md", p), 0); /* inside the tree: followed */
    snprintf(p, sizeof p, "%s/.claude/agents", f.app);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/.claude/agents/x.md", f.app);
    assert_int_equal(mkfifo(p, 0600), 0); /* opening it would hang the scan */
    snprintf(p, sizeof p, "%s/.claude/agents/shadow.md", f.app);
    assert_int_equal(symlink("/etc/hostname", p), 0);
    cdsh_mcpimport_scan sc;
    cdsh_mcpimport_discover_stats st;
    json_t *cands = NULL;
    const char *projects[] = {f.app, NULL};
    cdsh_mcpimport_roots roots = {f.claude, f.cjson, f.codex, projects};
    assert_int_equal(cdsh_mcpimport_discover_ex(&roots, &cands, &st, NULL), 0);
    assert_int_equal(cdsh_mcpimport_scan_candidates(cands, NULL, NULL, &sc, NULL), 0);
    json_decref(cands);
    assert_int_equal(count_named(cmds(&sc), "passwd"), 0);
    assert_int_equal(
        notes_with(&sc, "passwd.md leads to /etc/passwd, outside the scanned tree", NULL), 1);
    assert_int_equal(notes_with(&sc, "commands/root leads to /, outside the scanned tree", NULL),
                     1);
    assert_int_equal(notes_with(&sc, "commands/self leads to a folder already scanned", NULL), 1);
    assert_int_equal(notes_with(&sc, "agents/x.md is not a regular file", NULL), 1);
    /* one fix-issue, one alias of it */
    assert_int_equal(count_named(cmds(&sc), "fix-issue"), 1);
    assert_int_equal(count_named(cmds(&sc), "alias"), 1);
    /* a sub-agent linked out of the tree is judged blocked, not read */
    json_t *shadow = named(sc.skills, "shadow");
    assert_non_null(shadow);
    assert_string_equal(s(shadow, "verdict"), "blocked");
    assert_true(has_reason(shadow, "blocked", "outside the scanned tree"));
    /* the walk stayed small: a handful of entries, not the filesystem */
    assert_true(st.entries < 40);
    report_is_the_redacted_ir(&sc);
    json_t *report = cdsh_mcpimport_report_new(sc.servers, cmds(&sc), sc.skills, sc.notes);
    char *json = json_dumps(report, 0);
    assert_null(strstr(json, "root:x:0:0"));
    free(json);
    json_decref(report);
    cdsh_mcpimport_scan_deinit(&sc);
    cdsh_test_import_tree_close(&f.t);
}

static void verdict_levels_mean_something(void **state)
{
    (void)state;
    fx f;
    build(&f);
    cdsh_mcpimport_scan sc;
    scan_from(&f, f.app, &sc);
    /* the plugin name mapping is faithful: info, verdict ok (so --all-ok takes it) */
    json_t *c = named(cmds(&sc), "commit-tools_commit");
    assert_string_equal(s(c, "verdict"), "ok");
    assert_true(has_reason(c, "info", "mapped to \"commit-tools_commit\""));
    json_t *agent = named(sc.skills, "review-kit-critic");
    assert_string_equal(s(agent, "verdict"), "ok");
    /* a display colour alone is info */
    assert_string_equal(s(named(sc.skills, "planner"), "verdict"), "ok");
    /* @file only when it is a file of the tree; repeated reasons once */
    json_t *fix = named(cmds(&sc), "fix-issue");
    size_t i, files = 0;
    json_t *u;
    json_array_foreach(json_object_get(fix, "unsupported"), i, u) {
        files++;
        assert_string_equal(s(u, "text"), "docs/guide.md");
    }
    assert_int_equal(files, 1);
    json_t *r, *seen = json_object();
    json_array_foreach(json_object_get(fix, "reasons"), i, r) {
        char key[1024];
        snprintf(key, sizeof key, "%s|%s|%s", s(r, "level"), s(r, "code"), s(r, "message"));
        assert_null(json_object_get(seen, key));
        json_object_set_new(seen, key, json_true());
        assert_null(strstr(s(r, "message"), "angular"));
        assert_null(strstr(s(r, "message"), "pytest"));
    }
    json_decref(seen);
    cdsh_mcpimport_scan_deinit(&sc);
    cdsh_test_import_tree_close(&f.t);
}

static void references_stay_and_secrets_go(void **state)
{
    (void)state;
    fx f;
    build(&f);
    cdsh_mcpimport_scan sc;
    scan_from(&f, f.app, &sc);
    report_is_the_redacted_ir(&sc);
    json_t *report = cdsh_mcpimport_report_new(sc.servers, cmds(&sc), sc.skills, sc.notes);
    char *json = json_dumps(report, 0), *text = cdsh_mcpimport_report_text_dup(report);
    static const char *const secrets[] = {"lit-9f8e7d6c5b4a", "hunter2-literal-pw",
                                          "hunter2-arg-pw", NULL};
    for (const char *const *x = secrets; *x; x++) {
        assert_null(strstr(json, *x));
        assert_null(strstr(text, *x));
    }
    static const char *const kept[] = {"${CONTEXT7_API_KEY:-}",
                                       "TFE_TOKEN=${TFE_TOKEN}",
                                       "/home/u/.config/gdrive/creds.json",
                                       "$TFE_ADDR",
                                       "team=core",
                                       NULL};
    for (const char *const *x = kept; *x; x++) {
        if (!strstr(json, *x))
            fprintf(stderr, "missing in the JSON report: %s\n", *x);
        assert_non_null(strstr(json, *x));
    }
    assert_non_null(strstr(text, "https://mcp.example.test/mcp?api_key=[REDACTED]&team=core"));
    free(json), free(text);
    json_decref(report);
    cdsh_mcpimport_scan_deinit(&sc);
    cdsh_test_import_tree_close(&f.t);
}

static void command_semantics_follow_claude_code(void **state)
{
    (void)state;
    fx f;
    build(&f);
    cdsh_mcpimport_scan sc;
    scan_from(&f, f.app, &sc);
    /* argument-hint: [message] is a YAML list; Claude Code shows "message" */
    json_t *hello = named(cmds(&sc), "hello");
    assert_string_equal(s(hello, "argumentHint"), "message");
    assert_true(has_reason(hello, "info", "argument-hint is a YAML list"));
    /* quoted, it keeps its brackets */
    assert_string_equal(s(named(cmds(&sc), "commit-tools_commit"), "argumentHint"), "[message]");
    /* arguments declared, $0 never used: $1 is the first argument, with a warning */
    json_t *fix = named(cmds(&sc), "fix-issue");
    assert_string_equal(s(fix, "placeholderStyle"), "claude-1based");
    assert_true(has_reason(fix, "warn", "uses $1.. without $0"));
    char *out = NULL;
    assert_int_equal(cdsh_mcpimport_command_expand(fix, "42 feat/x", &out, NULL), 0);
    assert_non_null(strstr(out, "First arg: 42, second: feat/x. Issue 42 on feat/x."));
    free(out);
    /* disable-model-invocation: the skill is kept from the model */
    json_t *quiet = named(sc.skills, "quiet");
    assert_true(json_is_true(json_object_get(quiet, "disableModelInvocation")));
    assert_string_equal(s(quiet, "verdict"), "ok");
    cdsh_events *bus = cdsh_events_new();
    cdsh_skills *reg = cdsh_skills_new(bus);
    cdsh_skill_def d1 = {
        .name = "quiet", .description = "Release checklist", .content = "x", .user_only = true};
    cdsh_skill_def d2 = {.name = "notes", .description = "Take notes", .content = "y"};
    cdsh_disposer_t a = {0}, b = {0};
    assert_int_equal(cdsh_skills_register(reg, NULL, &d1, &a, NULL), 0);
    assert_int_equal(cdsh_skills_register(reg, NULL, &d2, &b, NULL), 0);
    char *index = cdsh_skills_index_dup(reg, NULL);
    assert_non_null(strstr(index, "- notes: Take notes"));
    assert_null(strstr(index, "quiet"));
    free(index);
    json_t *list = cdsh_skills_list(reg, NULL);
    assert_true(json_is_true(json_object_get(json_array_get(list, 1), "userOnly")));
    json_decref(list);
    cdsh_disposer_run(&a), cdsh_disposer_run(&b);
    cdsh_skills_free(reg);
    cdsh_events_free(bus);
    cdsh_mcpimport_scan_deinit(&sc);
    cdsh_test_import_tree_close(&f.t);
}

/* Cost is linear: every directory entry is looked at once, however the
 * tree is laid out (counted, not timed; bench/bench_import times it). */
static void walking_looks_at_each_entry_once(void **state)
{
    (void)state;
    fx f;
    build(&f);
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/.claude/commands/many", f.app);
    assert_int_equal(mkdir(dir, 0700), 0);
    for (int i = 0; i < 500; i++) {
        char p[2200];
        snprintf(p, sizeof p, "%s/c%03d.md", dir, i);
        cdsh_test_write_file(p, "Do it.\n");
    }
    json_t *cands = NULL;
    cdsh_mcpimport_discover_stats st;
    const char *projects[] = {f.app, NULL};
    cdsh_mcpimport_roots roots = {f.claude, f.cjson, f.codex, projects};
    assert_int_equal(cdsh_mcpimport_discover_ex(&roots, &cands, &st, NULL), 0);
    size_t before = st.entries;
    json_decref(cands);
    for (int i = 500; i < 1000; i++) {
        char p[2200];
        snprintf(p, sizeof p, "%s/c%03d.md", dir, i);
        cdsh_test_write_file(p, "Do it.\n");
    }
    assert_int_equal(cdsh_mcpimport_discover_ex(&roots, &cands, &st, NULL), 0);
    assert_int_equal(st.entries - before, 500);
    json_decref(cands);
    cdsh_test_import_tree_close(&f.t);
}

/* `cdsh import enable NAME --root D`: options after names, as the usage
 * line shows; --all-ok takes the plugin command whose only reason is info. */
static void enable_takes_options_after_names(void **state)
{
    (void)state;
    fx f;
    build(&f);
    char *out = NULL, *err = NULL;
    int rc = cdsh_test_run_cdsh(NULL, &out, &err, "import", "enable", "/fix-issue", "--root", f.app,
                                "--claude-dir", f.claude, "--codex-home", f.codex, NULL);
    if (rc != 0)
        fprintf(stderr, "%s%s", out ? out : "", err ? err : "");
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "enabled command /fix-issue\n"));
    free(out), free(err);
    rc = cdsh_test_run_cdsh(NULL, &out, &err, "import", "enable", "--all-ok", "--root", f.app,
                            "--claude-dir", f.claude, "--codex-home", f.codex, NULL);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "enabled command /commit-tools_commit\n"));
    assert_non_null(strstr(out, "enabled skill review-kit-critic\n"));
    assert_null(strstr(out, "legacy-lint"));
    free(out), free(err);
    rc = cdsh_test_run_cdsh(NULL, &out, &err, "import", "scan", "stray", NULL);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "cdsh import scan: unexpected argument \"stray\""));
    free(out), free(err);
    cdsh_test_import_tree_close(&f.t);
}

/* The scan builds commands while it walks (streamed, without candidate
 * objects); the result is the one the candidate list gives, item for item
 * and in order, on the realistic tree with hostile and unusual files added
 * (a plugin whose only content is commands keeps its place, not the note
 * "has nothing cdsh imports"). */
static void streamed_scan_equals_the_candidate_scan(void **state)
{
    (void)state;
    fx f;
    build(&f);
    char p[2048];
    snprintf(p, sizeof p, "%s/.claude/commands/passwd.md", f.app);
    assert_int_equal(symlink("/etc/passwd", p), 0);
    snprintf(p, sizeof p, "%s/.claude/commands/alias.md", f.app);
    assert_int_equal(symlink("fix-issue.md", p), 0);
    snprintf(p, sizeof p, "%s/.claude/commands/at.md", f.app);
    cdsh_test_write_file(p, "---\ndescription: refs\n---\nSee @README.md and @angular/core, "
                            "then $1.\n");
    snprintf(p, sizeof p, "%s/.claude/commands/latin1-\xe9.md", f.app);
    cdsh_test_write_file(p, "Do $ARGUMENTS.\n");
    snprintf(p, sizeof p, "%s/.claude/commands/bad-bytes.md", f.app);
    cdsh_test_write_file(p, "caf\xe9\n");
    snprintf(p, sizeof p, "%s/.claude/commands/fifo.md", f.app);
    assert_int_equal(mkfifo(p, 0600), 0);
    const char *const from[] = {f.app, f.home};
    for (size_t k = 0; k < 2; k++) {
        const char *projects[] = {from[k], NULL};
        cdsh_mcpimport_roots roots = {f.claude, f.cjson, f.codex, projects};
        cdsh_mcpimport_scan a, b;
        json_t *cands = NULL;
        assert_int_equal(cdsh_mcpimport_scan_run(&roots, NULL, NULL, &a, NULL), 0);
        assert_int_equal(cdsh_mcpimport_discover(&roots, &cands, NULL), 0);
        assert_int_equal(cdsh_mcpimport_scan_candidates(cands, NULL, NULL, &b, NULL), 0);
        assert_true(json_array_size(cmds(&a)) >= (k == 0 ? 8u : 4u));
        assert_true(json_equal(cmds(&a), cmds(&b)));
        assert_true(json_equal(a.servers, b.servers));
        assert_true(json_equal(a.skills, b.skills));
        assert_true(json_equal(a.notes, b.notes));
        char *ja = json_dumps(cmds(&a), JSON_COMPACT), *jb = json_dumps(cmds(&b), JSON_COMPACT);
        assert_string_equal(ja, jb); /* same key order too */
        free(ja), free(jb);
        json_decref(cands);
        cdsh_mcpimport_scan_deinit(&a);
        cdsh_mcpimport_scan_deinit(&b);
    }
    cdsh_test_import_tree_close(&f.t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(discovery_follows_enabled_state_scope_and_marketplaces),
        cmocka_unit_test(scanning_from_home_scans_user_folders_once),
        cmocka_unit_test(untrusted_trees_are_walked_safely),
        cmocka_unit_test(verdict_levels_mean_something),
        cmocka_unit_test(references_stay_and_secrets_go),
        cmocka_unit_test(command_semantics_follow_claude_code),
        cmocka_unit_test(walking_looks_at_each_entry_once),
        cmocka_unit_test(enable_takes_options_after_names),
        cmocka_unit_test(streamed_scan_equals_the_candidate_scan),
    };
    (void)sh;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
