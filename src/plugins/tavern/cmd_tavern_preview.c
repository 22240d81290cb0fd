/* cmd_tavern_preview.c — `cdsh tavern preview CARD_ID [--chat FILE]
 * [--preset ID] [--persona ID] [--story ID] [--book FILE]... [--json]`:
 * loads the card and its assets from the store, reads an optional chat and
 * world-info files, runs the prompt engine as a dry run and prints the plan.
 * It never writes: timed effects, local and global variables are read from
 * the state directory and evaluated on copies; a story's world-info
 * settings layer is read from its database. */
#include "plugins/tavern/cmd_tavern_preview.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/json.h"
#include "host/cli.h"
#include "plugins/tavern/assemble.h"
#include "plugins/tavern/card.h"
#include "plugins/tavern/binding.h"
#include "plugins/tavern/globals.h"
#include "plugins/tavern/lorebook.h"
#include "plugins/tavern/pipeline.h"
#include "plugins/tavern/regex.h"
#include "plugins/tavern/store.h"
#include "plugins/tavern/story.h"
#include "plugins/tavern/wi_settings.h"

#define CHAT_MAX_BYTES (64u << 20)

static void usage(FILE *out)
{
    fprintf(
        out,
        "Usage: cdsh tavern preview CARD_ID [--chat FILE] [--preset ID] [--persona ID]\n"
        "                           [--story ID] [--book FILE]... [--note TEXT [--note-...]]\n"
        "                           [--context N] [--wi-settings FILE] [--wi KEY=VALUE]...\n"
        "                           [--scan-depth N] [--budget PCT] [--budget-cap N]\n"
        "                           [--[no-]recursive] [--[no-]whole-words] [--case-sensitive]\n"
        "                           [--seed N] [--generation-type TYPE] [--json]\n"
        "\n"
        "Shows the prompt the card would get for the next turn: the standing segment\n"
        "(agent system prompt), the turn context, the full SillyTavern message sequence\n"
        "(a simulation), budgets and the world-info trigger log. Writes nothing.\n"
        "\n"
        "  --chat FILE     chat so far: a JSON array of {role|is_user, name, text|mes,\n"
        "                  synthetic} or SillyTavern .jsonl (the header line is skipped)\n"
        "  --preset ID     library preset (default: SillyTavern's default order)\n"
        "  --persona ID    persona (default: \"User\")\n"
        "  --story ID      story whose timed effects and variables to read\n"
        "                  ($CDSH_HOME/tavern/state/<ID>.json; default: the card id)\n"
        "                  and, for a story of this home, its world-info settings\n"
        "  --book FILE     a world-info book (SillyTavern's JSON, a character book\n"
        "                  or a lorebook_v3) used as a global book; repeatable, in\n"
        "                  order; its name is the file's \"name\" or the file name\n"
        "  --note TEXT     author's note for this turn\n"
        "  --note-position N  SillyTavern's: 1 in chat at its depth (default),\n"
        "                  0 after the main prompt, 2 before it\n"
        "  --note-depth N  in-chat depth of the note (default 4)\n"
        "  --note-role R   in-chat role: system (default), user, assistant\n"
        "  --note-scan     let world info scan the note (\"allow WI scan\")\n"
        "  --context N     context size in tokens (default: the preset's\n"
        "                  openai_max_context); the simulated messages are trimmed\n"
        "                  to it minus the preset's reply tokens\n"
        "  --wi-settings FILE  world-info settings: cdsh's keys (docs/tavern.md) or\n"
        "                  SillyTavern's settings.json / world_info_* keys; over\n"
        "                  SillyTavern's defaults and the profile's settings\n"
        "  --wi KEY=VALUE  one world-info setting (after the file), e.g.\n"
        "                  --wi maxRecursionSteps=2 --wi overflowAlert=true\n"
        "  --scan-depth N, --budget PCT, --budget-cap N, --[no-]recursive,\n"
        "  --[no-]whole-words, --case-sensitive  the same as the --wi keys\n"
        "                  scanDepth, budgetPercent, budgetCap, recursive,\n"
        "                  matchWholeWords, caseSensitive\n"
        "  --seed N        replay a turn's randomness (a floor's recorded seed;\n"
        "                  default: a fresh seed, printed in the plan)\n"
        "  --generation-type TYPE  normal (default), continue, impersonate, swipe,\n"
        "                  regenerate or quiet\n"
        "  --json          print one JSON object {ok, plan...}\n"
        "\n"
        "Global variables are read from $CDSH_HOME/tavern/state/global-variables.json\n"
        "(shared by every story) and never written.\n");
}

