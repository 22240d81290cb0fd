/* test_skills.c — Claude Code skills and sub-agents offered as cdsh skills:
 * front matter normalised with every loss warned, kebab-case names with
 * plugin qualification, verdicts with reasons (missing description,
 * unreadable file, collision, oversized body), discovery from user, project
 * and plugin locations of a fixture tree, and enabling: the skill appears in
 * the registry, the `skill` tool returns it, unloading or disabling removes it. */
#include "support/testkit.h"

#include "support/import_tree.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "host/dispatch.h"
#include "host/host.h"
#include "host/skilltool.h"
#include "plugins/mcpimport/commands.h"
#include "plugins/mcpimport/plugin.h"
#include "plugins/mcpimport/preflight.h"
#include "plugins/mcpimport/report.h"
#include "plugins/mcpimport/service.h"
#include "plugins/mcpimport/skills.h"

static const char *s(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* "a | b | c" of an array of strings. */
static char *joined(const json_t *arr)
{
    char buf[8192] = "";
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (i)
            strncat(buf, " | ", sizeof buf - strlen(buf) - 1);
        strncat(buf, json_string_value(v), sizeof buf - strlen(buf) - 1);
    }
    return strdup(buf);
}

/* "code/code" of every reason. */
static char *codes(const json_t *ir)
{
    char buf[2048] = "";
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(ir, "reasons"), i, r) {
        char one[128];
        snprintf(one, sizeof one, "%s%s:%s", i ? " " : "", s(r, "level"), s(r, "code"));
        strncat(buf, one, sizeof buf - strlen(buf) - 1);
    }
    return strdup(buf);
}

static json_t *cand(const char *kind, const char *stem, const char *ns, const char *scope,
                    const char *text)
{
    json_t *c = json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s}}", "kind", kind, "text", text, "stem",
                          stem, "provenance", "source", "claude", "file", "/x.md", "scope", scope);
    if (ns) {
        json_object_set_new(c, "namespace", json_string(ns));
        json_object_set_new(json_object_get(c, "provenance"), "plugin",
                            json_pack("s++", ns, "@", "market"));
    }
    return c;
}

static void skill_front_matter_body_and_files_normalise_with_warnings(void **state)
{
    (void)state;
    json_t *c = cand("skill", "pdf", "tools", "user",
                     "---\nname: pdf\ndescription: Fill PDF forms\nwhen_to_use: a PDF form is "
                     "given\nargument-hint: \"[file]\"\nallowed-tools: Read, Bash(python:*)\n"
                     "model: opus\n---\n# PDF\nRun ${CLAUDE_SKILL_DIR}/scripts/fill.py on "
                     "$ARGUMENTS.\nConfig: ${CLAUDE_PLUGIN_ROOT}/conf.json\n!`git status`\nSee "
                     "@docs/forms.md.\n\n");
    json_object_set_new(c, "pluginRoot", json_string("/p"));
    json_object_set_new(c, "skillDir", json_string("/p/skills/pdf"));
    json_object_set_new(c, "files", json_pack("[s, s]", "reference.md", "scripts/fill.py"));
    json_t *ir = cdsh_mcpimport_skill_from_candidate(c);
    assert_non_null(ir);
    assert_string_equal(s(ir, "kind"), "skill");
    assert_string_equal(s(ir, "name"), "tools-pdf");
    assert_string_equal(s(ir, "originalName"), "tools:pdf");
    assert_string_equal(s(ir, "description"), "Fill PDF forms");
    assert_string_equal(s(ir, "whenToUse"), "a PDF form is given");
    assert_string_equal(s(ir, "argumentHint"), "[file]");
    assert_string_equal(s(ir, "content"),
                        "# PDF\nRun /p/skills/pdf/scripts/fill.py on $ARGUMENTS.\nConfig: "
                        "/p/conf.json\n!`git status`\nSee @docs/forms.md.\n\n"
                        "Arguments: [file] (the skill is loaded without arguments; take them "
                        "from the request)\n\n"
                        "Supporting files (read them when the instructions refer to them):\n"
                        "- /p/skills/pdf/reference.md\n- /p/skills/pdf/scripts/fill.py\n");
    char *w = joined(json_object_get(ir, "warnings"));
    assert_string_equal(
        w, "allowed-tools is Claude-only; cdsh does not restrict the tools while this skill is "
           "used | model \"opus\" is not applied; the session's model is used | placeholders "
           "$ARGUMENTS stay as written: cdsh's skill tool loads a skill by name, without "
           "arguments | !`cmd` \"git status\" is not supported: the command is not run; the "
           "text stays in the prompt | @file \"docs/forms.md\" is not supported: the file is not "
           "included; the text stays in the prompt");
    free(w);
    json_t *list = json_pack("[O]", ir);
    cdsh_mcpimport_preflight_skills(list);
    assert_string_equal(cdsh_mcpimport_verdict(ir), "warn");
    char *cs = codes(ir);
    assert_string_equal(cs, "warn:UNSUPPORTED_FEATURE warn:UNSUPPORTED_FEATURE "
                            "warn:SEMANTIC_LOSS warn:SEMANTIC_LOSS warn:SEMANTIC_LOSS");
    free(cs);
    json_decref(list), json_decref(ir), json_decref(c);
}

