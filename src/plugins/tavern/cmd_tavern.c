/* cmd_tavern.c — `cdsh tavern ...`: argument parsing and output shaping over
 * the tavern store (src/plugins/tavern/store.h) and, for the library edits
 * (save, delete), the tavern service's methods. No asset logic lives here. */
#include "plugins/tavern/cmd_tavern.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/json.h"
#include "host/cli.h"
#include "plugins/tavern/card.h"
#include "plugins/tavern/cmd_tavern_preview.h"
#include "plugins/tavern/png.h"
#include "plugins/tavern/service.h"
#include "plugins/tavern/store.h"

static void usage(FILE *out)
{
    fprintf(
        out,
        "Usage: cdsh tavern <command> [options]\n"
        "\n"
        "Manage role-play assets under $CDSH_HOME/tavern/.\n"
        "\n"
        "Character cards (PNG with chara/ccv3 chunks, V1/V2/V3 JSON, CHARX):\n"
        "  inspect FILE [--json]                       show what a card holds; writes nothing\n"
        "  import FILE [--with-book|--without-book] [--json]\n"
        "                                              import as a new card (the choice is\n"
        "                                              required when the card embeds a lorebook)\n"
        "  list [--json]                               list imported cards\n"
        "  export CARD_ID (--png|--json) -o FILE       write the card back out (-o -: stdout)\n"
        "  delete CARD_ID [--json]                     remove an imported card\n"
        "\n"
        "Library (KIND is lorebook, preset or persona):\n"
        "  KIND import FILE [--json]                   add a SillyTavern JSON file\n"
        "  KIND list [--json]                          list stored items (--json: with their\n"
        "                                              revision, \"tag\")\n"
        "  KIND export ID -o FILE                      write an item back out as JSON\n"
        "                                              (lorebook ID card:CARD_ID = a card's book)\n"
        "  KIND save FILE [--id ID] [--expect REV] [--json]\n"
        "                                              store FILE as a new item, or replace item\n"
        "                                              ID; --expect REV refuses the write when ID\n"
        "                                              changed since revision REV was read.\n"
        "                                              FILE: a lorebook {entries, name?}, a\n"
        "                                              preset object, or a persona {name,\n"
        "                                              description?, avatar?, lorebookId?}\n"
        "  KIND delete ID [--json]                     remove an item no session or persona uses\n"
        "\n"
        "Global regex rules:\n"
        "  regex import FILE [--json]                  add ST regex scripts or internal rules\n"
        "  regex list [--json]                         list the rules\n"
        "  regex export -o FILE                        write the rules as JSON\n"
        "  regex save FILE [--expect REV] [--json]     replace ALL rules with FILE's list (or\n"
        "                                              its \"rules\"); every rule is checked and\n"
        "                                              compiled first, nothing is written on "
        "error\n"
        "\n"
        "Prompt engine:\n"
        "  preview CARD_ID [--chat FILE] [--json]      standing segment, turn context,\n"
        "                                              simulated messages, budgets, trigger log\n"
        "\n"
        "Every command accepts -h/--help. Exit status: 0 ok, 1 failed (the message starts\n"
        "with the code: bad-request names the field, revision-conflict gives both\n"
        "revisions, in-use lists the sessions and personas using the item, not-found),\n"
        "2 usage error. --json prints {ok:false, code, message} on failure.\n");
}

typedef struct opts {
    bool json, with_book, without_book, png, as_json, help;
    const char *output, *id, *expect;
    int nargs;
    const char *args[4];
} opts;