typedef struct chat {
    cdsh_tavern_chat_msg *msgs;
    size_t n;
    json_t *keep; /* owns the strings */
} chat;

static int add_message(chat *c, const json_t *m)
{
    const char *text = json_string_value(json_object_get(m, "text"));
    if (!text)
        text = json_string_value(json_object_get(m, "mes"));
    if (!text)
        return 0; /* header or unknown line */
    /* SillyTavern's hidden messages (is_system) are neither scanned nor sent. */
    if (json_is_true(json_object_get(m, "is_system")))
        return 0;
    const char *role = json_string_value(json_object_get(m, "role"));
    if (!role)
        role = json_is_true(json_object_get(m, "is_user")) ? "user" : "assistant";
    if (strcmp(role, "user") && strcmp(role, "assistant") && strcmp(role, "system"))
        return -1;
    cdsh_tavern_chat_msg *g = realloc(c->msgs, (c->n + 1) * sizeof *g);
    if (!g)
        return -1;
    c->msgs = g;
    json_array_append(c->keep, (json_t *)m);
    /* role points into m (kept alive by c->keep) or at a literal. */
    g[c->n++] = (cdsh_tavern_chat_msg){role, json_string_value(json_object_get(m, "name")), text,
                                       json_is_true(json_object_get(m, "synthetic"))};
    return 0;
}

static int load_chat(const char *path, chat *c, cdsh_error *err)
{
    char *data = NULL;
    size_t len = 0;
    int rc = cdsh_fs_read_file(path, CHAT_MAX_BYTES, &data, &len, err);
    if (rc < 0)
        return rc;
    c->keep = json_array();
    json_t *all = json_loadb(data, len, 0, NULL);
    if (json_is_array(all)) {
        size_t i;
        json_t *m;
        json_array_foreach(all, i, m) {
            if (!json_is_object(m) || add_message(c, m) < 0) {
                rc = cdsh_error_set(err, CDSH_EINVAL, "BAD_CHAT",
                                    "chat message %zu needs a role (user, assistant, system) "
                                    "and a text",
                                    i);
                break;
            }
        }
    } else {
        /* JSONL: one object per line. */
        char *save = NULL;
        size_t line = 0;
        for (char *l = strtok_r(data, "\n", &save); l && rc == 0; l = strtok_r(NULL, "\n", &save)) {
            line++;
            if (!*l || *l == '\r')
                continue;
            json_t *m = json_loads(l, 0, NULL);
            if (!json_is_object(m) || add_message(c, m) < 0)
                rc = cdsh_error_set(err, CDSH_EINVAL, "BAD_CHAT",
                                    "%s line %zu is not a chat message object", path, line);
            json_decref(m);
        }
    }
    json_decref(all);
    free(data);
    return rc;
}