static void sub_agent_degrades_to_a_skill_with_its_system_prompt(void **state)
{
    (void)state;
    json_t *c = cand("agent", "reviewer", NULL, "project",
                     "---\nname: code-reviewer\ndescription: Reviews code for bugs\ntools: Read, "
                     "Grep\nmodel: sonnet\npermissionMode: plan\ncolor: blue\nfavourite: tea\n"
                     "---\nYou are a careful reviewer.\nCite lines.\n");
    json_t *ir = cdsh_mcpimport_skill_from_candidate(c);
    assert_string_equal(s(ir, "kind"), "agent");
    assert_string_equal(s(ir, "name"), "code-reviewer");
    assert_string_equal(s(ir, "description"), "Imported sub-agent: Reviews code for bugs");
    assert_string_equal(s(ir, "content"),
                        "Imported Claude Code sub-agent \"code-reviewer\". cdsh runs it in this "
                        "conversation, not as a separate agent: follow its system prompt "
                        "below.\n\nYou are a careful reviewer.\nCite lines.\n");
    char *w = joined(json_object_get(ir, "warnings"));
    assert_string_equal(
        w, "tools is Claude-only; cdsh does not restrict the tools while this sub-agent is used "
           "| model \"sonnet\" is not applied; the session's model is used | sub-agent field "
           "\"permissionMode\" is Claude-only; not applied (the instructions run in the current "
           "session) | unknown front matter key \"favourite\" ignored");
    free(w);
    /* the display colour changes no behaviour: info */
    w = joined(json_object_get(ir, "info"));
    assert_string_equal(w, "front matter \"color\" is display or metadata only; not used");
    free(w);
    json_decref(ir), json_decref(c);
}

static void names_map_to_kebab_case(void **state)
{
    (void)state;
    const char *cases[][3] = {
        {NULL, "My_Skill!!", "my-skill"},
        {"Tools", "--x--", "tools-x"},
        {NULL, "", "skill"},
        {"a b", "r\xc3\xa9sum\xc3\xa9", "a-b-r-sum"},
        {"p", "ok-1", "p-ok-1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *n = cdsh_mcpimport_skill_name_dup(cases[i][0], cases[i][1]);
        assert_string_equal(n, cases[i][2]);
        free(n);
    }
}

/* The description taken from the body is cut to 100 bytes; the cut must not
 * split a character (the IR is JSON: invalid UTF-8 would lose the item). */
static void a_long_non_ascii_first_line_is_cut_between_characters(void **state)
{
    (void)state;
    char body[256] = "# ";
    for (int i = 0; i < 40; i++)
        strcat(body, "\xe9\x95\xbf"); /* 长: 3 bytes, 120 in all */
    strcat(body, "\nMore.\n");
    char want[128] = "";
    for (int i = 0; i < 33; i++)
        strcat(want, "\xe9\x95\xbf"); /* 99 bytes: the 34th would pass 100 */
    json_t *c = cand("skill", "long", NULL, "user", body);
    json_t *ir = cdsh_mcpimport_skill_from_candidate(c);
    assert_non_null(ir);
    assert_string_equal(s(ir, "description"), want);
    assert_string_equal(s(ir, "descriptionFrom"), "body");
    json_decref(ir), json_decref(c);
    c = cand("command", "long", NULL, "user", body);
    ir = cdsh_mcpimport_command_from_markdown(c, body, strlen(body));
    assert_non_null(ir);
    assert_string_equal(s(ir, "description"), want);
    json_decref(ir), json_decref(c);
}

/* A very long front-matter name is kept to 511 bytes in originalName, cut
 * between characters (a cut inside one would lose the whole skill). */
static void a_long_non_ascii_name_is_cut_between_characters(void **state)
{
    (void)state;
    char text[1024] = "---\nname: ";
    for (int i = 0; i < 200; i++)
        strcat(text, "\xe9\x95\xbf"); /* 600 bytes */
    strcat(text, "\ndescription: Long\n---\nBody.\n");
    char want[1024] = "";
    for (int i = 0; i < 170; i++)
        strcat(want, "\xe9\x95\xbf"); /* 510 bytes: the 171st would pass 511 */
    json_t *c = cand("skill", "long", NULL, "user", text);
    json_t *ir = cdsh_mcpimport_skill_from_candidate(c);
    assert_non_null(ir);
    assert_string_equal(s(ir, "originalName"), want);
    assert_string_equal(s(ir, "name"), "skill");
    json_decref(ir), json_decref(c);
}

static json_t *judge(json_t *cands)
{
    cdsh_mcpimport_scan scan;
    assert_int_equal(cdsh_mcpimport_scan_candidates(cands, NULL, NULL, &scan, NULL), 0);
    json_t *out = json_incref(scan.skills);
    cdsh_mcpimport_scan_deinit(&scan);
    json_decref(cands);
    return out;
}

static json_t *named(const json_t *list, const char *name, size_t nth)
{
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x) {
        if (strcmp(s(x, "name"), name) == 0 && nth-- == 0)
            return x;
    }
    fail_msg("no skill %s", name);
    return NULL;
}