static int parse(int argc, char **argv, const char *cmd, opts *o)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"with-book", no_argument, NULL, 'w'},
        {"without-book", no_argument, NULL, 'W'},
        {"png", no_argument, NULL, 'p'},
        {"output", required_argument, NULL, 'o'},
        {"id", required_argument, NULL, 'i'},
        {"expect", required_argument, NULL, 'e'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    optind = 1;
    opterr = 0;
    int c;
    /* --json means "JSON output" everywhere but export, where it picks the format. */
    while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': o->json = true; break;
        case 'w': o->with_book = true; break;
        case 'W': o->without_book = true; break;
        case 'p': o->png = true; break;
        case 'o': o->output = optarg; break;
        case 'i': o->id = optarg; break;
        case 'e': o->expect = optarg; break;
        case 'h': o->help = true; break;
        default:
            fprintf(stderr, "cdsh tavern %s: unknown option '%s'\n", cmd, argv[optind - 1]);
            return 2;
        }
    }
    for (int i = optind; i < argc; i++) {
        if (o->nargs == 4) {
            fprintf(stderr, "cdsh tavern %s: too many arguments\n", cmd);
            return 2;
        }
        o->args[o->nargs++] = argv[i];
    }
    return 0;
}

static void print_json(const json_t *v)
{
    char *s = cdsh_json_dump_pretty_dup(v);
    fputs(s ? s : "null\n", stdout);
    free(s);
}

static int fail(const opts *o, const cdsh_error *err)
{
    const char *code = err->code[0] ? err->code : "ERROR";
    if (o->json) {
        json_t *j = json_pack("{s:b, s:s, s:s}", "ok", 0, "code", code, "message", err->message);
        print_json(j);
        json_decref(j);
    } else {
        fprintf(stderr, "cdsh tavern: %s: %s\n", code, err->message);
    }
    return 1;
}

static int ok_json(json_t *v)
{
    json_t *out = json_object();
    json_object_set_new(out, "ok", json_true());
    if (json_is_object(v))
        json_object_update(out, v);
    print_json(out);
    json_decref(out);
    return 0;
}

static int want_args(const opts *o, const char *cmd, int n, const char *what)
{
    if (o->nargs != n) {
        fprintf(stderr, "cdsh tavern %s: expected %s (see `cdsh tavern --help`)\n", cmd, what);
        return 2;
    }
    return 0;
}

static int read_input(const char *path, char **data, size_t *len, cdsh_error *err)
{
    int rc = cdsh_fs_read_file(path, CDSH_TAVERN_PNG_MAX, data, len, err);
    if (rc == CDSH_ETOOBIG)
        return cdsh_error_set(err, rc, "CARD_TOO_BIG", "%s is larger than 32 MiB", path);
    return rc;
}

static bool to_stdout(const char *path)
{
    return path && strcmp(path, "-") == 0;
}

/* "-o -" writes to stdout (then nothing else is printed there). */
static int write_output(const char *path, const void *data, size_t len, cdsh_error *err)
{
    if (!to_stdout(path))
        return cdsh_fs_write_atomic(path, data, len, 0644, err);
    if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0)
        return cdsh_error_set(err, CDSH_EIO, "WRITE_FAILED", "cannot write to stdout");
    return 0;
}

static int open_store(cdsh_tavern_store **s, cdsh_error *err)
{
    return cdsh_tavern_store_open(cdsh_cli_home(), NULL, s, err);
}

/* ---- cards ------------------------------------------------------------------------ */