static void print_text(const json_t *plan)
{
    printf("== Standing segment (agent system prompt) ==\n%s\n\n",
           json_string_value(json_object_get(plan, "standing")));
    printf("== Turn context ==\n%s\n\n", json_string_value(json_object_get(plan, "turn")));
    printf("== Simulated SillyTavern messages (simulation, not what is sent) ==\n");
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(plan, "messages"), i, m) {
        printf("[%zu] %s (%s)\n%s\n", i + 1, json_string_value(json_object_get(m, "role")),
               json_string_value(json_object_get(m, "source")),
               json_string_value(json_object_get(m, "content")));
    }
    printf("\n== Budgets (estimated tokens) ==\n");
    const char *k;
    json_t *b;
    json_object_foreach(json_object_get(plan, "budgets"), k, b) {
        printf("%-10s %5lld / %-5lld%s\n", k,
               (long long)json_integer_value(json_object_get(b, "used")),
               (long long)json_integer_value(json_object_get(b, "limit")),
               json_is_true(json_object_get(b, "truncated")) ? "  truncated" : "");
    }
    json_array_foreach(json_object_get(plan, "notes"), i, m)
        printf("note: %s\n", json_string_value(m));
    json_array_foreach(json_object_get(plan, "regexFailures"), i, m)
        printf("regex rule '%s' failed: %s\n", json_string_value(json_object_get(m, "name")),
               json_string_value(json_object_get(m, "message")));
    printf("\n== World-info trigger log ==\n");
    json_t *wi = json_object_get(plan, "worldInfo");
    json_array_foreach(json_object_get(wi, "log"), i, m) {
        printf("%s %s.%lld %s%s%s: %s\n", json_is_true(json_object_get(m, "fired")) ? "+" : "-",
               json_string_value(json_object_get(m, "book")),
               (long long)json_integer_value(json_object_get(m, "uid")),
               *json_string_value(json_object_get(m, "comment")) ? "\"" : "",
               json_string_value(json_object_get(m, "comment")),
               *json_string_value(json_object_get(m, "comment")) ? "\"" : "",
               json_string_value(json_object_get(m, "reason")));
    }
    printf("budget %lld tokens, used %lld%s, %lld scan loop(s)\n",
           (long long)json_integer_value(json_object_get(wi, "budget")),
           (long long)json_integer_value(json_object_get(wi, "tokens")),
           json_is_true(json_object_get(wi, "overflow")) ? " (overflow)" : "",
           (long long)json_integer_value(json_object_get(wi, "loops")));
}

/* A fresh seed from the system's random source. */
static uint32_t draw_seed(void)
{
    uint32_t s = 0;
    if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s)
        s = (uint32_t)cdsh_clock_wall_ms();
    return s;
}

/* A whole decimal number in [lo, hi]. */
static bool int_arg(const char *s, int lo, int hi, int *out)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

/* Reads a book file as a global world-info book named by its "name" or,
 * without one, by the file name without its extension (as SillyTavern names
 * a world by its file). */
static int load_book(const char *path, json_t *books, cdsh_error *err)
{
    json_error_t jerr;
    json_t *raw = json_load_file(path, JSON_DECODE_ANY, &jerr);
    if (!raw)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_BOOK", "cannot read %s: %s (line %d)", path,
                              jerr.text, jerr.line);
    json_t *book = cdsh_tavern_lorebook_normalize_dup(raw, err);
    json_decref(raw);
    if (!book)
        return err->rc ? err->rc : CDSH_EINVAL;
    const char *name = json_string_value(json_object_get(book, "name"));
    if (!name || !*name) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        const char *dot = strrchr(base, '.');
        json_object_set_new(
            book, "name",
            json_stringn(base, dot && dot != base ? (size_t)(dot - base) : strlen(base)));
    }
    return json_array_append_new(books, book) < 0
               ? cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory")
               : 0;
}

/* The world-info settings a story of this home sets for itself (the layer
 * saveStoryWorldInfoSettings writes); an empty object when `story` is not a
 * story id of this home or sets none. */
static json_t *story_wi_layer(cdsh_tavern_store *st, const char *story)
{
    json_t *layer = NULL;
    if (!cdsh_tavern_story_id_valid(story))
        return json_object();
    char *path = NULL;
    if (asprintf(&path, "%s/stories/%s.db", cdsh_tavern_store_root_get(st), story) < 0)
        return json_object();
    cdsh_tavern_story *s = NULL;
    if (cdsh_tavern_story_open(path, &s, NULL) == 0 &&
        cdsh_tavern_story_load(s, CDSH_TAVERN_KIND_DOC, "settings/world-info.json", &layer, NULL) <
            0)
        layer = NULL;
    cdsh_tavern_story_free(s);
    free(path);
    if (!json_is_object(layer)) {
        json_decref(layer);
        layer = json_object();
    }
    return layer;
}

static int fail(bool as_json, const cdsh_error *err)
{
    if (as_json) {
        json_t *j =
            json_pack("{s:b, s:s, s:s}", "ok", 0, "code", err->code, "message", err->message);
        char *s = cdsh_json_dump_compact_dup(j);
        printf("%s\n", s);
        free(s);
        json_decref(j);
    } else {
        fprintf(stderr, "cdsh tavern preview: %s (%s)\n", err->message, err->code);
    }
    return 1;
}