static const char *first_message(const json_t *ir)
{
    return s(json_array_get(json_object_get(ir, "reasons"), 0), "message");
}

static void verdicts_give_every_reason(void **state)
{
    (void)state;
    char *big = malloc(CDSH_MCPIMPORT_SKILL_MAX_BYTES + 64);
    memcpy(big, "---\ndescription: Big\n---\n", 25);
    memset(big + 25, 'x', CDSH_MCPIMPORT_SKILL_MAX_BYTES + 1);
    big[25 + CDSH_MCPIMPORT_SKILL_MAX_BYTES + 1] = '\0';
    char *large = strndup(big, 25 + CDSH_MCPIMPORT_SKILL_WARN_BYTES + 1);
    json_t *unreadable = cand("skill", "gone", NULL, "user", "");
    json_object_del(unreadable, "text");
    json_object_set_new(unreadable, "error",
                        json_string("cannot read /u/skills/gone/SKILL.md: No such file"));
    json_t *files = cand("skill", "files", NULL, "user", "---\ndescription: F\n---\nUse it.\n");
    json_object_set_new(files, "skillDir", json_string("/u/skills/files"));
    json_object_set_new(files, "files", json_pack("[s]", "dead.md"));
    json_object_set_new(files, "unreadable", json_pack("[s]", "dead.md"));
    json_t *list = judge(json_pack(
        "[o, o, o, o, o, o, o, o, o, o, o, o, o]",
        cand("agent", "nodesc", NULL, "user", "---\nname: nodesc\n---\nYou plan.\n"),
        cand("agent", "anon", NULL, "user", "---\ndescription: Plans\n---\nYou plan.\n"),
        cand("agent", "mute", NULL, "user", "---\nname: mute\ndescription: Says nothing\n---\n"),
        cand("skill", "plain", NULL, "user", "# Plain steps\nDo it.\n"),
        cand("skill", "empty", NULL, "user", ""), unreadable, files,
        cand("skill", "huge", NULL, "user", big), cand("skill", "large", NULL, "user", large),
        cand("skill", "My_Skill", NULL, "user", "---\ndescription: A\n---\nA.\n"),
        cand("skill", "my-skill", NULL, "project", "---\ndescription: B\n---\nB.\n"),
        cand("skill", "shared", NULL, "project", "---\ndescription: P\n---\nP.\n"),
        cand("skill", "shared", NULL, "user", "---\ndescription: U\n---\nU.\n")));
    free(big), free(large);
    json_t *x = named(list, "nodesc", 0);
    assert_string_equal(cdsh_mcpimport_verdict(x), "blocked");
    char *cs = codes(x);
    assert_string_equal(cs, "blocked:MISSING_DESCRIPTION");
    free(cs);
    assert_string_equal(first_message(x), "the sub-agent has no description (Claude Code requires "
                                          "name and description)");
    x = named(list, "anon", 0);
    cs = codes(x);
    assert_string_equal(cs, "blocked:MISSING_NAME");
    free(cs);
    cs = codes(named(list, "mute", 0));
    assert_string_equal(cs, "blocked:EMPTY_BODY");
    free(cs);
    assert_string_equal(first_message(named(list, "mute", 0)),
                        "the sub-agent has no system prompt");
    x = named(list, "plain", 0);
    assert_string_equal(cdsh_mcpimport_verdict(x), "warn");
    assert_string_equal(s(x, "description"), "Plain steps");
    assert_string_equal(first_message(x),
                        "no description in the front matter; the body's first line is used");
    cs = codes(named(list, "empty", 0));
    assert_string_equal(cs, "blocked:MISSING_DESCRIPTION blocked:EMPTY_BODY");
    free(cs);
    x = named(list, "gone", 0);
    cs = codes(x);
    assert_string_equal(cs, "blocked:UNREADABLE_FILE");
    free(cs);
    assert_string_equal(first_message(x), "cannot read /u/skills/gone/SKILL.md: No such file");
    x = named(list, "files", 0);
    assert_string_equal(cdsh_mcpimport_verdict(x), "warn");
    assert_string_equal(first_message(x),
                        "supporting file dead.md cannot be read; it is listed anyway");
    x = named(list, "huge", 0);
    cs = codes(x);
    assert_string_equal(cs, "blocked:OVERSIZED_BODY");
    free(cs);
    x = named(list, "large", 0);
    assert_string_equal(cdsh_mcpimport_verdict(x), "warn");
    char want[256];
    snprintf(want, sizeof want,
             "the skill text is %d bytes; the skill tool hands the model the first 20000 (its "
             "default maxBodyBytes)",
             CDSH_MCPIMPORT_SKILL_WARN_BYTES + 2);
    assert_string_equal(first_message(x), want);
    /* user skills come before project ones (Claude's order for skills) */
    x = named(list, "my-skill", 1);
    assert_string_equal(s(json_object_get(x, "provenance"), "scope"), "project");
    assert_string_equal(cdsh_mcpimport_verdict(x), "blocked");
    assert_string_equal(first_message(x),
                        "\"my-skill\" and \"My_Skill\" (/x.md (claude, user)) both become skill "
                        "\"my-skill\"");
    /* a mapped name is faithful: info */
    assert_string_equal(cdsh_mcpimport_verdict(named(list, "my-skill", 0)), "ok");
    x = named(list, "shared", 0);
    assert_string_equal(s(json_object_get(x, "provenance"), "scope"), "user");
    assert_string_equal(cdsh_mcpimport_verdict(x), "ok"); /* shadowing as Claude does: info */
    assert_string_equal(first_message(x), "skill \"shared\" is also defined in /x.md (claude, "
                                          "project), which this one shadows (as in Claude Code)");
    x = named(list, "shared", 1);
    cs = codes(x);
    assert_string_equal(cs, "blocked:DUPLICATE_SKILL");
    free(cs);
    json_decref(list);
}