static int cmd_inspect(const opts *o)
{
    int r = want_args(o, "inspect", 1, "one FILE");
    if (r)
        return r;
    cdsh_error err = {0};
    char *data = NULL;
    size_t len = 0;
    cdsh_tavern_card *card = NULL;
    if (read_input(o->args[0], &data, &len, &err) < 0 ||
        cdsh_tavern_card_parse((const uint8_t *)data, len, &card, &err) < 0) {
        free(data);
        return fail(o, &err);
    }
    free(data);
    json_t *info = cdsh_tavern_card_inspect_dup(card);
    cdsh_tavern_card_free(card);
    if (o->json) {
        ok_json(info);
    } else {
        printf("name:              %s\n", json_string_value(json_object_get(info, "name")));
        printf("spec:              %s\n", json_string_value(json_object_get(info, "spec")));
        printf("avatar:            %s\n",
               json_is_true(json_object_get(info, "hasAvatar")) ? "yes" : "no");
        if (json_is_true(json_object_get(info, "hasCharacterBook")))
            printf("embedded lorebook: %s (%lld entries)\n",
                   json_string_value(json_object_get(info, "characterBookName")),
                   (long long)json_integer_value(json_object_get(info, "entryCount")));
        else
            printf("embedded lorebook: none\n");
        printf("regex scripts:     %lld\n",
               (long long)json_integer_value(json_object_get(info, "regexScripts")));
        printf("depth prompt:      %s\n",
               json_is_true(json_object_get(info, "hasDepthPrompt")) ? "yes" : "no");
    }
    json_decref(info);
    return 0;
}

static int cmd_import(const opts *o)
{
    int r = want_args(o, "import", 1, "one FILE");
    if (r)
        return r;
    if (o->with_book && o->without_book) {
        fprintf(stderr, "cdsh tavern import: --with-book and --without-book exclude each other\n");
        return 2;
    }
    cdsh_error err = {0};
    char *data = NULL;
    size_t len = 0;
    cdsh_tavern_store *s = NULL;
    json_t *res = NULL;
    cdsh_tavern_book_choice choice = o->with_book      ? CDSH_TAVERN_BOOK_IMPORT
                                     : o->without_book ? CDSH_TAVERN_BOOK_DISCARD
                                                       : CDSH_TAVERN_BOOK_ASK;
    int rc = read_input(o->args[0], &data, &len, &err);
    if (rc == 0)
        rc = open_store(&s, &err);
    if (rc == 0)
        rc = cdsh_tavern_store_import_card(s, (const uint8_t *)data, len, choice, &res, &err);
    free(data);
    cdsh_tavern_store_free(s);
    if (rc < 0)
        return fail(o, &err);
    if (o->json)
        ok_json(res);
    else if (json_is_true(json_object_get(res, "bookImported")))
        printf("imported \"%s\" as %s (lorebook with %lld entries)\n",
               json_string_value(json_object_get(res, "name")),
               json_string_value(json_object_get(res, "cardId")),
               (long long)json_integer_value(json_object_get(res, "bookEntries")));
    else
        printf("imported \"%s\" as %s\n", json_string_value(json_object_get(res, "name")),
               json_string_value(json_object_get(res, "cardId")));
    json_decref(res);
    return 0;
}

static int cmd_list(const opts *o)
{
    int r = want_args(o, "list", 0, "no arguments");
    if (r)
        return r;
    cdsh_error err = {0};
    cdsh_tavern_store *s = NULL;
    json_t *cards = NULL;
    int rc = open_store(&s, &err);
    if (rc == 0)
        rc = cdsh_tavern_store_list_cards(s, &cards, &err);
    cdsh_tavern_store_free(s);
    if (rc < 0)
        return fail(o, &err);
    if (o->json) {
        json_t *w = json_pack("{s:o}", "cards", cards);
        ok_json(w);
        json_decref(w);
        return 0;
    }
    if (json_array_size(cards) == 0)
        printf("no cards imported yet (cdsh tavern import FILE)\n");
    size_t i;
    json_t *c;
    json_array_foreach(cards, i, c) {
        long long n = (long long)json_integer_value(json_object_get(c, "bookEntries"));
        printf("%-34s %s", json_string_value(json_object_get(c, "cardId")),
               json_string_value(json_object_get(c, "name")));
        if (n)
            printf("  [lorebook: %lld entries]", n);
        printf("\n");
    }
    json_decref(cards);
    return 0;
}

