/* fuzz_import_tree.c — the importer's discovery and scan over a Claude Code
 * and Codex tree built from the input: the bytes are split at "\n@@@@\n"
 * into the files of SLOTS below (settings.json, .claude.json, .mcp.json,
 * frontmatter commands, agents and skills, installed_plugins.json,
 * marketplaces, plugin manifests, config.toml...), "@HOME@" in them becomes
 * the scratch home (as tests/data/import-trees does), and the whole pipeline
 * runs: discover → normalise → commands/skills → secrets (environment only)
 * → preflight (no probe: nothing is started) → report, JSON and text.
 * Nothing may crash, hang or leak. The seeds in corpus/import_tree are the
 * files of tests/data/import-trees laid into these slots, plus variants. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/strbuf.h"
#include "plugins/mcpimport/report.h"
#include "plugins/mcpimport/service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const SLOTS[] = {
    ".claude/settings.json",
    ".claude.json",
    "work/app/.mcp.json",
    "work/app/.claude/settings.json",
    "work/app/.claude/settings.local.json",
    "work/app/.claude/commands/fix-issue.md",
    ".claude/agents/planner.md",
    "work/app/.claude/skills/quiet/SKILL.md",
    ".claude/plugins/installed_plugins.json",
    ".claude/plugins/known_marketplaces.json",
    ".claude/plugins/marketplaces/acme-market/.claude-plugin/marketplace.json",
    ".claude/plugins/cache/acme-market/commit-tools/1.2.0/.claude-plugin/plugin.json",
    ".claude/plugins/cache/acme-market/commit-tools/1.2.0/commands/commit.md",
    ".claude/plugins/cache/acme-market/commit-tools/1.2.0/.mcp.json",
    ".claude/plugins/cache/acme-market/review-kit/2.0.1/agents/critic.md",
    ".codex/config.toml",
    ".codex/prompts/draft.md",
    ".codex/plugins/cache/openai-curated/notes-kit/0.10.0/.codex-plugin/plugin.json",
    ".codex/plugins/cache/openai-curated/notes-kit/0.10.0/.mcp.json",
    ".codex/plugins/cache/openai-curated/notes-kit/0.10.0/skills/jot/SKILL.md",
    ".claude/skills/user-notes/SKILL.md",
    ".claude/commands/hello.md",
};
#define NSLOTS (sizeof SLOTS / sizeof *SLOTS)
#define SEP "\n@@@@\n"

static const uint8_t *find_sep(const uint8_t *p, const uint8_t *end)
{
    size_t n = strlen(SEP);
    for (; p + n <= end; p++)
        if (memcmp(p, SEP, n) == 0)
            return p;
    return end;
}

/* Writes part (with @HOME@ replaced) to root/rel, making its directories. */
static void put(const char *root, const char *rel, const uint8_t *part, size_t len)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    for (size_t i = 0; i < len;) {
        if (len - i >= 6 && memcmp(part + i, "@HOME@", 6) == 0) {
            cdsh_strbuf_append_str(&sb, root);
            i += 6;
        } else {
            cdsh_strbuf_append_char(&sb, (char)part[i++]);
        }
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    cdsh_fs_mkdir_p(path, 0700, NULL);
    *slash = '/';
    size_t n = 0;
    char *text = cdsh_strbuf_take(&sb, &n);
    if (text)
        cdsh_fs_write_atomic(path, text, n, 0600, NULL);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 20)
        return 0;
    /* On tmpfs when there is one: the tree's atomic writes fsync every file
     * and directory, which on a busy disk costs seconds per run. */
    char root[64];
    snprintf(root, sizeof root, "%s/cdsh-fuzz-import-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(root))
        return 0;
    const uint8_t *p = data, *end = data + size;
    for (size_t slot = 0; slot < NSLOTS && p <= end; slot++) {
        const uint8_t *q = find_sep(p, end);
        if (q > p)
            put(root, SLOTS[slot], p, (size_t)(q - p));
        p = q + strlen(SEP);
    }
    char claude_dir[4200], claude_json[4200], codex[4200], project[4200];
    snprintf(claude_dir, sizeof claude_dir, "%s/.claude", root);
    snprintf(claude_json, sizeof claude_json, "%s/.claude.json", root);
    snprintf(codex, sizeof codex, "%s/.codex", root);
    snprintf(project, sizeof project, "%s/work/app", root);
    const char *projects[] = {project, NULL};
    cdsh_mcpimport_roots roots = {.claude_dir = claude_dir,
                                  .claude_json = claude_json,
                                  .codex_home = codex,
                                  .projects = projects};
    cdsh_mcpimport_scan scan = {0};
    cdsh_error err = {0};
    if (cdsh_mcpimport_scan_run(&roots, NULL, NULL, &scan, &err) == 0) {
        json_t *rep = cdsh_mcpimport_report_new(
            scan.servers, cdsh_mcpimport_scan_commands_json(&scan), scan.skills, scan.notes);
        if (rep) {
            free(cdsh_mcpimport_report_text_dup(rep));
            free(json_dumps(rep, 0));
        }
        json_decref(rep);
    } else if (!err.code[0]) {
        abort();
    }
    cdsh_mcpimport_scan_deinit(&scan);
    cdsh_fs_remove_tree(root, NULL);
    return 0;
}