/* ---- a fixture tree: user, project and plugin locations --------------------- */

typedef struct fx {
    cdsh_test_import_tree t;
    char claude[1024], codex[1024], proj[1024];
} fx;

static const char *p(fx *f, const char *rel)
{
    return cdsh_test_import_tree_path(&f->t, rel);
}

static void put(fx *f, const char *rel, const char *text)
{
    cdsh_test_import_tree_put(&f->t, rel, text);
}

static void build(fx *f)
{
    cdsh_test_import_tree_open(&f->t); /* never the developer's ~/.claude */
    snprintf(f->claude, sizeof f->claude, "%s/claude", f->t.home);
    snprintf(f->codex, sizeof f->codex, "%s/codex", f->t.home);
    snprintf(f->proj, sizeof f->proj, "%s/proj", f->t.home);
    char reg[1024];
    snprintf(reg, sizeof reg,
             "{\"version\":2,\"plugins\":{\"tools@community\":[{\"scope\":\"user\","
             "\"installPath\":\"%s/claude/plugins/cache/community/tools/2.0\"}]}}",
             f->t.home);
    put(f, "claude/plugins/installed_plugins.json", reg);
    put(f, "claude/plugins/cache/community/tools/2.0/.claude-plugin/plugin.json",
        "{\"name\":\"tools\"}");
    put(f, "claude/plugins/cache/community/tools/2.0/skills/helper/SKILL.md",
        "---\nname: helper\ndescription: Helps\n---\nHelp with ${CLAUDE_PLUGIN_ROOT}/data.\n");
    put(f, "claude/plugins/cache/community/tools/2.0/agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews\n---\nYou review.\n");
    put(f, "claude/skills/notes/SKILL.md",
        "---\nname: notes\ndescription: Take meeting notes\nwhen_to_use: after a meeting\n---\n"
        "Write notes with the template in ${CLAUDE_SKILL_DIR}/template.md.\n");
    put(f, "claude/skills/notes/template.md", "# Notes\n");
    put(f, "claude/skills/notes/scripts/tidy.sh", "#!/bin/sh\n");
    put(f, "claude/skills/notes/.hidden", "x");
    assert_int_equal(symlink("/nonexistent/target", p(f, "claude/skills/notes/dead.md")), 0);
    put(f, "claude/skills/broken/placeholder", "");
    assert_int_equal(symlink("/nonexistent/skill", p(f, "claude/skills/broken/SKILL.md")), 0);
    put(f, "claude/agents/planner.md", "---\nname: planner\ndescription: Plans (user)\n---\nU.\n");
    put(f, "claude/agents/nodesc.md", "---\nname: nodesc\n---\nYou have no description.\n");
    put(f, "proj/.claude/skills/deploy/SKILL.md", "---\ndescription: Deploy\n---\nDeploy it.\n");
    put(f, "proj/.claude/agents/planner.md",
        "---\nname: planner\ndescription: Plans the work\n---\nYou plan the work step by step.\n");
    assert_int_equal(cdsh_fs_mkdir_p(f->codex, 0700, NULL), 0);
}

