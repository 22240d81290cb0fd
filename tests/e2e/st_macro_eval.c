/* st_macro_eval.c — the cdsh side of the macro differential (st_macros.mjs):
 * reads a JSON array of cases {text, env, local, global} on stdin, expands
 * each text with cdsh's macro engine and prints a JSON array of
 * {out, local, global, unknown}. env carries the names, card fields, chat
 * state, clock and seed both engines are given. With --names it prints the
 * registry instead: [{name, unsupported}]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "plugins/tavern/macros.h"

static const char *s(const json_t *env, const char *k)
{
    return json_string_value(json_object_get(env, k));
}

static long l(const json_t *env, const char *k, long dflt)
{
    const json_t *v = json_object_get(env, k);
    return json_is_number(v) ? (long)json_number_value(v) : dflt;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--names")) {
        json_t *names = json_array();
        for (size_t i = 0; i < cdsh_tavern_macros_count(); i++) {
            const char *n = cdsh_tavern_macros_name(i);
            json_array_append_new(names, json_pack("{s:s,s:b}", "name", n, "unsupported",
                                                   cdsh_tavern_macros_unsupported(n, NULL)));
        }
        json_dumpf(names, stdout, JSON_COMPACT);
        fputc('\n', stdout);
        json_decref(names);
        return 0;
    }
    json_error_t jerr;
    json_t *cases = json_loadf(stdin, JSON_DECODE_ANY, &jerr);
    if (!json_is_array(cases)) {
        fprintf(stderr, "st_macro_eval: stdin is not a JSON array: %s\n", jerr.text);
        return 2;
    }
    json_t *results = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        const json_t *env = json_object_get(c, "env");
        json_t *local = json_deep_copy(json_object_get(c, "local"));
        json_t *global = json_deep_copy(json_object_get(c, "global"));
        if (!local)
            local = json_object();
        if (!global)
            global = json_object();
        json_t *unknown = json_array();
        cdsh_tavern_macro_env e = {
            .user = s(env, "user"),
            .chr = s(env, "char"),
            .group = s(env, "group"),
            .description = s(env, "description"),
            .personality = s(env, "personality"),
            .scenario = s(env, "scenario"),
            .persona = s(env, "persona"),
            .first_message = s(env, "firstMessage"),
            .mes_examples = s(env, "mesExamples"),
            .char_prompt = s(env, "charPrompt"),
            .char_jailbreak = s(env, "charInstruction"),
            .char_version = s(env, "version"),
            .char_depth_prompt = s(env, "charDepthPrompt"),
            .creator_notes = s(env, "creatorNotes"),
            .alternate_greetings = json_object_get(env, "alternateGreetings"),
            .model = s(env, "model"),
            .input = s(env, "input"),
            .original = s(env, "original"),
            .last_message = s(env, "lastMessage"),
            .last_user_message = s(env, "lastUserMessage"),
            .last_char_message = s(env, "lastCharMessage"),
            .chat_id = s(env, "chatId"),
            .last_message_id = l(env, "lastMessageId", -1),
            .chat_length = l(env, "chatLength", 0),
            .has_first_included = json_object_get(env, "firstIncludedId") != NULL,
            .first_included_id = l(env, "firstIncludedId", 0),
            .has_swipes = json_object_get(env, "swipes") != NULL,
            .swipes = l(env, "swipes", 0),
            .swipe_id = l(env, "swipeId", 0),
            .idle_since_ms = (int64_t)l(env, "idleSinceMs", 0),
            .generation_type = s(env, "generationType"),
            .max_context = l(env, "maxContext", 0),
            .max_response = l(env, "maxResponse", 0),
            .summary = s(env, "summary"),
            .authors_note = s(env, "authorsNote"),
            .char_authors_note = s(env, "charAuthorsNote"),
            .default_authors_note = s(env, "defaultAuthorsNote"),
            .instruct = json_object_get(env, "instruct"),
            .sysprompt = json_object_get(env, "sysprompt"),
            .context_template = json_object_get(env, "context"),
            .reasoning = json_object_get(env, "reasoning"),
            .outlets = json_object_get(env, "outlets"),
            .vars_local = local,
            .vars_global = global,
            .now_ms = (int64_t)json_number_value(json_object_get(env, "nowMs")),
            .tz_offset_min = (int)l(env, "tzOffsetMin", 0),
            .seed = (uint32_t)l(env, "seed", 0),
            .unknown = unknown,
        };
        const char *text = json_string_value(json_object_get(c, "text"));
        char *out = cdsh_tavern_macros_expand_dup(text ? text : "", &e);
        json_array_append_new(results, json_pack("{s:s?,s:o,s:o,s:o}", "out", out, "local", local,
                                                 "global", global, "unknown", unknown));
        free(out);
    }
    json_dumpf(results, stdout, JSON_COMPACT | JSON_ENCODE_ANY);
    fputc('\n', stdout);
    json_decref(results);
    json_decref(cases);
    return 0;
}