static int cmd_export(const opts *o)
{
    int r = want_args(o, "export", 1, "one CARD_ID");
    if (r)
        return r;
    if (o->png == o->json || !o->output) {
        fprintf(stderr, "cdsh tavern export: give exactly one of --png or --json, and -o FILE\n");
        return 2;
    }
    cdsh_error err = {0};
    cdsh_tavern_store *s = NULL;
    uint8_t *bytes = NULL;
    size_t len = 0;
    int rc = open_store(&s, &err);
    if (rc == 0)
        rc = cdsh_tavern_store_export_card(s, o->args[0], o->png, &bytes, &len, &err);
    if (rc == 0)
        rc = write_output(o->output, bytes, len, &err);
    free(bytes);
    cdsh_tavern_store_free(s);
    opts plain = *o;
    plain.json = false;
    if (rc < 0)
        return fail(&plain, &err);
    if (!to_stdout(o->output))
        printf("wrote %s (%zu bytes)\n", o->output, len);
    return 0;
}

static int cmd_delete(const opts *o)
{
    int r = want_args(o, "delete", 1, "one CARD_ID");
    if (r)
        return r;
    cdsh_error err = {0};
    cdsh_tavern_store *s = NULL;
    int rc = open_store(&s, &err);
    if (rc == 0)
        rc = cdsh_tavern_store_delete_card(s, o->args[0], &err);
    cdsh_tavern_store_free(s);
    if (rc < 0)
        return fail(o, &err);
    if (o->json) {
        json_t *j = json_pack("{s:s}", "cardId", o->args[0]);
        ok_json(j);
        json_decref(j);
    } else {
        printf("deleted %s\n", o->args[0]);
    }
    return 0;
}

/* Common end of a library command: frees the store, prints the result (or the
 * error) and gives the exit status. Takes res. */
static int finish(const opts *o, cdsh_tavern_store *s, int rc, const cdsh_error *err, json_t *res)
{
    cdsh_tavern_store_free(s);
    if (rc < 0) {
        json_decref(res);
        return fail(o, err);
    }
    if (o->json)
        ok_json(res);
    json_decref(res);
    return 0;
}

static int write_json_file(const char *path, const json_t *v, cdsh_error *err)
{
    char *text = cdsh_json_dump_pretty_dup(v);
    int rc = text ? write_output(path, text, strlen(text), err)
                  : cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot serialise");
    free(text);
    return rc;
}

/* ---- library and regex --------------------------------------------------------------- */

/* Runs a tavern service method (the code the web UI's /tavern calls reach)
 * on $CDSH_HOME/tavern. Takes payload; *value owned. */
static int call_service_take(const char *method, json_t *payload, json_t **value, cdsh_error *err)
{
    cdsh_tavern_service *svc = NULL;
    int rc = cdsh_tavern_service_new(cdsh_cli_home(), NULL, NULL, &svc, err);
    if (rc == 0)
        rc = cdsh_tavern_service_call(svc, method, payload, value, err);
    cdsh_tavern_service_free(svc);
    json_decref(payload);
    return rc;
}

/* FILE parsed as JSON (owned), or NULL with err (code bad-json). */
static json_t *read_json_file(const char *path, cdsh_error *err)
{
    char *data = NULL;
    size_t len = 0;
    if (read_input(path, &data, &len, err) < 0)
        return NULL;
    json_error_t je;
    json_t *v = json_loadb(data, len, 0, &je);
    free(data);
    if (!v)
        cdsh_error_set(err, CDSH_EINVAL, "bad-json", "%s is not JSON (line %d: %s)", path, je.line,
                       je.text);
    return v;
}

/* The save method's payload for `kind` from FILE's value (taken), plus
 * --id and --expect. */