int cdsh_cmd_tavern_preview(int argc, char **argv)
{
    static const struct option longopts[] = {{"chat", required_argument, NULL, 'c'},
                                             {"preset", required_argument, NULL, 'p'},
                                             {"persona", required_argument, NULL, 'P'},
                                             {"story", required_argument, NULL, 's'},
                                             {"note", required_argument, NULL, 'n'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"help", no_argument, NULL, 'h'},
                                             {"note-position", required_argument, NULL, 'O'},
                                             {"note-depth", required_argument, NULL, 'D'},
                                             {"note-role", required_argument, NULL, 'R'},
                                             {"note-scan", no_argument, NULL, 'S'},
                                             {"context", required_argument, NULL, 'C'},
                                             {"wi-settings", required_argument, NULL, 'W'},
                                             {"wi", required_argument, NULL, 'w'},
                                             {"scan-depth", required_argument, NULL, 1001},
                                             {"budget", required_argument, NULL, 1002},
                                             {"budget-cap", required_argument, NULL, 1003},
                                             {"recursive", no_argument, NULL, 1004},
                                             {"no-recursive", no_argument, NULL, 1005},
                                             {"whole-words", no_argument, NULL, 1006},
                                             {"no-whole-words", no_argument, NULL, 1007},
                                             {"case-sensitive", no_argument, NULL, 1008},
                                             {"seed", required_argument, NULL, 1009},
                                             {"generation-type", required_argument, NULL, 1010},
                                             {"book", required_argument, NULL, 'B'},
                                             {NULL, 0, NULL, 0}};
    static const char *const FLAG_KEYS[] = {"scanDepth",       "budgetPercent", "budgetCap",
                                            "recursive",       "recursive",     "matchWholeWords",
                                            "matchWholeWords", "caseSensitive"};
    const char *wi_file = NULL, *gen_type = "normal";
    json_t *wi_flags = json_object();  /* --wi and the named flags, in order */
    json_t *book_paths = json_array(); /* --book, in order */
    bool has_seed = false;
    unsigned long seed = 0;
    const char *chat_path = NULL, *preset_id = NULL, *persona_id = NULL, *story = NULL,
               *note = NULL;
    bool as_json = false, note_scan = false;
    int note_pos = 1, note_depth = 4, note_role = 0, context = 0;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': chat_path = optarg; break;
        case 'p': preset_id = optarg; break;
        case 'P': persona_id = optarg; break;
        case 's': story = optarg; break;
        case 'n': note = optarg; break;
        case 'j': as_json = true; break;
        case 'S': note_scan = true; break;
        case 'O':
        case 'D':
        case 'C': {
            int *dst = c == 'O' ? &note_pos : c == 'D' ? &note_depth : &context;
            if (!int_arg(optarg, c == 'O' ? 0 : 1,
                         c == 'O'   ? 2
                         : c == 'D' ? 1000
                                    : 10000000,
                         dst)) {
                fprintf(stderr, "cdsh tavern preview: bad number '%s' for %s\n", optarg,
                        c == 'O'   ? "--note-position"
                        : c == 'D' ? "--note-depth"
                                   : "--context");
                json_decref(wi_flags);
                json_decref(book_paths);
                return 2;
            }
            break;
        }
        case 'R':
            note_role = !strcmp(optarg, "system")      ? 0
                        : !strcmp(optarg, "user")      ? 1
                        : !strcmp(optarg, "assistant") ? 2
                                                       : -1;
            if (note_role < 0) {
                fprintf(stderr, "cdsh tavern preview: --note-role is system, user or assistant\n");
                json_decref(wi_flags);
                json_decref(book_paths);
                return 2;
            }
            break;
        case 'W': wi_file = optarg; break;
        case 'B': json_array_append_new(book_paths, json_string(optarg)); break;
        case 'w': {
            const char *eq = strchr(optarg, '=');
            json_t *v = eq ? json_loads(eq + 1, JSON_DECODE_ANY, NULL) : NULL;
            if (!eq || eq == optarg || !v) {
                fprintf(stderr,
                        "cdsh tavern preview: --wi wants KEY=VALUE (a JSON number or "
                        "true/false), got '%s'\n",
                        optarg);
                json_decref(v);
                json_decref(wi_flags);
                json_decref(book_paths);
                return 2;
            }
            char key[128];
            snprintf(key, sizeof key, "%.*s", (int)(eq - optarg), optarg);
            json_object_set_new(wi_flags, key, v);
            break;
        }
        case 1001:
        case 1002:
        case 1003: {
            int n;
            if (!int_arg(optarg, 0, 1 << 30, &n)) {
                fprintf(stderr, "cdsh tavern preview: bad number '%s' for %s\n", optarg,
                        c == 1001   ? "--scan-depth"
                        : c == 1002 ? "--budget"
                                    : "--budget-cap");
                json_decref(wi_flags);
                json_decref(book_paths);
                return 2;
            }
            json_object_set_new(wi_flags, FLAG_KEYS[c - 1001], json_integer(n));
            break;
        }
        case 1004:
        case 1005:
        case 1006:
        case 1007:
        case 1008:
            json_object_set_new(wi_flags, FLAG_KEYS[c - 1001],
                                json_boolean(c != 1005 && c != 1007));
            break;
        case 1009: {
            char *end = NULL;
            seed = strtoul(optarg, &end, 10);
            if (!*optarg || *end || *optarg == '-' || seed > 0xFFFFFFFFul) {
                fprintf(stderr, "cdsh tavern preview: --seed wants 0..4294967295, got '%s'\n",
                        optarg);
                json_decref(wi_flags);
                json_decref(book_paths);
                return 2;
            }
            has_seed = true;
            break;
        }
        case 1010:
            gen_type = optarg;
            if (!cdsh_tavern_generation_type_valid(gen_type)) {
                fprintf(stderr,
                        "cdsh tavern preview: --generation-type is normal, continue, "
                        "impersonate, swipe, regenerate or quiet, not '%s'\n",
                        optarg);
                json_decref(wi_flags);
                json_decref(book_paths);
                return 2;
            }
            break;
        case 'h':
            json_decref(wi_flags);
            json_decref(book_paths);
            usage(stdout);
            return 0;
        default:
            fprintf(stderr, "cdsh tavern preview: bad option '%s'\n", argv[optind - 1]);
            usage(stderr);
            json_decref(wi_flags);
            json_decref(book_paths);
            return 2;
        }
    }
    if (argc - optind != 1) {
        usage(stderr);
        json_decref(wi_flags);
        json_decref(book_paths);
        return 2;
    }
    const char *card_id = argv[optind];
    cdsh_error err = {0};
    cdsh_tavern_store *st = NULL;
    json_t *card = NULL, *preset = NULL, *persona = NULL, *rules = NULL, *card_rules = NULL,
           *state = NULL, *plan = NULL, *books = json_array();
    char *tag = NULL, *state_dir = NULL;
    chat ch = {0};
    cdsh_tavern_state_store *ss = NULL;
    int rc = cdsh_tavern_store_open(cdsh_cli_home(), NULL, &st, &err);
    if (rc == 0)
        rc = cdsh_tavern_store_card_load(st, card_id, &card, &tag, &err);
    if (rc == 0 && preset_id)
        rc = cdsh_tavern_store_asset_load(st, CDSH_TAVERN_PRESET, preset_id, &preset, &err);
    if (rc == 0 && persona_id)
        rc = cdsh_tavern_store_asset_load(st, CDSH_TAVERN_PERSONA, persona_id, &persona, &err);
    if (rc == 0)
        rc = cdsh_tavern_store_regex_load(st, &rules, &err);
    if (rc == 0 && chat_path)
        rc = load_chat(chat_path, &ch, &err);
    for (size_t i = 0; rc == 0 && i < json_array_size(book_paths); i++)
        rc = load_book(json_string_value(json_array_get(book_paths, i)), books, &err);
    if (rc == 0) {
        /* Card rules live next to the card; a card without them has none. */
        char rel[512];
        snprintf(rel, sizeof rel, "characters/%s/assets/regex-scripts.json", card_id);
        if (cdsh_tavern_store_load(st, rel, &card_rules, NULL, NULL) == 0)
            json_array_extend(rules, card_rules);
        if (json_array_size(json_object_get(preset, "regexScripts"))) {
            json_t *pr = cdsh_tavern_regex_rules_from_st_dup(
                json_object_get(preset, "regexScripts"), CDSH_TAVERN_REGEX_PRESET, NULL);
            if (pr)
                json_array_extend(rules, pr);
            json_decref(pr);
        }
        size_t n = strlen(cdsh_tavern_store_root_get(st)) + 16;
        state_dir = malloc(n);
        snprintf(state_dir, n, "%s/state", cdsh_tavern_store_root_get(st));
        ss = cdsh_tavern_state_store_new_file(state_dir);
        rc = cdsh_tavern_state_store_load(ss, story ? story : card_id, &state, &err);
    }
    if (rc == 0) {
        json_t *timed = json_object_get(state, "timed"), *vars = json_object_get(state, "vars");
        json_t *vl = json_deep_copy(json_object_get(vars, "local"));
        json_t *vg = NULL;
        if (!vl)
            vl = json_object();
        /* Global variables are home-wide (shared by every story); a copy. */
        rc = cdsh_tavern_globals_load(state_dir, &vg, &err);
        cdsh_tavern_assemble_input in = {
            .card = card,
            .preset = preset,
            .persona = persona,
            .regex_rules = rules,
            .global_books = json_array_size(books) ? books : NULL,
            .chat = ch.msgs,
            .n_chat = ch.n,
            .author_note = note,
            .author_note_position = cdsh_tavern_an_position_from_st(note_pos),
            .author_note_depth = note_depth,
            .author_note_role = note_role,
            .author_note_scan = note_scan,
            .chat_id = story ? story : card_id,
            .now_ms = cdsh_clock_wall_ms(),
            .timed = timed,
            .vars_local = vl,
            .vars_global = vg,
            .dry_run = true,
            .trigger_log = true,
            .run_templates = true,
            .revision = tag,
        };
        /* World info: SillyTavern's defaults, the preset's context size,
         * the profile (settings.json "worldInfo"), the story's layer,
         * --wi-settings, the flags. */
        cdsh_tavern_wi_settings_default(&in.wi);
        if (preset && json_is_integer(json_object_get(preset, "openai_max_context")))
            in.wi.max_context =
                (int)json_integer_value(json_object_get(preset, "openai_max_context"));
        if (context > 0)
            in.wi.max_context = context;
        json_t *profile = NULL, *file = NULL;
        if (rc == 0 && cdsh_tavern_store_load(st, "settings.json", &profile, NULL, NULL) == 0)
            rc = cdsh_tavern_wi_settings_apply(&in.wi, json_object_get(profile, "worldInfo"), &err);
        if (rc == 0 && story) {
            json_t *layer = story_wi_layer(st, story);
            rc = cdsh_tavern_wi_settings_apply(&in.wi, layer, &err);
            json_decref(layer);
        }
        if (rc == 0 && wi_file) {
            json_error_t jerr;
            file = json_load_file(wi_file, 0, &jerr);
            rc = file ? cdsh_tavern_wi_settings_apply(&in.wi, file, &err)
                      : cdsh_error_set(&err, CDSH_EINVAL, "wi-settings-rejected",
                                       "cannot read %s: %s (line %d)", wi_file, jerr.text,
                                       jerr.line);
        }
        if (rc == 0)
            rc = cdsh_tavern_wi_settings_apply(&in.wi, wi_flags, &err);
        json_decref(profile);
        json_decref(file);
        in.seed = has_seed ? (uint32_t)seed : draw_seed();
        in.generation_type = gen_type;
        if (rc == 0)
            rc = cdsh_tavern_assemble(&in, &plan, &err);
        json_decref(vl);
        json_decref(vg);
    }
    int status = 0;
    if (rc < 0) {
        status = fail(as_json, &err);
    } else if (as_json) {
        json_object_set_new(plan, "ok", json_true());
        json_object_set_new(plan, "cardId", json_string(card_id));
        char *s = cdsh_json_dump_compact_dup(plan);
        printf("%s\n", s);
        free(s);
    } else {
        print_text(plan);
    }
    json_decref(plan);
    json_decref(wi_flags);
    json_decref(book_paths);
    json_decref(state);
    json_decref(books);
    cdsh_tavern_state_store_free(ss);
    free(state_dir);
    json_decref(card_rules);
    json_decref(rules);
    json_decref(persona);
    json_decref(preset);
    json_decref(card);
    free(tag);
    free(ch.msgs);
    json_decref(ch.keep);
    cdsh_tavern_store_free(st);
    return status;
}
