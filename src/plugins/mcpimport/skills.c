/* skills.c — SKILL.md and agents/NAME.md → skill IR. Registration is
 * register.c's job and verdicts are preflight.c's; this file is pure. */
#include "plugins/mcpimport/skills.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/utf8.h"
#include "plugins/mcpimport/commands.h"
#include "plugins/mcpimport/frontmatter.h"
#include "plugins/mcpimport/vars.h"

char *cdsh_mcpimport_skill_name_dup(const char *ns, const char *name)
{
    cdsh_strbuf b;
    cdsh_strbuf_init(&b);
    char full[512];
    snprintf(full, sizeof full, "%s%s%s", ns && *ns ? ns : "", ns && *ns ? "-" : "",
             name ? name : "");
    bool dash = true; /* folds runs and drops a leading '-' */
    for (const char *p = full; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c - 'A' + 'a');
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (ok)
            cdsh_strbuf_append_char(&b, (char)c);
        else if (!dash)
            cdsh_strbuf_append_char(&b, '-');
        dash = !ok;
    }
    if (b.len && b.data[b.len - 1] == '-')
        cdsh_strbuf_truncate(&b, b.len - 1);
    if (!b.len)
        cdsh_strbuf_append_str(&b, "skill");
    return cdsh_strbuf_take(&b, NULL);
}

/* Front-matter keys read by the mapping; the others are named in warnings. */
static const char *const skill_known[] = {"name",          "description", "when_to_use",
                                          "argument-hint", "arguments",   NULL};
static const char *const skill_claude_only[] = {"allowed-tools",
                                                "disallowed-tools",
                                                "disable-model-invocation",
                                                "user-invocable",
                                                "model",
                                                "effort",
                                                "shell",
                                                "paths",
                                                "hooks",
                                                "context",
                                                "agent",
                                                "background",
                                                "metadata",
                                                "version",
                                                "license",
                                                NULL};
static const char *const agent_known[] = {"name", "description", NULL};
static const char *const agent_claude_only[] = {
    "tools",      "disallowedTools", "model",     "effort", "permissionMode",
    "mcpServers", "hooks",           "maxTurns",  "skills", "initialPrompt",
    "memory",     "background",      "isolation", "color",  NULL};

static void key_warnings(const json_t *meta, bool agent, json_t *warnings, json_t *info)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)meta, k, v) {
        if (cdsh__mcpimport_in_list(agent ? agent_known : skill_known, k))
            continue;
        char *val = cdsh__mcpimport_meta_text_dup(v);
        if (!cdsh__mcpimport_in_list(agent ? agent_claude_only : skill_claude_only, k))
            cdsh__mcpimport_warnf(warnings, "unknown front matter key \"%s\" ignored", k);
        else if (strcmp(k, "tools") == 0 || strcmp(k, "allowed-tools") == 0)
            cdsh__mcpimport_warnf(warnings,
                                  "%s is Claude-only; cdsh does not restrict the tools while "
                                  "this %s is used",
                                  k, agent ? "sub-agent" : "skill");
        else if (strcmp(k, "model") == 0 && val && strcmp(val, "inherit") == 0)
            cdsh__mcpimport_warnf(info, "model \"inherit\": the session's model is used, as in "
                                        "Claude Code");
        else if (strcmp(k, "model") == 0 && val)
            cdsh__mcpimport_warnf(warnings,
                                  "model \"%s\" is not applied; the session's model is used", val);
        else if (strcmp(k, "disable-model-invocation") == 0 && json_is_true(v))
            cdsh__mcpimport_warnf(info, "disable-model-invocation: not offered to the model (left "
                                        "out of <available_skills>), as in Claude Code");
        else if (strcmp(k, "disable-model-invocation") == 0 ||
                 (strcmp(k, "user-invocable") == 0 && !json_is_false(v)))
            cdsh__mcpimport_warnf(info, "%s: %s, as in Claude Code", k,
                                  "the model is offered the skill");
        else if (strcmp(k, "user-invocable") == 0)
            cdsh__mcpimport_warnf(info, "user-invocable: false: offered to the model only, as in "
                                        "Claude Code (cdsh has no / menu for skills)");
        else if (strcmp(k, "color") == 0 || strcmp(k, "metadata") == 0 ||
                 strcmp(k, "version") == 0 || strcmp(k, "license") == 0)
            cdsh__mcpimport_warnf(info, "front matter \"%s\" is display or metadata only; not "
                                        "used",
                                  k);
        else if (agent)
            cdsh__mcpimport_warnf(warnings,
                                  "sub-agent field \"%s\" is Claude-only; not applied (the "
                                  "instructions run in the current session)",
                                  k);
        else
            cdsh__mcpimport_warnf(warnings, "front matter \"%s\" is Claude-only; not applied", k);
        free(val);
    }
}