static json_t *save_payload(cdsh_tavern_kind kind, json_t *file_take, const opts *o)
{
    json_t *p;
    if (kind == CDSH_TAVERN_PERSONA && json_is_object(file_take)) {
        /* A persona file is the method's own payload; an exported persona
         * names its book "lorebook". */
        p = file_take;
        json_t *lb = json_object_get(p, "lorebook");
        if (lb && !json_object_get(p, "lorebookId"))
            json_object_set(p, "lorebookId", lb);
        json_object_del(p, "lorebook");
    } else if (kind == CDSH_TAVERN_PERSONA) {
        json_decref(file_take);
        p = json_object(); /* the service says which field is missing */
    } else {
        p = json_pack("{s:o}", kind == CDSH_TAVERN_LOREBOOK ? "book" : "preset", file_take);
    }
    if (o->id)
        json_object_set_new(p, "id", json_string(o->id));
    else
        json_object_del(p, "id");
    if (o->expect)
        json_object_set_new(p, "expectedRevision", json_string(o->expect));
    return p;
}

/* The one FILE argument of a save, parsed; NULL with *status the exit
 * status (usage error, or the failure printed). */
static json_t *save_file(const opts *o, const char *cmd, int *status)
{
    cdsh_error err = {0};
    json_t *file = NULL;
    if (!(*status = want_args(o, cmd, 1, "one FILE")) && !(file = read_json_file(o->args[0], &err)))
        *status = fail(o, &err);
    return file;
}

static int cmd_save(cdsh_tavern_kind kind, const char *kname, const opts *o)
{
    static const char *const SAVE[] = {"saveLorebook", "savePreset", "savePersona"};
    int rc = 0;
    json_t *res = NULL, *file = save_file(o, "save", &rc);
    if (!file)
        return rc;
    cdsh_error err = {0};
    rc = call_service_take(SAVE[kind], save_payload(kind, file, o), &res, &err);
    if (rc == 0 && !o->json) {
        printf("saved %s \"%s\" as %s (revision %s", kname,
               json_string_value(json_object_get(res, "name")),
               json_string_value(json_object_get(res, "id")),
               json_string_value(json_object_get(res, "revision")));
        if (kind == CDSH_TAVERN_LOREBOOK)
            printf(", %lld entries",
                   (long long)json_integer_value(json_object_get(res, "entries")));
        printf(")\n");
    }
    return finish(o, NULL, rc, &err, res);
}

static int cmd_remove(cdsh_tavern_kind kind, const char *kname, const opts *o)
{
    static const char *const DELETE[] = {"deleteLorebook", "deletePreset", "deletePersona"};
    int rc = want_args(o, "delete", 1, "one ID");
    if (rc)
        return rc;
    cdsh_error err = {0};
    json_t *res = NULL;
    rc = call_service_take(DELETE[kind], json_pack("{s:s}", "id", o->args[0]), &res, &err);
    if (rc == 0 && !o->json)
        printf("deleted %s %s\n", kname, o->args[0]);
    return finish(o, NULL, rc, &err, res);
}

static int cmd_regex_save(const opts *o)
{
    int rc = 0;
    json_t *res = NULL, *file = save_file(o, "regex save", &rc);
    if (!file)
        return rc;
    cdsh_error err = {0};
    json_t *rules = json_is_object(file) ? json_object_get(file, "rules") : file;
    json_t *payload = json_pack("{s:O?}", "rules", rules);
    if (o->expect)
        json_object_set_new(payload, "expectedRevision", json_string(o->expect));
    json_decref(file);
    rc = call_service_take("saveRegexRules", payload, &res, &err);
    if (rc == 0 && !o->json)
        printf("saved %lld regex rules (revision %s)\n",
               (long long)json_integer_value(json_object_get(res, "total")),
               json_string_value(json_object_get(res, "revision")));
    return finish(o, NULL, rc, &err, res);
}

static char *stem_dup(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char *s = strdup(b);
    char *dot = s ? strrchr(s, '.') : NULL;
    if (dot && dot != s)
        *dot = '\0';
    return s;
}