static void destroy(fx *f)
{
    cdsh_test_import_tree_close(&f->t);
}

static void scan(fx *f, cdsh_mcpimport_scan *out)
{
    char cjson[1200];
    snprintf(cjson, sizeof cjson, "%s/.claude.json", f->claude);
    const char *projects[] = {f->proj, NULL};
    cdsh_mcpimport_roots roots = {f->claude, cjson, f->codex, projects};
    assert_int_equal(cdsh_mcpimport_scan_run(&roots, NULL, NULL, out, NULL), 0);
}

static char *verdicts(const json_t *list)
{
    char buf[4096] = "";
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x) {
        char one[256];
        snprintf(one, sizeof one, "%s%s:%s=%s", i ? " " : "", s(x, "kind"), s(x, "name"),
                 s(x, "verdict"));
        strncat(buf, one, sizeof buf - strlen(buf) - 1);
    }
    return strdup(buf);
}

static void discovery_finds_user_project_and_plugin_skills_and_agents(void **state)
{
    (void)state;
    fx f;
    build(&f);
    cdsh_mcpimport_scan sc;
    scan(&f, &sc);
    char *v = verdicts(sc.skills);
    /* notes: its dangling supporting link is a note, not a listed file; the
     * user planner is shadowed, as in Claude Code (info) */
    assert_string_equal(v, "skill:broken=blocked skill:notes=ok skill:deploy=ok "
                           "skill:tools-helper=ok agent:planner=ok agent:nodesc=blocked "
                           "agent:planner=blocked agent:tools-reviewer=ok");
    free(v);
    json_t *notes = named(sc.skills, "notes", 0);
    assert_string_equal(s(json_object_get(notes, "provenance"), "scope"), "user");
    char *files = joined(json_object_get(notes, "files"));
    /* a dangling link is never listed to the model: it is a note */
    assert_string_equal(files, "scripts/tidy.sh | template.md");
    free(files);
    char want[8192];
    snprintf(want, sizeof want,
             "Write notes with the template in %s/skills/notes/template.md.\n\nSupporting files "
             "(read them when the instructions refer to them):\n- "
             "%s/skills/notes/scripts/tidy.sh\n- %s/skills/notes/template.md\n",
             f.claude, f.claude, f.claude);
    assert_string_equal(s(notes, "content"), want);
    bool noted = false;
    size_t ni;
    json_t *nv;
    json_array_foreach(sc.notes, ni, nv) {
        noted |= strstr(s(nv, "message"), "notes/dead.md is a dangling symlink; skipped") != NULL;
    }
    assert_true(noted);
    json_t *broken = named(sc.skills, "broken", 0);
    assert_non_null(strstr(first_message(broken), "cannot read "));
    assert_non_null(strstr(first_message(broken), "/claude/skills/broken/SKILL.md: "));
    json_t *helper = named(sc.skills, "tools-helper", 0);
    assert_string_equal(s(json_object_get(helper, "provenance"), "plugin"), "tools@community");
    snprintf(want, sizeof want, "Help with %s/plugins/cache/community/tools/2.0/data.\n", f.claude);
    assert_string_equal(s(helper, "content"), want);
    /* project sub-agents shadow personal ones (Claude's order for sub-agents) */
    json_t *planner = named(sc.skills, "planner", 0);
    assert_string_equal(s(json_object_get(planner, "provenance"), "scope"), "project");
    assert_string_equal(s(named(sc.skills, "planner", 1), "description"),
                        "Imported sub-agent: Plans (user)");
    json_t *report = cdsh_mcpimport_report_new(sc.servers, sc.commands, sc.skills, sc.notes);
    const json_t *claude = json_array_get(json_object_get(report, "sources"), 0);
    assert_int_equal(json_array_size(json_object_get(claude, "skills")), 4);
    assert_int_equal(json_array_size(json_object_get(claude, "agents")), 4);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(report, "summary"), "agents"), "blocked")),
                     2);
    char *text = cdsh_mcpimport_report_text_dup(report);
    assert_non_null(strstr(text, "  skills:\n    blocked  broken\n"));
    assert_non_null(strstr(text, "    ok       tools-helper  (was tools:helper)\n"));
    assert_non_null(strstr(text, "  agents:\n    ok       planner  (sub-agent, offered as a "
                                 "skill)\n"));
    assert_non_null(strstr(text, "        - blocked MISSING_DESCRIPTION: the sub-agent has no "
                                 "description (Claude Code requires name and description)\n"));
    assert_non_null(strstr(text, "; skills 3 ok, 0 warn, 1 blocked; agents 2 ok, 0 warn, 2 "
                                 "blocked.\n"));
    free(text);
    json_decref(report);
    cdsh_mcpimport_scan_deinit(&sc);
    destroy(&f);
}