static char *subst(char *s, const char *name, const char *value)
{
    if (!s || !value)
        return s;
    char *t = cdsh_mcpimport_vars_subst_dup(s, name, value);
    free(s);
    return t;
}

/* The registered text: the body, then what the model needs to use it here. */
static char *content_dup(bool agent, const char *original, const char *body, const char *hint,
                         const char *dir, const json_t *files)
{
    cdsh_strbuf b;
    cdsh_strbuf_init(&b);
    size_t n = strlen(body);
    while (n && strchr(" \t\r\n", body[n - 1]))
        n--;
    if (agent)
        cdsh_strbuf_appendf(&b,
                            "Imported Claude Code sub-agent \"%s\". cdsh runs it in this "
                            "conversation, not as a separate agent: follow its system prompt "
                            "below.\n\n",
                            original);
    cdsh_strbuf_append(&b, body, n);
    if (hint)
        cdsh_strbuf_appendf(&b,
                            "\n\nArguments: %s (the skill is loaded without arguments; take "
                            "them from the request)",
                            hint);
    if (json_array_size(files)) {
        cdsh_strbuf_append_str(&b, "\n\nSupporting files (read them when the instructions refer to "
                                   "them):");
        size_t i;
        json_t *f;
        json_array_foreach(files, i, f) {
            cdsh_strbuf_appendf(&b, "\n- %s/%s", dir, json_string_value(f));
        }
    }
    cdsh_strbuf_append_char(&b, '\n');
    return cdsh_strbuf_take(&b, NULL);
}

static const char *src_of(const json_t *prov)
{
    const char *s = json_string_value(json_object_get(prov, "source"));
    return s ? s : "claude";
}