static int cmd_kind(cdsh_tavern_kind kind, const char *kname, const char *action, const opts *o)
{
    cdsh_error err = {0};
    cdsh_tavern_store *s = NULL;
    json_t *res = NULL;
    int rc = 0;
    if (!strcmp(action, "import")) {
        if ((rc = want_args(o, "import", 1, "one FILE")))
            return rc;
        char *data = NULL;
        size_t len = 0;
        char *stem = stem_dup(o->args[0]);
        rc = read_input(o->args[0], &data, &len, &err);
        if (rc == 0)
            rc = open_store(&s, &err);
        if (rc == 0)
            rc = cdsh_tavern_store_import_asset(s, kind, data, len, stem, &res, &err);
        free(data);
        free(stem);
        if (rc == 0 && !o->json)
            printf("imported %s \"%s\" as %s\n", kname,
                   json_string_value(json_object_get(res, "name")),
                   json_string_value(json_object_get(res, "id")));
    } else if (!strcmp(action, "list")) {
        if ((rc = want_args(o, "list", 0, "no arguments")))
            return rc;
        json_t *items = NULL;
        rc = open_store(&s, &err);
        if (rc == 0)
            rc = cdsh_tavern_store_list_assets(s, kind, &items, &err);
        if (rc == 0) {
            res = json_pack("{s:o}", "items", items);
            if (!o->json) {
                if (json_array_size(items) == 0)
                    printf("no %ss stored yet\n", kname);
                size_t i;
                json_t *it;
                json_array_foreach(items, i, it) {
                    printf("%-34s %s\n", json_string_value(json_object_get(it, "id")),
                           json_string_value(json_object_get(it, "name")));
                }
            }
        }
    } else if (!strcmp(action, "export")) {
        if ((rc = want_args(o, "export", 1, "one ID")))
            return rc;
        if (!o->output) {
            fprintf(stderr, "cdsh tavern %s export: -o FILE is required\n", kname);
            return 2;
        }
        json_t *v = NULL;
        rc = open_store(&s, &err);
        if (rc == 0)
            rc = cdsh_tavern_store_asset_load(s, kind, o->args[0], &v, &err);
        if (rc == 0)
            rc = write_json_file(o->output, v, &err);
        if (rc == 0 && !o->json && !to_stdout(o->output))
            printf("wrote %s\n", o->output);
        if (rc == 0)
            res = json_pack("{s:s}", "file", o->output);
        json_decref(v);
    } else if (!strcmp(action, "save")) {
        return cmd_save(kind, kname, o);
    } else if (!strcmp(action, "delete")) {
        return cmd_remove(kind, kname, o);
    } else {
        fprintf(stderr,
                "cdsh tavern %s: unknown action '%s' (import, list, export, save or delete)\n",
                kname, action);
        return 2;
    }
    opts q = *o;
    if (to_stdout(o->output))
        q.json = false; /* the data is the output: no confirmation after it */
    return finish(&q, s, rc, &err, res);
}

