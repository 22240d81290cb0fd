/* cmd_acp.c — `cdsh acp <sub>` dispatch plus the listing sub-commands
 * (engines, sessions). Probe and prompt live in cmd_acp_probe.c and
 * cmd_acp_prompt.c; all business logic is in plugins/acp. */
#include "plugins/acp/cmd_acp.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "base/json.h"
#include "host/cli.h"
#include "host/cli_group.h"
#include "plugins/acp/cmd_acp_probe.h"
#include "plugins/acp/cmd_acp_prompt.h"
#include "plugins/acp/engine.h"
#include "plugins/acp/service.h"
#include "plugins/acp/state.h"

static int cmd_engines(int argc, char **argv);
static int cmd_sessions(int argc, char **argv);

static const cdsh_subcommand subs[] = {
    {"engines", "list engines: resolved command, enabled, health", cmd_engines},
    {"probe", "try-connect an engine and write an evidence record", cdsh_cmd_acp_probe},
    {"prompt", "send one message to an engine and show its streamed reply", cdsh_cmd_acp_prompt},
    {"sessions", "list cdsh sessions bound to engines, or an engine's own (--remote)",
     cmd_sessions},
    {NULL, NULL, NULL},
};

static const cdsh_cli_group group = {
    .name = "acp",
    .about = "External coding agents over the Agent Client Protocol (ACP).\n"
             "Engines are builtin rows plus $CDSH_HOME/multi-acp/engines.json.\n",
    .subs = subs,
};

static int cmd_acp(int argc, char **argv)
{
    return cdsh_cli_group_run(&group, argc, argv);
}

/* Display width of UTF-8 text in terminal columns (wide characters count
 * two, combining marks zero); invalid bytes count one each. */
static size_t display_width(const char *s)
{
    size_t w = 0;
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)(s ? s : "");
    while (*p) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate(p, -1, &cp);
        if (n <= 0) {
            w++;
            p++;
            continue;
        }
        int cw = utf8proc_charwidth(cp);
        w += cw > 0 ? (size_t)cw : 0;
        p += n;
    }
    return w;
}

/* Prints s then pads it with spaces to width columns (plus one separator). */
static void print_cell(const char *s, size_t width)
{
    size_t w = display_width(s);
    fputs(s, stdout);
    for (; w < width + 1; w++)
        fputc(' ', stdout);
}

enum { COL_ID, COL_ENABLED, COL_HEALTH, COL_LAST, COL_LATENCY, COL_COMMAND, NCOLS };

/* One row's cells (borrowed strings, lat written into latbuf). */
static void engine_cells(const json_t *row, const char *cells[NCOLS], char *latbuf, size_t size)
{
    json_t *h = json_object_get(row, "health");
    json_t *r = json_object_get(row, "resolved");
    snprintf(latbuf, size, "-");
    if (json_is_integer(json_object_get(h, "latencyMs")))
        snprintf(latbuf, size, "%lldms",
                 (long long)json_integer_value(json_object_get(h, "latencyMs")));
    const char *status = json_string_value(json_object_get(h, "status"));
    const char *last = json_string_value(json_object_get(h, "lastCheckAt"));
    cells[COL_ID] = json_string_value(json_object_get(row, "id"));
    cells[COL_ENABLED] = json_is_true(json_object_get(row, "enabled")) ? "yes" : "no";
    cells[COL_HEALTH] = status ? status : "unknown";
    cells[COL_LAST] = last ? last : "-";
    cells[COL_LATENCY] = latbuf;
    cells[COL_COMMAND] = json_is_true(json_object_get(r, "found"))
                             ? json_string_value(json_object_get(r, "path"))
                             : "(not found)";
    for (int c = 0; c < NCOLS; c++)
        if (!cells[c])
            cells[c] = "-";
}

/* The engines table: every column as wide as its widest cell (measured in
 * display columns, so long ids and wide characters keep it aligned). */
static void print_table(const json_t *engines)
{
    static const char *const heads[NCOLS] = {"ENGINE",     "ENABLED", "HEALTH",
                                             "LAST CHECK", "LATENCY", "COMMAND"};
    size_t width[NCOLS];
    for (int c = 0; c < NCOLS; c++)
        width[c] = display_width(heads[c]);
    size_t i;
    json_t *row;
    const char *cells[NCOLS];
    char lat[32];
    json_array_foreach(engines, i, row) {
        engine_cells(row, cells, lat, sizeof lat);
        for (int c = 0; c < NCOLS; c++)
            if (display_width(cells[c]) > width[c])
                width[c] = display_width(cells[c]);
    }
    for (int c = 0; c < NCOLS - 1; c++)
        print_cell(heads[c], width[c]);
    printf("%s\n", heads[NCOLS - 1]);
    json_array_foreach(engines, i, row) {
        engine_cells(row, cells, lat, sizeof lat);
        for (int c = 0; c < NCOLS - 1; c++)
            print_cell(cells[c], width[c]);
        printf("%s\n", cells[NCOLS - 1]);
        const char *herr =
            json_string_value(json_object_get(json_object_get(row, "health"), "error"));
        if (herr) {
            print_cell("", width[COL_ID]);
            printf("last error: %s\n", herr);
        }
    }
}