static cdsh_toolresult *call_skill(cdsh_host *h, const char *name)
{
    json_t *args = json_pack("{s:s}", "name", name);
    cdsh_dispatch_input in = {.call_id = "c1", .name = "skill", .args = args};
    cdsh_toolresult *r = cdsh_dispatch_execute(cdsh_host_tools(h), &in);
    json_decref(args);
    return r;
}

/* true if any item of list has `name`, or any note's message contains it. */
static bool mentioned(const cdsh_mcpimport_scan *sc, const char *needle)
{
    const json_t *lists[] = {sc->commands, sc->skills, sc->notes};
    for (size_t l = 0; l < 3; l++) {
        char *dump = json_dumps(lists[l], JSON_ENSURE_ASCII);
        bool hit = dump && strstr(dump, needle);
        free(dump);
        if (hit)
            return true;
    }
    return false;
}

/* Files that are not UTF-8 — in their text or their name — are judged or
 * noted, never silently left out of the scan. */
static void files_that_are_not_utf8_are_reported_not_dropped(void **state)
{
    (void)state;
    fx f;
    build(&f);
    put(&f, "claude/commands/latin.md", "---\ndescription: caf\xe9\n---\nOrder a caf\xe9.\n");
    put(&f, "claude/skills/bad\xffname/SKILL.md", "---\ndescription: Bad name\n---\nBody.\n");
    put(&f, "claude/agents/latin.md", "---\nname: latin\ndescription: caf\xe9\n---\nYou.\n");
    cdsh_mcpimport_scan sc;
    scan(&f, &sc);
    /* a command: a note saying why */
    assert_true(mentioned(&sc, "commands/latin.md: the file is not UTF-8 text"));
    /* a sub-agent: judged blocked, with the reason */
    json_t *agent = named(sc.skills, "latin", 0);
    assert_non_null(agent);
    assert_string_equal(s(agent, "verdict"), "blocked");
    assert_non_null(
        strstr(s(json_array_get(json_object_get(agent, "reasons"), 0), "message"), "not UTF-8"));
    /* a folder name that is not UTF-8: judged under a mapped name, with a warning */
    json_t *skill = named(sc.skills, "bad-name", 0);
    assert_non_null(skill);
    assert_string_equal(s(skill, "verdict"), "ok"); /* the mapping is info */
    cdsh_mcpimport_scan_deinit(&sc);
    destroy(&f);
}

