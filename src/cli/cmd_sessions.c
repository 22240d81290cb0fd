/* cmd_sessions.c — `cdsh sessions list|show|rm|fork|rename`: a thin front end
 * over agent/session_store (human tables or --json for programs). `show`
 * only reads: it never repairs a session another process may be running. */
#include "cli/cmd_sessions.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/session_store.h"
#include "base/json.h"
#include "host/cli.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: cdsh sessions <action> [options]\n"
                 "\n"
                 "Stored agent sessions ($CDSH_HOME/sessions.db).\n"
                 "\n"
                 "Actions:\n"
                 "  list [--limit N] [--offset N]      sessions, most recently updated first\n"
                 "                                     (default limit 50, at most 1000)\n"
                 "  show <id> [--after SEQ] [--limit N]\n"
                 "                                     one session and its events with seq > SEQ\n"
                 "                                     (default 0), at most N (default 200)\n"
                 "  rm <id>...                         delete sessions and their events\n"
                 "  fork <id> [--at SEQ] [--title T]   copy the events up to SEQ (default: all)\n"
                 "                                     into a new session linked to <id>;\n"
                 "                                     the enabled plugins' participants carry\n"
                 "                                     their state over (an engine-bound\n"
                 "                                     session stays bound)\n"
                 "  rename <id> <title>                set the title\n"
                 "  fork ... --profile NAME            the profile whose plugins take part\n"
                 "                                     (default \"default\")\n"
                 "\n"
                 "Options:\n"
                 "  --json      print JSON for programs instead of text:\n"
                 "                list   {\"sessions\":[...],\"total\",\"offset\",\"limit\"}\n"
                 "                show   {\"session\":{...},\"events\":[...],\"hasMore\"}\n"
                 "                rm     {\"deleted\":[ids]}\n"
                 "                fork, rename   the session object\n"
                 "  -h, --help  show this help\n"
                 "\n"
                 "Exit status: 0 on success, 1 if a session is missing or the store fails,\n"
                 "2 on bad usage. Errors go to stderr as \"cdsh sessions: <CODE>: <message>\".\n"
                 "Schema, event types and crash repair: docs/sessions.md.\n");
}

typedef struct opts {
    bool json;
    const char *given[8]; /* action-specific options that were given, for checking */
    int n_given;
    int64_t limit, offset, after, at;
    const char *title;
    const char *profile; /* fork: whose plugins' participants run */
} opts;

static int fail(const cdsh_error *e)
{
    fprintf(stderr, "cdsh sessions: %s: %s\n", e->code[0] ? e->code : "ERROR", e->message);
    return 1;
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "cdsh sessions: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nRun `cdsh sessions --help` for usage.\n");
    return 2;
}