static int cmd_engines(int argc, char **argv)
{
    bool as_json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            as_json = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("Usage: cdsh acp engines [--json]\n\nLists every engine (builtin and "
                   "engines.json) with its resolved command, enabled flag and health.\n");
            return 0;
        } else {
            fprintf(stderr, "cdsh acp engines: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    json_t *engines = NULL, *diags = NULL;
    cdsh_error err = {0};
    if (cdsh_acp_state_engines_listing(cdsh_cli_home(), &engines, &diags, &err) < 0) {
        fprintf(stderr, "cdsh acp engines: %s\n", err.message);
        return 1;
    }
    size_t i;
    json_t *row;
    if (as_json) {
        json_t *out = json_pack("{s:O,s:O}", "engines", engines, "diagnostics", diags);
        char *text = cdsh_json_dump_pretty_dup(out);
        fputs(text ? text : "{}\n", stdout);
        free(text);
        json_decref(out);
    } else {
        print_table(engines);
    }
    json_array_foreach(diags, i, row) {
        fprintf(stderr, "cdsh acp engines: %s: %s\n",
                json_string_value(json_object_get(row, "source")),
                json_string_value(json_object_get(row, "message")));
    }
    json_decref(engines);
    json_decref(diags);
    return 0;
}

static void print_json_out(const json_t *v)
{
    char *text = cdsh_json_dump_pretty_dup(v);
    fputs(text ? text : "{}\n", stdout);
    free(text);
}

/* `--remote ENGINE`: the agent's own sessions (session/list). */
static int list_remote(const char *engine, const char *cwd, bool as_json)
{
    char abs[PATH_MAX];
    if (cwd && !realpath(cwd, abs)) {
        fprintf(stderr, "cdsh acp sessions: --cwd %s: %s\n", cwd, strerror(errno));
        return 1;
    }
    cdsh_error err = {0};
    cdsh_acp_service *svc = cdsh_acp_service_new(cdsh_cli_home(), NULL, &err);
    json_t *out = NULL;
    int rc = svc ? cdsh_acp_service_list_remote(svc, engine, cwd ? abs : NULL, &out, &err) : err.rc;
    cdsh_acp_service_free(svc); /* disposes the engine process */
    if (rc < 0) {
        fprintf(stderr, "cdsh acp sessions: %s\n", err.message);
        return 1;
    }
    if (as_json) {
        print_json_out(out);
    } else {
        printf("%-36s %-24s %-14s %-30s %s\n", "ACP SESSION", "UPDATED", "CDSH SESSION", "TITLE",
               "CWD");
        size_t i;
        json_t *info;
        json_array_foreach(json_object_get(out, "sessions"), i, info) {
            const char *title = json_string_value(json_object_get(info, "title"));
            const char *upd = json_string_value(json_object_get(info, "updatedAt"));
            const char *bound = json_string_value(json_object_get(info, "cdshSessionId"));
            char cut[64];
            printf("%-36s %-24s %-14s %-30s %s\n",
                   json_string_value(json_object_get(info, "sessionId")), upd ? upd : "-",
                   bound ? bound : "-", title ? cdsh_cli_summary(title, cut, sizeof cut, 30) : "-",
                   json_string_value(json_object_get(info, "cwd")));
        }
        if (json_is_true(json_object_get(out, "truncated")))
            printf("(more sessions than %d pages; narrow with --cwd)\n", CDSH_ACP_LIST_MAX_PAGES);
    }
    json_decref(out);
    return 0;
}

/* Sub-commands (argv[0] is the sub-command name). */
static int cmd_sessions(int argc, char **argv)
{
    bool as_json = false;
    const char *remote = NULL, *cwd = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            as_json = true;
        } else if (strcmp(argv[i], "--remote") == 0 && i + 1 < argc) {
            remote = argv[++i];
        } else if (strcmp(argv[i], "--cwd") == 0 && i + 1 < argc) {
            cwd = argv[++i];
        } else {
            bool help = strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0;
            fprintf(help ? stdout : stderr,
                    "Usage: cdsh acp sessions [--json]\n"
                    "       cdsh acp sessions --remote ENGINE [--cwd DIR] [--json]\n\n"
                    "Without --remote: the cdsh sessions bound to engines (sessions.json).\n"
                    "With --remote: the engine's own sessions (session/list, every page), in DIR\n"
                    "only with --cwd, each with the cdsh session bound to it, if any.\n");
            return help ? 0 : 2;
        }
    }
    if (cwd && !remote) {
        fprintf(stderr, "cdsh acp sessions: --cwd needs --remote ENGINE\n");
        return 2;
    }
    if (remote)
        return list_remote(remote, cwd, as_json);
    json_t *sessions = NULL;
    cdsh_error err = {0};
    if (cdsh_acp_state_sessions_dup(cdsh_cli_home(), &sessions, &err) < 0) {
        fprintf(stderr, "cdsh acp sessions: %s\n", err.message);
        return 1;
    }
    if (as_json) {
        print_json_out(sessions);
    } else {
        const char *k;
        json_t *v;
        json_object_foreach(sessions, k, v) {
            const char *acp = json_string_value(json_object_get(v, "acpSessionId"));
            const char *used = json_string_value(json_object_get(v, "lastUsedAt"));
            const char *from = json_string_value(json_object_get(v, "forkedFrom"));
            printf("%s  engine=%s  acp=%s  lastUsed=%s%s%s%s\n", k,
                   json_string_value(json_object_get(v, "engineId")), acp ? acp : "-",
                   used ? used : "-",
                   json_is_string(json_object_get(v, "lockedEngineId")) ? "  (engine locked)" : "",
                   from ? "  forkedFrom=" : "", from ? from : "");
        }
    }
    json_decref(sessions);
    return 0;
}

const cdsh_subcommand cdsh_acp_subcommands[] = {
    {"acp", "external coding agents over ACP: engines, probe, prompt, sessions", cmd_acp},
    {NULL, NULL, NULL},
};