json_t *cdsh_mcpimport_skill_from_candidate(const json_t *cand)
{
    const char *kind = json_string_value(json_object_get(cand, "kind"));
    bool agent = kind && strcmp(kind, "agent") == 0;
    const json_t *prov = json_object_get(cand, "provenance");
    const json_t *text = json_object_get(cand, "text");
    const char *stem = json_string_value(json_object_get(cand, "stem"));
    const char *ns = json_string_value(json_object_get(cand, "namespace"));
    const char *root = json_string_value(json_object_get(cand, "pluginRoot"));
    const char *dir = agent ? NULL : json_string_value(json_object_get(cand, "skillDir"));
    json_t *warnings = json_array(), *meta = NULL, *unsupported = json_array();
    json_t *info = json_array();
    size_t off = 0;
    const char *t = json_string_value(text);
    size_t len = json_string_length(text);
    if (cdsh_mcpimport_frontmatter_parse(t ? t : "", t ? len : 0, &meta, &off, warnings) != 0) {
        json_decref(warnings), json_decref(unsupported), json_decref(info);
        return NULL;
    }
    const char *given = json_string_value(json_object_get(meta, "name"));
    const char *raw = given && *given ? given : (stem ? stem : "");
    char original[512];
    snprintf(original, sizeof original, "%s%s%s", ns && *ns ? ns : "", ns && *ns ? ":" : "", raw);
    /* a front-matter name may be longer: end on a whole character */
    original[cdsh_utf8_valid_prefix(original, strlen(original))] = '\0';
    char *name = cdsh_mcpimport_skill_name_dup(ns, raw);
    char *body = t ? strndup(t + off, len - off) : strdup("");
    body = subst(body, "CLAUDE_PLUGIN_ROOT", root);
    body = subst(body, "CLAUDE_SKILL_DIR", dir);
    char *description = cdsh__mcpimport_meta_text_dup(json_object_get(meta, "description"));
    const char *desc_from = description && *description ? "front matter" : NULL;
    char *when = cdsh__mcpimport_meta_text_dup(json_object_get(meta, "when_to_use"));
    char *hint = cdsh__mcpimport_hint_dup(json_object_get(meta, "argument-hint"), info);
    json_t *named = json_object_get(meta, "arguments")
                        ? cdsh__mcpimport_meta_list(json_object_get(meta, "arguments"), " ,")
                        : json_array();
    json_t *found = json_array();
    json_t *ir = NULL;
    if (!name || !body || !named || !found)
        goto done;
    if (!desc_from && !agent && body[strspn(body, " \t\r\n")]) {
        free(description);
        description = cdsh__mcpimport_first_line_dup(body, original);
        desc_from = "body";
    }
    key_warnings(meta, agent, warnings, info);
    /* Plugin qualification alone ("tools:helper" → "tools-helper") is the
     * documented mapping, shown in the report; only sanitising warns. */
    char joined[512];
    snprintf(joined, sizeof joined, "%s%s%s", ns && *ns ? ns : "", ns && *ns ? "-" : "", raw);
    if (strcmp(name, joined) != 0)
        cdsh__mcpimport_warnf(info, "name \"%s\" mapped to \"%s\"", original, name);
    cdsh__mcpimport_claude_placeholders(body, named, found);
    if (json_array_size(found)) {
        cdsh_strbuf list;
        cdsh_strbuf_init(&list);
        size_t i;
        json_t *v;
        json_array_foreach(found, i, v) {
            cdsh_strbuf_appendf(&list, "%s%s", i ? ", " : "", json_string_value(v));
        }
        char *l = cdsh_strbuf_take(&list, NULL);
        cdsh__mcpimport_warnf(warnings,
                              "placeholders %s stay as written: cdsh's skill tool loads a skill "
                              "by name, without arguments",
                              l ? l : "");
        free(l);
    }
    if (strstr(body, "${CLAUDE_"))
        cdsh__mcpimport_warnf(
            warnings, "the body uses a ${CLAUDE_...} variable that cdsh cannot fill; left as "
                      "written");
    cdsh__mcpimport_scan_unsupported(body, unsupported, warnings,
                                     json_object_get(cand, "fileRefs"));
    if (json_is_true(json_object_get(cand, "filesTruncated")))
        cdsh__mcpimport_warnf(warnings, "the skill folder holds more files than are listed");
    const json_t *files = json_object_get(cand, "files");
    char *content = content_dup(agent, original, body, hint, dir, files);
    char *shown = NULL;
    if (agent && description && *description &&
        asprintf(&shown, "Imported sub-agent: %s", description) < 0)
        shown = NULL;
    if (!content || (agent && description && *description && !shown)) {
        free(content);
        goto done;
    }
    ir = json_pack(
        "{s:s, s:s, s:s, s:s?, s:s?, s:b, s:s?, s:s?, s:O, s:O, s:s, s:I, s:s?, "
        "s:o, s:o, s:O?, s:s, s:s?, s:O, s:O, s:O, s:b, s:O, s:b}",
        "kind", agent ? "agent" : "skill", "name", name, "originalName", original, "description",
        shown ? shown : description, "descriptionFrom", desc_from, "hasName", given && *given,
        "whenToUse", when, "argumentHint", hint, "arguments", named, "placeholders", found,
        "content", content, "bodyBytes", (json_int_t)strlen(body), "skillDir", dir, "files",
        files ? json_incref((json_t *)files) : json_array(), "unreadableFiles",
        json_object_get(cand, "unreadable") ? json_incref(json_object_get(cand, "unreadable"))
                                            : json_array(),
        "error", json_object_get(cand, "error"), "source", src_of(prov), "file",
        json_string_value(json_object_get(prov, "file")), "provenance", prov, "warnings", warnings,
        "unsupported", unsupported, "hasBody", body[strspn(body, " \t\r\n")] != '\0', "info", info,
        "disableModelInvocation", json_is_true(json_object_get(meta, "disable-model-invocation")));
    if (ir)
        json_object_set_new(ir, "userInvocable",
                            json_boolean(!json_is_false(json_object_get(meta, "user-invocable"))));
    free(content);
    free(shown);
done:
    free(name), free(body), free(description), free(when), free(hint);
    json_decref(meta), json_decref(named), json_decref(found);
    json_decref(warnings), json_decref(unsupported), json_decref(info);
    return ir;
}