static bool parse_int(const char *text, int64_t min, int64_t max, int64_t *out)
{
    char *end;
    long long v = strtoll(text, &end, 10);
    if (!*text || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static void print_json(json_t *v)
{
    char *text = cdsh_json_dump_pretty_dup(v);
    if (text)
        fputs(text, stdout);
    free(text);
}

static const char *str_or(const json_t *obj, const char *key, const char *dflt)
{
    const char *v = json_string_value(json_object_get(obj, key));
    return v && *v ? v : dflt;
}

/* "2026-11-29T21:03:04.123Z" -> "2026-11-29 21:03" (or with seconds). */
static void short_time(const char *iso, char *out, size_t n, bool seconds)
{
    snprintf(out, n, "%.*s", seconds ? 19 : 16, iso ? iso : "");
    char *t = strchr(out, 'T');
    if (t)
        *t = ' ';
}

/* Copies text into out as one line: newlines and tabs become spaces, cut with "…". */
static void one_line(const char *text, char *out, size_t n)
{
    size_t j = 0, max = n - 4;
    for (const char *p = text ? text : ""; *p && j < max; p++)
        out[j++] = (*p == '\n' || *p == '\r' || *p == '\t') ? ' ' : *p;
    if (text && strlen(text) > max) {
        while (j > 0 && ((unsigned char)out[j - 1] & 0xC0) == 0x80)
            j--; /* do not cut a UTF-8 sequence */
        if (j > 0 && ((unsigned char)out[j - 1] & 0xC0) == 0xC0)
            j--;
        memcpy(out + j, "...", 3);
        j += 3;
    }
    out[j] = '\0';
}

static int cmd_list(cdsh_session_store *st, const opts *o)
{
    cdsh_error e = {0};
    int64_t total = 0;
    json_t *list = cdsh_session_store_list(st, o->offset, o->limit, &total, &e);
    if (!list)
        return fail(&e);
    if (o->json) {
        json_t *doc =
            json_pack("{s:O, s:I, s:I, s:I}", "sessions", list, "total", (json_int_t)total,
                      "offset", (json_int_t)o->offset, "limit", (json_int_t)o->limit);
        print_json(doc);
        json_decref(doc);
        json_decref(list);
        return 0;
    }
    if (json_array_size(list) == 0) {
        if (total == 0)
            printf("No sessions yet.\n");
        else
            printf("No sessions past offset %lld (there are %lld).\n", (long long)o->offset,
                   (long long)total);
        json_decref(list);
        return 0;
    }
    printf("%-24s  %-16s  %6s  %5s  %-20s  %s\n", "ID", "UPDATED (UTC)", "EVENTS", "TURNS", "MODEL",
           "TITLE");
    size_t i;
    json_t *s;
    json_array_foreach(list, i, s) {
        char when[32], title[64];
        short_time(str_or(s, "updatedAt", ""), when, sizeof when, false);
        one_line(str_or(s, "title", "(untitled)"), title, sizeof title);
        const char *open = json_is_integer(json_object_get(s, "openTurn")) ? " (open turn)" : "";
        printf("%-24s  %-16s  %6lld  %5lld  %-20s  %s%s\n", str_or(s, "id", "?"), when,
               (long long)json_integer_value(json_object_get(s, "eventCount")),
               (long long)json_integer_value(json_object_get(s, "lastTurn")),
               str_or(s, "model", "-"), title, open);
    }
    int64_t shown_to = o->offset + (int64_t)json_array_size(list);
    printf("%lld-%lld of %lld session%s", (long long)o->offset + 1, (long long)shown_to,
           (long long)total, total == 1 ? "" : "s");
    if (shown_to < total)
        printf("; next page: --offset %lld", (long long)shown_to);
    printf("\n");
    json_decref(list);
    return 0;
}

/* A one-line summary of an event's payload for people. */
static void summarize(const json_t *ev, char *out, size_t n)
{
    const char *type = str_or(ev, "type", "");
    const json_t *p = json_object_get(ev, "payload");
    char body[200];
    if (!json_is_object(p)) {
        snprintf(out, n, "[unreadable payload: %s]", str_or(ev, "payloadError", "?"));
        return;
    }
    if (strcmp(type, "user/message") == 0 || strcmp(type, "notice") == 0) {
        one_line(str_or(p, "text", ""), body, 100);
        if (strcmp(type, "notice") == 0)
            snprintf(out, n, "%s %s: %s", str_or(p, "level", "?"), str_or(p, "code", "-"), body);
        else
            snprintf(out, n, "%s", body);
    } else if (strcmp(type, "assistant/message") == 0) {
        /* "<text> [reasoning] calls: a, b" without leading spaces for missing parts. */
        one_line(str_or(p, "text", ""), body, 100);
        snprintf(out, n, "%s", body);
        if (str_or(p, "reasoning", NULL))
            snprintf(out + strlen(out), n - strlen(out), "%s[reasoning]", *out ? " " : "");
        size_t k;
        json_t *c;
        json_array_foreach(json_object_get(p, "toolCalls"), k, c) {
            snprintf(out + strlen(out), n - strlen(out), "%s%s",
                     k      ? ", "
                     : *out ? " calls: "
                            : "calls: ",
                     str_or(c, "name", "?"));
        }
    } else if (strcmp(type, "tool/call") == 0) {
        one_line(str_or(p, "arguments", ""), body, 80);
        snprintf(out, n, "%s %s %s", str_or(p, "callId", "?"), str_or(p, "name", "?"), body);
    } else if (strcmp(type, "tool/result") == 0) {
        const json_t *first = json_array_get(json_object_get(p, "content"), 0);
        one_line(str_or(first, "text", ""), body, 80);
        const char *code = str_or(json_object_get(p, "error"), "code", NULL);
        snprintf(out, n, "%s %s%s%s: %s", str_or(p, "callId", "?"),
                 json_is_true(json_object_get(p, "isError")) ? "error" : "ok", code ? " " : "",
                 code ? code : "", body);
    } else if (strcmp(type, "turn/end") == 0) {
        snprintf(out, n, "%s", str_or(p, "reason", "?"));
    } else if (strncmp(type, "command/", 8) == 0) {
        snprintf(out, n, "%s %s", str_or(p, "commandId", "?"),
                 str_or(p, strcmp(type, "command/run") == 0 ? "name" : "kind", ""));
    } else {
        out[0] = '\0';
    }
    if (json_is_true(json_object_get(p, "synthetic")))
        strncat(out, " (repair)", n - strlen(out) - 1);
}

static int cmd_show(cdsh_session_store *st, const char *id, const opts *o)
{
    cdsh_error e = {0};
    bool more = false;
    json_t *s = cdsh_session_store_info_dup(st, id, &e);
    json_t *events = s ? cdsh_session_store_events(st, id, o->after, o->limit, &more, &e) : NULL;
    if (!events) {
        json_decref(s);
        return fail(&e);
    }
    if (o->json) {
        json_t *doc = json_pack("{s:O, s:O, s:b}", "session", s, "events", events, "hasMore", more);
        print_json(doc);
        json_decref(doc);
        goto done;
    }
    char created[32], updated[32], title[200];
    short_time(str_or(s, "createdAt", ""), created, sizeof created, true);
    short_time(str_or(s, "updatedAt", ""), updated, sizeof updated, true);
    one_line(str_or(s, "title", "(untitled)"), title, sizeof title);
    printf("Session %s  %s\n", id, title);
    printf("  created  %s UTC   updated %s UTC\n", created, updated);
    printf("  model    %s/%s%s%s   agent %s\n", str_or(s, "provider", "-"), str_or(s, "model", "-"),
           json_is_string(json_object_get(s, "baseUrl")) ? " at " : "", str_or(s, "baseUrl", ""),
           str_or(s, "agent", "-"));
    if (json_is_integer(json_object_get(s, "forkSeq")))
        printf("  forked   from %s at event %lld\n", str_or(s, "parentId", "(deleted session)"),
               (long long)json_integer_value(json_object_get(s, "forkSeq")));
    printf("  events   %lld in %lld turn%s",
           (long long)json_integer_value(json_object_get(s, "eventCount")),
           (long long)json_integer_value(json_object_get(s, "lastTurn")),
           json_integer_value(json_object_get(s, "lastTurn")) == 1 ? "" : "s");
    if (json_is_integer(json_object_get(s, "openTurn")))
        printf("; turn %lld is open (running, or interrupted and not yet repaired)",
               (long long)json_integer_value(json_object_get(s, "openTurn")));
    printf("\n\n");
    if (json_array_size(events) == 0) {
        printf("  (no events after seq %lld)\n", (long long)o->after);
        goto done;
    }
    printf("  %5s %4s  %-18s %s\n", "SEQ", "TURN", "TYPE", "SUMMARY");
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) {
        char sum[400];
        summarize(ev, sum, sizeof sum);
        printf("  %5lld %4lld  %-18s %s\n",
               (long long)json_integer_value(json_object_get(ev, "seq")),
               (long long)json_integer_value(json_object_get(ev, "turn")), str_or(ev, "type", "?"),
               sum);
    }
    if (more) {
        json_t *last = json_array_get(events, json_array_size(events) - 1);
        printf("  ... more: --after %lld\n",
               (long long)json_integer_value(json_object_get(last, "seq")));
    }
done:
    json_decref(s);
    json_decref(events);
    return 0;
}

static int cmd_rm(cdsh_session_store *st, int n, char **ids, const opts *o)
{
    json_t *deleted = json_array();
    int status = 0;
    for (int i = 0; i < n; i++) {
        cdsh_error e = {0};
        if (cdsh_session_store_delete(st, ids[i], &e) != 0) {
            status = fail(&e);
            continue;
        }
        json_array_append_new(deleted, json_string(ids[i]));
        if (!o->json)
            printf("deleted %s\n", ids[i]);
    }
    if (o->json) {
        json_t *doc = json_pack("{s:O}", "deleted", deleted);
        print_json(doc);
        json_decref(doc);
    }
    json_decref(deleted);
    return status;
}

/* notes (may be NULL): what the fork participants said, shown with it. */
static int print_session_result(cdsh_session_store *st, const char *id, const opts *o,
                                const char *verb, const json_t *notes)
{
    cdsh_error e = {0};
    json_t *s = cdsh_session_store_info_dup(st, id, &e);
    if (!s)
        return fail(&e);
    if (notes && o->json)
        json_object_set(s, "notes", (json_t *)notes);
    size_t i;
    json_t *n;
    json_array_foreach(o->json ? NULL : notes, i, n) {
        fprintf(stderr, "cdsh sessions: %s\n", json_string_value(n));
    }
    if (o->json) {
        print_json(s);
    } else if (strcmp(verb, "forked") == 0) {
        printf("forked %s at event %lld into %s\n", str_or(s, "parentId", "?"),
               (long long)json_integer_value(json_object_get(s, "forkSeq")), id);
    } else {
        printf("%s %s: %s\n", verb, id, str_or(s, "title", ""));
    }
    json_decref(s);
    return 0;
}

int cdsh_cmd_sessions(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},         {"limit", required_argument, NULL, 'l'},
        {"offset", required_argument, NULL, 'o'}, {"after", required_argument, NULL, 'a'},
        {"at", required_argument, NULL, 't'},     {"title", required_argument, NULL, 'T'},
        {"profile", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    opts o = {.limit = -1};
    int c, opt_index = 0;
    optind = 1;
    /* "+" would stop at the action; permute instead so options may follow it. */
    while ((c = getopt_long(argc, argv, "h", longopts, &opt_index)) != -1) {
        if (c != 'j' && c != 'h' && c != '?' && o.n_given < 8)
            o.given[o.n_given++] = longopts[opt_index].name;
        switch (c) {
        case 'j': o.json = true; break;
        case 'l':
            if (!parse_int(optarg, 1, 10000, &o.limit))
                return usage_error("--limit wants a number from 1 to 10000, got '%s'", optarg);
            break;
        case 'o':
            if (!parse_int(optarg, 0, INT64_MAX, &o.offset))
                return usage_error("--offset wants a number >= 0, got '%s'", optarg);
            break;
        case 'a':
            if (!parse_int(optarg, 0, INT64_MAX, &o.after))
                return usage_error("--after wants a seq number >= 0, got '%s'", optarg);
            break;
        case 't':
            if (!parse_int(optarg, 1, INT64_MAX, &o.at))
                return usage_error("--at wants a seq number >= 1, got '%s'", optarg);
            break;
        case 'T': o.title = optarg; break;
        case 'P': o.profile = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    const char *action = argv[optind++];
    int nargs = argc - optind;
    char **args = argv + optind;
    int want_min = 0, want_max = 0;
    static const char *const allowed[][2] = {
        {"list", " limit offset "},
        {"show", " after limit "},
        {"fork", " at title profile "},
        {"rm", " "},
        {"rename", " "},
    };
    for (size_t a = 0; a < sizeof allowed / sizeof allowed[0]; a++) {
        if (strcmp(action, allowed[a][0]) != 0)
            continue;
        for (int g = 0; g < o.n_given; g++) {
            char word[32];
            snprintf(word, sizeof word, " %s ", o.given[g]);
            if (!strstr(allowed[a][1], word)) {
                fprintf(stderr, "cdsh sessions: --%s does not apply to '%s'\n", o.given[g], action);
                return 2;
            }
        }
    }
    if (strcmp(action, "list") == 0) {
        want_max = 0;
        if (o.limit > 1000)
            return usage_error("%s", "list --limit is at most 1000");
        if (o.limit < 0)
            o.limit = 50;
    } else if (strcmp(action, "show") == 0) {
        want_min = want_max = 1;
        if (o.limit < 0)
            o.limit = 200;
    } else if (strcmp(action, "rm") == 0) {
        want_min = 1;
        want_max = 1 << 20;
    } else if (strcmp(action, "fork") == 0) {
        want_min = want_max = 1;
    } else if (strcmp(action, "rename") == 0) {
        want_min = want_max = 2;
    } else {
        return usage_error("unknown action '%s' (list, show, rm, fork, rename)", action);
    }
    if (nargs < want_min)
        return usage_error("'%s' needs a session id", action);
    if (nargs > want_max)
        return usage_error("unexpected argument '%s'", args[want_max]);

    cdsh_error e = {0};
    cdsh_session_store *st = NULL;
    if (cdsh_session_store_open(cdsh_cli_home(), NULL, &st, &e) != 0)
        return fail(&e);
    int status = 0;
    if (strcmp(action, "list") == 0) {
        status = cmd_list(st, &o);
    } else if (strcmp(action, "show") == 0) {
        status = cmd_show(st, args[0], &o);
    } else if (strcmp(action, "rm") == 0) {
        status = cmd_rm(st, nargs, args, &o);
    } else if (strcmp(action, "fork") == 0) {
        /* The participants are the fork hooks of the profile's plugins. */
        char *new_id = NULL;
        json_t *notes = NULL;
        cdsh_host *host = NULL;
        cdsh_profile *profile = NULL;
        const void **hooks = NULL;
        int opened = cdsh_cli_host_open("sessions", o.profile, &host, &profile);
        cdsh_session_fork_env env = {.home = host ? cdsh_host_home(host) : NULL};
        if (opened != 0)
            status = 1;
        else if (!(hooks = cdsh_host_hooks_dup(host, CDSH_SESSION_FORK_HOOKS)))
            status = fail((cdsh_error_set(&e, CDSH_ENOMEM, "NO_MEMORY", "out of memory"), &e));
        else if (cdsh_session_store_fork_with(st, args[0], o.at, o.title,
                                              (const cdsh_session_fork_hook *const *)hooks, &env,
                                              &new_id, &notes, &e) != 0)
            status = fail(&e);
        else
            status = print_session_result(st, new_id, &o, "forked", notes);
        free(hooks);
        cdsh_host_free(host);
        cdsh_profile_free(profile);
        json_decref(notes);
        free(new_id);
    } else {
        if (cdsh_session_store_rename(st, args[0], args[1], &e) != 0)
            status = fail(&e);
        else
            status = print_session_result(st, args[0], &o, "renamed", NULL);
    }
    cdsh_session_store_close(st);
    return status;
}
