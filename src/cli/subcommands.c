/* subcommands.c — the `cdsh` subcommand table, usage text and suggestions. */
#include "cli/subcommands.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cmd_acp.h"
#include "cli/cmd_chat.h"
#include "cli/cmd_commands.h"
#include "cli/cmd_config.h"
#include "cli/cmd_exec.h"
#include "cli/cmd_run.h"
#include "cli/cmd_facade.h"
#include "cli/cmd_import.h"
#include "cli/cmd_mcp.h"
#include "cli/cmd_profile.h"
#include "cli/cmd_sessions.h"
#include "cli/cmd_skills.h"
#include "cli/cmd_tools.h"
#include "cli/cmd_tavern.h"
#include "cli/cmd_web.h"
#include "cli/cmd_xiangqi.h"

/* Order does not matter: --help sorts by name. Branches add lines here
 * concurrently, so .gitattributes merges this file with the union driver. */
const cdsh_subcommand cdsh_subcommands[] = {
    {"acp", "external coding agents over ACP: engines, probe, prompt, sessions", cdsh_cmd_acp},
    {"chat", "chat with the model in the terminal (streamed, /commands, Ctrl-C cancels)",
     cdsh_cmd_chat},
    {"commands", "list the slash commands the enabled plugins register", cdsh_cmd_commands},
    {"config", "show and edit plugin settings in a profile (list, get, set, enable...)",
     cdsh_cmd_config},
    {"exec", "run a slash command for a session: cdsh exec \"/cmd args\" --session ID",
     cdsh_cmd_exec},
    {"run", "run one agent turn headless: cdsh run \"<prompt>\" [--session ID] [--json]",
     cdsh_cmd_run},
    {"sessions", "list, show, delete, fork and rename stored agent sessions", cdsh_cmd_sessions},
    {"facade", "capability facade: analyze plugin tool surfaces, list declared capabilities",
     cdsh_cmd_facade},
    {"import", "scan Claude Code / Codex MCP servers and commands; enable them in a profile",
     cdsh_cmd_import},
    {"mcp", "serve cdsh's tools over MCP (stdio or HTTP); list and call any MCP server",
     cdsh_cmd_mcp},
    {"profile", "verify a profile in a temporary home: plugins, configs, collisions (--smoke)",
     cdsh_cmd_profile},
    {"skills", "list the skills the model can load, or show one", cdsh_cmd_skills},
    {"tools", "list the model-visible tools with their schema sizes", cdsh_cmd_tools},
    {"tavern", "import, inspect and export role-play cards, lorebooks, presets, personas, regex",
     cdsh_cmd_tavern},
    {"web", "start the local web UI and RPC gateway on 127.0.0.1 (the main job)", cdsh_cmd_web},
    {"xiangqi", "xiangqi (Chinese chess) engine tools: perft", cdsh_cmd_xiangqi},
    {NULL, NULL, NULL},
};

const cdsh_subcommand *cdsh_subcommand_find(const char *name)
{
    for (const cdsh_subcommand *c = cdsh_subcommands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

static int by_name(const void *a, const void *b)
{
    const cdsh_subcommand *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

void cdsh_cli_print_usage(FILE *out)
{
    fprintf(out,
            "cdsh %s — a C agent harness: host, xiangqi, tavern, facade, ACP and MCP import\n"
            "\n"
            "Usage: cdsh [--help | --version] <subcommand> [options]\n"
            "\n"
            "Subcommands:\n",
            CDSH_VERSION);
    size_t n = 0;
    while (cdsh_subcommands[n].name)
        n++;
    const cdsh_subcommand **sorted = malloc(n * sizeof *sorted);
    for (size_t i = 0; sorted && i < n; i++)
        sorted[i] = &cdsh_subcommands[i];
    if (sorted)
        qsort(sorted, n, sizeof *sorted, by_name);
    for (size_t i = 0; i < n; i++) {
        const cdsh_subcommand *c = sorted ? sorted[i] : &cdsh_subcommands[i];
        fprintf(out, "  %-12s %s\n", c->name, c->summary);
    }
    free(sorted);
    fprintf(out, "  %-12s %s\n", "help", "show this help, or `cdsh help <subcommand>` for one");
    fprintf(out, "\n"
                 "Global options:\n"
                 "  -h, --help     show this help\n"
                 "  -V, --version  print the version and exit\n"
                 "\n"
                 "Environment:\n"
                 "  CDSH_HOME          state directory (default ~/.cdsh)\n"
                 "  DEEPSEEK_API_KEY   key for the default model endpoint\n"
                 "  CDSH_BASE_URL      OpenAI-compatible endpoint to use instead\n"
                 "  CDSH_MODEL         model name at that endpoint\n"
                 "\n"
                 "Run `cdsh <subcommand> --help` for the options of one subcommand.\n");
}

/* Levenshtein distance, small strings only (subcommand names). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 31 || lb > 31)
        return 99;
    size_t row[32];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t prev = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cur = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = prev + cost;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            prev = cur;
        }
    }
    return row[lb];
}

const char *cdsh_subcommand_suggest(const char *name)
{
    const char *best = NULL;
    size_t best_d = 3; /* suggest only close matches */
    for (const cdsh_subcommand *c = cdsh_subcommands; c->name; c++) {
        size_t d = edit_distance(name, c->name);
        if (d < best_d || (strncmp(name, c->name, strlen(name)) == 0 && strlen(name) >= 2)) {
            best_d = d;
            best = c->name;
        }
    }
    return best;
}
