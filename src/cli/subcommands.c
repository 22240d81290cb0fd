/* subcommands.c — the `cdsh` subcommand table, usage text and suggestions.
 * The front end's own subcommands are the table below; a plugin's (`cdsh
 * tavern`, `cdsh xiangqi`...) are the `subcommands` table of its descriptor
 * (host/plugins.h), found by walking the descriptors main set with
 * cdsh_cli_host_set_plugins — so this file names no plugin, and a plugin's
 * subcommands work whether or not the profile enables the plugin. */
#include "cli/subcommands.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cmd_chat.h"
#include "cli/cmd_commands.h"
#include "cli/cmd_config.h"
#include "cli/cmd_exec.h"
#include "cli/cmd_mcp.h"
#include "cli/cmd_run.h"
#include "cli/cmd_sessions.h"
#include "cli/cmd_skills.h"
#include "cli/cmd_tools.h"
#include "cli/cmd_web.h"
#include "host/cli.h"

/* Order does not matter: --help sorts by name. */
static const cdsh_subcommand own[] = {
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
    {"mcp", "serve cdsh's tools over MCP (stdio or HTTP); list and call any MCP server",
     cdsh_cmd_mcp},
    {"skills", "list the skills the model can load, or show one", cdsh_cmd_skills},
    {"tools", "list the model-visible tools with their schema sizes", cdsh_cmd_tools},
    {"web", "start the local web UI and RPC gateway on 127.0.0.1 (the main job)", cdsh_cmd_web},
    {NULL, NULL, NULL},
};

/* Calls fn for every subcommand (own first, then each descriptor's in table
 * order) until it returns true; returns that row or NULL. */
static const cdsh_subcommand *walk(bool (*fn)(void *, const cdsh_subcommand *), void *ud)
{
    for (const cdsh_subcommand *c = own; c->name; c++)
        if (fn(ud, c))
            return c;
    for (const cdsh_plugin_def *const *d = cdsh_cli_host_plugins(); *d; d++)
        for (const cdsh_subcommand *c = (*d)->subcommands; c && c->name; c++)
            if (fn(ud, c))
                return c;
    return NULL;
}

static bool named(void *ud, const cdsh_subcommand *c)
{
    return strcmp(c->name, ud) == 0;
}

const cdsh_subcommand *cdsh_subcommand_find(const char *name)
{
    return name ? walk(named, (void *)name) : NULL;
}

typedef struct collect {
    const cdsh_subcommand **rows;
    size_t n, cap;
} collect;

static bool gather(void *ud, const cdsh_subcommand *c)
{
    collect *k = ud;
    if (k->rows && k->n < k->cap)
        k->rows[k->n] = c;
    k->n++;
    return false;
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
    collect k = {0};
    walk(gather, &k);
    k.cap = k.n;
    k.n = 0;
    k.rows = malloc((k.cap ? k.cap : 1) * sizeof *k.rows);
    if (!k.rows)
        return;
    walk(gather, &k);
    qsort(k.rows, k.n, sizeof *k.rows, by_name);
    for (size_t i = 0; i < k.n; i++)
        fprintf(out, "  %-12s %s\n", k.rows[i]->name, k.rows[i]->summary);
    free(k.rows);
    fprintf(out, "  %-12s %s\n", "help", "show this help, or `cdsh help <subcommand>` for one");
    fprintf(out, "\n"
                 "Role-play (the tavern plugin, on by default):\n"
                 "  `cdsh web` (or `make run`), open the printed URL, then the tavern panel:\n"
                 "  import a SillyTavern card (PNG, JSON or CHARX), bind it to a chat and\n"
                 "  talk; the greeting opens the story. Regenerate, edit, roll back and\n"
                 "  branch per turn; lorebooks, presets, personas and memories in the panel.\n"
                 "  In the terminal: `cdsh tavern import CARD`, `cdsh tavern preview`.\n"
                 "  Sessions with no card bound see none of its tools.\n"
                 "\n"
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

typedef struct closest {
    const char *name, *best;
    size_t best_d;
} closest;

static bool consider(void *ud, const cdsh_subcommand *c)
{
    closest *k = ud;
    size_t d = edit_distance(k->name, c->name);
    if (d < k->best_d || (strncmp(k->name, c->name, strlen(k->name)) == 0 && strlen(k->name) >= 2)) {
        k->best_d = d;
        k->best = c->name;
    }
    return false;
}

const char *cdsh_subcommand_suggest(const char *name)
{
    closest k = {name, NULL, 3}; /* suggest only close matches */
    walk(consider, &k);
    return k.best;
}