static void enabled_skills_are_registered_read_by_the_skill_tool_and_unloaded(void **state)
{
    (void)state;
    fx f;
    build(&f);
    cdsh_host *host = cdsh_host_new();
    assert_int_equal(cdsh_plugin_load(host, &cdsh_skilltool_plugin, NULL, NULL, NULL), 0);
    cdsh_skills *skills = cdsh_host_skills(host);
    size_t before = cdsh_skills_count(skills);
    json_t *cfg = json_pack("{s:[s, s, s, s, s], s:[s], s:s, s:s}", "skills", "notes", "planner",
                            "tools-reviewer", "nodesc", "missing", "projects", f.proj, "claudeDir",
                            f.claude, "codexHome", f.codex);
    cdsh_plugin *pl = NULL;
    assert_int_equal(cdsh_plugin_load(host, &cdsh_mcpimport_plugin, cfg, &pl, NULL), 0);
    /* the blocked sub-agent and the unknown name are skipped, not fatal */
    assert_int_equal(cdsh_plugin_state_get(pl), CDSH_PLUGIN_ACTIVE);
    assert_int_equal(cdsh_skills_count(skills), before + 3);
    assert_null(cdsh_skills_info_dup(skills, NULL, "nodesc"));
    json_t *planner = cdsh_skills_info_dup(skills, NULL, "planner");
    assert_string_equal(s(planner, "description"), "Imported sub-agent: Plans the work");
    assert_string_equal(s(planner, "source"), "import");
    assert_string_equal(s(planner, "content"),
                        "Imported Claude Code sub-agent \"planner\". cdsh runs it in this "
                        "conversation, not as a separate agent: follow its system prompt "
                        "below.\n\nYou plan the work step by step.\n");
    json_decref(planner);
    json_t *notes = cdsh_skills_info_dup(skills, NULL, "notes");
    assert_string_equal(s(notes, "whenToUse"), "after a meeting");
    json_decref(notes);
    char *index = cdsh_skills_index_dup(skills, NULL);
    assert_non_null(strstr(index, "- notes: Take meeting notes (when to use: after a meeting)"));
    free(index);
    cdsh_toolresult *r = call_skill(host, "planner");
    assert_false(r->is_error);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(r->content, 0), "text")),
        "<skill_content name=\"planner\">\n<skill_resources>\nResources for this skill are "
        "managed by provider \"runtime\".\nLoad referenced resources only as needed.\n"
        "</skill_resources>\n\n<skill_instructions>\nImported Claude Code sub-agent "
        "\"planner\". cdsh runs it in this conversation, not as a separate agent: follow its "
        "system prompt below.\n\nYou plan the work step by step.\n\n</skill_instructions>\n"
        "</skill_content>");
    cdsh_toolresult_free(r);
    /* a Claude skill folder is the skill's resource directory: listed and readable */
    notes = cdsh_skills_info_dup(skills, NULL, "notes");
    char dir[1200], file[1300];
    snprintf(dir, sizeof dir, "%s/skills/notes", f.claude);
    snprintf(file, sizeof file, "%s/SKILL.md", dir);
    assert_string_equal(s(json_object_get(notes, "resourceBase"), "kind"), "directory");
    assert_string_equal(s(json_object_get(notes, "resourceBase"), "path"), dir);
    assert_string_equal(s(notes, "path"), file);
    json_t *files = cdsh_skills_resources_dup(notes, 50, NULL);
    char *fl = json_dumps(files, JSON_COMPACT);
    assert_string_equal(fl, "[\"scripts/tidy.sh\",\"template.md\"]");
    free(fl);
    json_decref(files);
    json_decref(notes);
    json_t *args = json_pack("{s:s, s:s}", "name", "notes", "resource", "template.md");
    cdsh_dispatch_input in = {.call_id = "c2", .name = "skill", .args = args};
    r = cdsh_dispatch_execute(cdsh_host_tools(host), &in);
    json_decref(args);
    assert_false(r->is_error);
    assert_string_equal(s(r->value, "content"), "# Notes\n");
    cdsh_toolresult_free(r);
    cdsh_plugin_unload(pl);
    assert_int_equal(cdsh_skills_count(skills), before);
    r = call_skill(host, "planner");
    assert_true(r->is_error);
    assert_string_equal(r->error_code, "UNKNOWN_SKILL");
    cdsh_toolresult_free(r);
    cdsh_host_free(host);
    json_decref(cfg);
    destroy(&f);
}

/* Claude's disable-model-invocation and user-invocable reach every surface:
 * the skill tool, the prompt's index and /skills. */
static void claude_invocation_flags_reach_the_tool_the_index_and_skills_command(void **state)
{
    (void)state;
    fx f;
    build(&f);
    put(&f, "claude/skills/release/SKILL.md",
        "---\nname: release\ndescription: Cut a release\ndisable-model-invocation: true\n---\n"
        "Tag and publish.\n");
    put(&f, "claude/skills/style/SKILL.md",
        "---\nname: style\ndescription: House style\nuser-invocable: false\n---\nWrite "
        "plainly.\n");
    cdsh_host *host = cdsh_host_new();
    assert_int_equal(cdsh_plugin_load(host, &cdsh_skilltool_plugin, NULL, NULL, NULL), 0);
    json_t *cfg = json_pack("{s:[s, s, s], s:[s], s:s, s:s}", "skills", "release", "style",
                            "notes", "projects", f.proj, "claudeDir", f.claude, "codexHome",
                            f.codex);
    assert_int_equal(cdsh_plugin_load(host, &cdsh_mcpimport_plugin, cfg, NULL, NULL), 0);
    cdsh_toolresult *r = call_skill(host, "release");
    assert_true(r->is_error);
    assert_string_equal(r->error_code, "SKILL_NOT_MODEL_INVOCABLE");
    cdsh_toolresult_free(r);
    r = call_skill(host, "style");
    assert_false(r->is_error);
    cdsh_toolresult_free(r);
    char *index = cdsh_skills_index_dup(cdsh_host_skills(host), NULL);
    assert_null(strstr(index, "release"));
    assert_non_null(strstr(index, "- style: House style\n"));
    free(index);
    cdsh_command_outcome oc = {0};
    assert_int_equal(cdsh_commands_execute(cdsh_host_commands(host), NULL, "/skills", NULL, NULL,
                                           &oc, NULL),
                     1);
    assert_string_equal(oc.text, "/skills notes — Take meeting notes\n/skills release — Cut a "
                                 "release");
    cdsh_commands_outcome_clear(&oc);
    assert_int_equal(cdsh_commands_execute(cdsh_host_commands(host), NULL, "/skills style", NULL,
                                           NULL, &oc, NULL),
                     1);
    assert_int_equal(oc.kind, CDSH_COMMAND_ERROR);
    cdsh_commands_outcome_clear(&oc);
    cdsh_host_free(host);
    json_decref(cfg);
    destroy(&f);
}