static int cmd_regex(const char *action, const opts *o)
{
    cdsh_error err = {0};
    cdsh_tavern_store *s = NULL;
    json_t *res = NULL;
    int rc = 0;
    if (!strcmp(action, "import")) {
        if ((rc = want_args(o, "regex import", 1, "one FILE")))
            return rc;
        char *data = NULL;
        size_t len = 0;
        rc = read_input(o->args[0], &data, &len, &err);
        if (rc == 0)
            rc = open_store(&s, &err);
        if (rc == 0)
            rc = cdsh_tavern_store_import_regex(s, data, len, &res, &err);
        free(data);
        if (rc == 0 && !o->json)
            printf("added %lld regex rules (%lld in total)\n",
                   (long long)json_integer_value(json_object_get(res, "added")),
                   (long long)json_integer_value(json_object_get(res, "total")));
    } else if (!strcmp(action, "list") || !strcmp(action, "export")) {
        bool exp = !strcmp(action, "export");
        if ((rc = want_args(o, exp ? "regex export" : "regex list", 0, "no arguments")))
            return rc;
        if (exp && !o->output) {
            fprintf(stderr, "cdsh tavern regex export: -o FILE is required\n");
            return 2;
        }
        json_t *rules = NULL;
        rc = open_store(&s, &err);
        if (rc == 0)
            rc = cdsh_tavern_store_regex_load(s, &rules, &err);
        if (rc == 0 && exp) {
            rc = write_json_file(o->output, rules, &err);
            json_decref(rules);
            if (rc == 0 && !o->json && !to_stdout(o->output))
                printf("wrote %s\n", o->output);
            if (rc == 0)
                res = json_pack("{s:s}", "file", o->output);
        } else if (rc == 0) {
            if (!o->json) {
                if (json_array_size(rules) == 0)
                    printf("no global regex rules\n");
                size_t i;
                json_t *r;
                json_array_foreach(rules, i, r) {
                    printf("%-28s %-3s %s  %s\n", json_string_value(json_object_get(r, "id")),
                           json_is_true(json_object_get(r, "enabled")) ? "on" : "off",
                           json_string_value(json_object_get(r, "find")),
                           json_string_value(json_object_get(r, "name")));
                }
            }
            res = json_pack("{s:o}", "rules", rules);
        }
    } else if (!strcmp(action, "save")) {
        return cmd_regex_save(o);
    } else {
        fprintf(stderr, "cdsh tavern regex: unknown action '%s' (import, list, export or save)\n",
                action);
        return 2;
    }
    opts q = *o;
    if (to_stdout(o->output))
        q.json = false; /* the data is the output: no confirmation after it */
    return finish(&q, s, rc, &err, res);
}

int cdsh_cmd_tavern(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "preview"))
        return cdsh_cmd_tavern_preview(argc - 1, argv + 1);
    static const char *const KINDS[] = {"lorebook", "preset", "persona"};
    bool grouped = !strcmp(cmd, "regex");
    int kind = -1;
    for (int i = 0; i < 3; i++)
        if (!strcmp(cmd, KINDS[i]))
            kind = i;
    grouped = grouped || kind >= 0;
    /* Grouped commands take their action as the next word. */
    int shift = grouped ? 2 : 1;
    if (grouped && (argc < 3 || !strcmp(argv[2], "-h") || !strcmp(argv[2], "--help"))) {
        usage(argc < 3 ? stderr : stdout);
        return argc < 3 ? 2 : 0;
    }
    opts o;
    int r = parse(argc - shift, argv + shift, cmd, &o);
    if (r)
        return r;
    if (o.help) {
        usage(stdout);
        return 0;
    }
    bool save = grouped && !strcmp(argv[2], "save");
    if ((o.id && (!save || kind < 0)) || (o.expect && !save)) {
        fprintf(stderr, "cdsh tavern %s: %s goes with `save` only (see `cdsh tavern --help`)\n",
                cmd, o.id ? "--id" : "--expect");
        return 2;
    }
    if (kind >= 0)
        return cmd_kind((cdsh_tavern_kind)kind, KINDS[kind], argv[2], &o);
    if (grouped)
        return cmd_regex(argv[2], &o);
    if (!strcmp(cmd, "inspect"))
        return cmd_inspect(&o);
    if (!strcmp(cmd, "import"))
        return cmd_import(&o);
    if (!strcmp(cmd, "list"))
        return cmd_list(&o);
    if (!strcmp(cmd, "export"))
        return cmd_export(&o);
    if (!strcmp(cmd, "delete"))
        return cmd_delete(&o);
    fprintf(stderr, "cdsh tavern: unknown command '%s'; run `cdsh tavern --help`\n", cmd);
    return 2;
}

const cdsh_subcommand cdsh_tavern_subcommands[] = {
    {"tavern",
     "role-play (SillyTavern-style): cards, lorebooks, presets, personas, regex; prompt preview",
     cdsh_cmd_tavern},
    {NULL, NULL, NULL},
};