static void cli_enables_skills_lists_them_and_disable_removes_them(void **state)
{
    (void)state;
    fx f;
    build(&f);
    char *out = NULL, *err = NULL;
    int rc = cdsh_test_run_cdsh(NULL, &out, &err, "import", "enable", "--claude-dir", f.claude,
                                "--codex-home", f.codex, "--root", f.proj, "skill:notes", "planner",
                                NULL);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "enabled skill notes\nenabled skill planner\nprofile \"default\": "
                             "plugin \"import\" enabled; registered when cdsh starts\n");
    free(out), free(err);
    rc = cdsh_test_run_cdsh(NULL, &out, &err, "import", "enable", "--claude-dir", f.claude,
                            "--codex-home", f.codex, "--root", f.proj, "skill:nodesc", NULL);
    assert_int_equal(rc, 1);
    assert_string_equal(err, "cdsh import enable: skill \"nodesc\" is blocked:\n  - "
                             "MISSING_DESCRIPTION: the sub-agent has no description (Claude Code "
                             "requires name and description)\n");
    free(out), free(err);
    rc = cdsh_test_run_cdsh(NULL, &out, &err, "import", "enable", "skill:nope", NULL);
    assert_int_equal(rc, 1);
    assert_string_equal(err, "cdsh import enable: no imported skill named \"nope\" (see cdsh "
                             "import scan)\n");
    free(out), free(err);
    rc = cdsh_test_run_cdsh(NULL, &out, &err, "import", "list", NULL);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "skill    notes\nskill    planner\n");
    free(out), free(err);
    rc = cdsh_test_run_cdsh(NULL, &out, &err, "skills", "show", "notes", NULL);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "<skill_content name=\"notes\">\n<skill_resources>\nBase "
                                "directory for this skill: "));
    assert_non_null(strstr(out, "- template.md\n</skill_resources>\n\n<skill_instructions>\n"
                                "Write notes with the template"));
    free(out), free(err);
    rc = cdsh_test_run_cdsh(NULL, &out, &err, "skills", "list", "--json", NULL);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "\"name\": \"planner\""));
    free(out), free(err);
    rc = cdsh_test_run_cdsh(NULL, &out, &err, "import", "disable", "skill:notes", NULL);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "disabled skill:notes\n");
    free(out), free(err);
    rc = cdsh_test_run_cdsh(NULL, &out, &err, "skills", "list", "--json", NULL);
    assert_int_equal(rc, 0);
    assert_null(strstr(out, "\"name\": \"notes\""));
    assert_non_null(strstr(out, "\"name\": \"planner\""));
    free(out), free(err);
    rc = cdsh_test_run_cdsh(NULL, &out, &err, "import", "disable", "--all", NULL);
    assert_int_equal(rc, 0);
    free(out), free(err);
    rc = cdsh_test_run_cdsh(NULL, &out, &err, "skills", "list", "--json", NULL);
    assert_null(strstr(out, "\"name\": \"planner\""));
    free(out), free(err);
    rc = cdsh_test_run_cdsh(NULL, &out, &err, "import", "list", NULL);
    assert_string_equal(out, "nothing imported is enabled\n");
    free(out), free(err);
    destroy(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(skill_front_matter_body_and_files_normalise_with_warnings),
        cmocka_unit_test(sub_agent_degrades_to_a_skill_with_its_system_prompt),
        cmocka_unit_test(names_map_to_kebab_case),
        cmocka_unit_test(a_long_non_ascii_first_line_is_cut_between_characters),
        cmocka_unit_test(a_long_non_ascii_name_is_cut_between_characters),
        cmocka_unit_test(verdicts_give_every_reason),
        cmocka_unit_test(discovery_finds_user_project_and_plugin_skills_and_agents),
        cmocka_unit_test(files_that_are_not_utf8_are_reported_not_dropped),
        cmocka_unit_test(enabled_skills_are_registered_read_by_the_skill_tool_and_unloaded),
        cmocka_unit_test(claude_invocation_flags_reach_the_tool_the_index_and_skills_command),
        cmocka_unit_test(cli_enables_skills_lists_them_and_disable_removes_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
