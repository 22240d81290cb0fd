/* test_tavern_macros.c — the macro engine against SillyTavern 1.19's own:
 * each family's expected strings were produced by running ST's macro
 * engine (public/scripts/macros/, its core, variable, env and time
 * definitions) on the same text with user "Ann", char "Seraphina", chat
 * "chat1" and the clock at 2026-01-01 13:05 UTC — not written from memory.
 * Also: card fields as ST's baseChatReplace gives them, the registry (136
 * names), unsupported and unknown macros listed in full, seeded
 * {{random}}/{{roll}}, the turn-local flag and the frozen clock. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "plugins/tavern/macros.h"
#include "plugins/tavern/tokens.h"

typedef struct st_case {
    const char *in, *want;
} st_case;

static cdsh_tavern_macro_env env_base(void)
{
    cdsh_tavern_macro_env e = {0};
    e.user = "Ann";
    e.chr = "Seraphina";
    e.chat_id = "chat1";
    e.last_message_id = -1;
    e.now_ms = 1767225600000LL + 13 * 3600000LL + 5 * 60000LL; /* 2026-01-01 13:05 UTC, Thu */
    e.seed = 1234;
    return e;
}

static void expect(cdsh_tavern_macro_env *e, const char *in, const char *want)
{
    char *out = cdsh_tavern_macros_expand_dup(in, e);
    assert_non_null(out);
    if (strcmp(out, want))
        fprintf(stderr, "input: %s\n", in);
    assert_string_equal(out, want);
    free(out);
}

/* Each case runs on fresh variable stores, as the ST run did. */
static void run_family(const st_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cdsh_tavern_macro_env e = env_base();
        e.vars_local = json_object();
        e.vars_global = json_object();
        expect(&e, c[i].in, c[i].want);
        json_decref(e.vars_local);
        json_decref(e.vars_global);
    }
}

#define FAMILY(fn, table)                                                                         \
    static void fn(void **state)                                                                  \
    {                                                                                             \
        (void)state;                                                                              \
        run_family(table, sizeof table / sizeof table[0]);                                        \
    }

static const st_case CORE_UTILITIES[] = {
    {"a{{newline}}b|{{newline::3}}|{{space}}|{{space::4}}|{{space::x}}|{{space::-1}}",
     "a\nb|\n\n\n| |    |{{space::x}}|{{space::-1}}"},
    {"x{{noop}}y{{// a comment\nspanning lines}}z{{comment::hidden}}|{{//}}|{{comment}}",
     "xyz|{{//}}|{{comment}}"},
    {"{{reverse::abc}}|{{reverse:abc}}|{{reverse::héllo😀}}|{{reverse}}",
     "cba|cba|😀olléh|{{reverse}}"},
    {"a\n\n{{trim}}\nb|{{TRIM}}",
     "ab|"},
    {"{{else}}|{{if}}|{{banned \"word\"}}|{{outlet::}}",
     "|{{if}}||"},
    {"{{nosuch}} {{other::{{user}}}} {{user::extra}}",
     "{{nosuch}} {{other::Ann}} {{user::extra}}"},
    {"\\{\\{user\\}\\} {{user}}",
     "{{user}} Ann"},
    {"{{ 123}} {{}} {{user {{user}} {{{user}}}",
     "{{ 123}} {{}} {{user Ann {{{user}}}"},
};
FAMILY(st_core_utilities, CORE_UTILITIES)

static const st_case SCOPED_IF_ELSE_TRIM[] = {
    {"{{if 1}}  yes {{else}} no{{/if}}|{{if 0}}a{{else}}b{{/if}}|{{if off}}a{{/if}}|{{if !false}}neg{{/if}}",
     "yes|b||neg"},
    {"{{if::1::inline}}|{{if::0::inline}}|{{if 0::a}}",
     "inline||{{if 0::a}}"},
    {"{{if user}}U{{/if}}|{{if description}}D{{else}}no description{{/if}}",
     "U|no description"},
    {"{{if 1}}outer {{if 0}}inner{{else}}inner-else{{/if}} tail{{else}}E{{/if}}",
     "outer inner-else tail"},
    {"{{if 1}}\n  # Heading\n  Body\n    indented\n{{/if}}",
     "# Heading\nBody\n  indented"},
    {"{{#if 1}}  keep  {{/if}}|{{trim}}  x  {{/trim}}|{{#trim}}  x  {{/trim}}",
     "  keep  |x|  x  "},
    {"{{user}}x{{/user}}|{{foo}}x{{/foo}}|{{/if}}",
     "{{user}}x{{/user}}|{{foo}}x}}|{{/if}}"},
    {"{{setvar::a}}scoped value{{/setvar}}[{{getvar::a}}]",
     "[scoped value]"},
};
FAMILY(st_scoped_if_else_trim, SCOPED_IF_ELSE_TRIM)

static const st_case VARIABLES[] = {
    {"{{setvar::a::1}}A={{getvar::a}} {{setvar::a::2}}B={{getvar::a}}",
     "A=1 B=2"},
    {"{{setvar::hp::10}}{{addvar::hp::5}}{{getvar::hp}} {{incvar::hp}} {{decvar::hp}}{{decvar::hp}}",
     "15 16 1514"},
    {"{{addvar::name::Bo}}{{addvar::name::b}}{{getvar::name}}|{{setvar::n::007}}{{getvar::n}}|{{addvar::n::x}}{{getvar::n}}",
     "Bob|7|7x"},
    {"{{setglobalvar::g::x}}[{{getvar::g}}]{{getglobalvar::g}}{{incglobalvar::c}}{{incglobalvar::c}}",
     "[]x12"},
    {"{{setvar::x::v}}{{hasvar::x}}{{varexists::y}}{{deletevar::x}}{{hasvar::x}}[{{getvar::x}}]{{flushvar::none}}",
     "truefalsefalse[]"},
    {"{{setvar::l::[1,2]}}{{addvar::l::3}}{{getvar::l}}",
     "[1,2,\"3\"]"},
    {"{{setvar::who::{{user}}}}{{getvar::who}}|{{setvar:: a :: b }}[{{getvar::a}}]|{{setvar::::x}}",
     "Ann|[b]|{{setvar::::x}}"},
    {"{{.x = 5}}{{.x++}}{{.x}}{{.x--}}|{{.v ?\?= hi}}{{.v ?\? bye}}{{.w || fb}}{{.w ||= set}}{{.w}}",
     "665|hihifbsetset"},
    {"{{.k = 3}}{{.k > 2}}{{.k >= 4}}{{.k < 10}}{{.k <= 3}}{{.k == 3}}{{.k != 3}}{{.k += 2}}{{.k}}{{.k -= 1}}{{.k}}",
     "truefalsetruetruetruefalse54"},
    {"{{$g = 1}}{{$g++}}{{getglobalvar::g}}{{hasglobalvar::g}}{{globalvarexists::g}}{{deleteglobalvar::g}}{{hasglobalvar::g}}",
     "22truetruefalse"},
    {"{{setvar::a::1}}{{if .a}}yes{{/if}}{{if $a}}g{{else}}no-global{{/if}}|{{if {{getvar::a}}}}G{{/if}}",
     "yesno-global|G"},
    {"{{.x-}}|{{.}}|{{.1x}}",
     "{{.x-}}||{{.1x}}"},
};
FAMILY(st_variables, VARIABLES)

static const st_case TIME[] = {
    {"{{time}} {{date}} {{weekday}} {{isotime}} {{isodate}}",
     "1:05 PM January 1, 2026 Thursday 13:05 2026-01-01"},
    {"{{datetimeformat::YYYY/MM/DD HH:mm dddd}}|{{datetimeformat LLLL}}|{{datetimeformat::Do MMM YY, h:mm:ss a [at] Q}}",
     "2026/01/01 13:05 Thursday|Thursday, January 1, 2026 1:05 PM|1st Jan 26, 1:05:00 pm at 1"},
    {"{{datetimeformat::ddd dd d E e w ww W WW gggg GGGG DDD DDDD X x SSS Z ZZ k kk}}",
     "Thu Th 4 4 4 1 01 1 01 2026 2026 1 001 1767272700 1767272700000 000 +00:00 +0000 13 13"},
    {"{{time::UTC+2}}|{{time::UTC-10}}|{{time::UTC+30}}|{{time::bogus}}|{{time_UTC+2}}",
     "3:05 PM|3:05 AM|1:35 PM|1:05 PM|3:05 PM"},
    {"{{timeDiff::2026-01-01::2025-12-31}}|{{timeDiff::2026-01-01T10:00:00Z::2026-01-01T12:30:00Z}}|{{timeDiff::2020-01-01::2026-01-01}}|{{timeDiff::nonsense::2026-01-01}}",
     "in a day|3 hours ago|6 years ago|Invalid date"},
    {"{{timeDiff::2026-01-01T00:00:30::2026-01-01}}|{{timeDiff::2026-01-01T00:01:30::2026-01-01}}|{{timeDiff::2026-03-01::2026-01-01}}",
     "in a few seconds|in 2 minutes|in 2 months"},
};
FAMILY(st_time, TIME)

static const st_case PICK_AND_ROLL[] = {
    {"{{pick::a::b::c::d::e::f::g}}|{{pick a,b,c,d,e,f,g}}|{{pick::a::b::c::d::e::f::g}}",
     "b|g|f"},
    {"x {{pick::1::2::3::4::5::6::7::8::9}} {{if 1}}{{pick::1::2::3::4::5::6::7::8::9}}{{/if}} {{reverse::{{pick::1::2::3::4::5::6::7::8::9}}}}",
     "x 6 3 4"},
    {"héllo 😀 {{pick::1::2::3::4::5::6::7::8::9}}|{{pick}}|{{pick: x\\,y , z }}",
     "héllo 😀 8||z"},
    {"{{roll::1d1}}|{{roll 3d1+4}}|{{roll: 2d1-5}}|{{roll::d1}}|{{roll::0}}|{{roll::banana}}|{{roll::1}}",
     "1|7|-3|1|||1"},
};
FAMILY(st_pick_and_roll, PICK_AND_ROLL)

/* ST's getCharacterCardFields: fields trimmed, their own macros expanded
 * without card fields (a field cannot include itself), \r removed;
 * charVersion is taken as is. */
static void card_fields_are_expanded_once_like_st(void **state)
{
    (void)state;
    cdsh_tavern_macro_env e = env_base();
    e.description = "  A guardian of {{user}}'s forest. {{description}}\r\n ";
    e.personality = "kind";
    e.scenario = "glade";
    e.persona = "a traveller";
    e.first_message = "Welcome, {{user}}.";
    json_t *alts = json_pack("[s,s]", "Hi {{user}}", "Yo");
    e.alternate_greetings = alts;
    e.char_version = "v{{user}}";
    e.creator_notes = "notes";
    e.char_depth_prompt = "depth";
    e.mes_examples = "<START>\n{{user}}: hi\n{{char}}: hello\n<START>\n{{char}}: again";
    expect(&e, "{{description}}|{{charDescription}}", "A guardian of Ann's forest. |A guardian of Ann's forest. ");
    expect(&e, "{{personality}}|{{charPersonality}}|{{scenario}}|{{charScenario}}|{{persona}}",
           "kind|kind|glade|glade|a traveller");
    expect(&e, "{{greeting}}|{{charFirstMessage::1}}|{{greeting::2}}|{{greeting::3}}|{{greeting::x}}",
           "Welcome, Ann.|Hi Ann|Yo||{{greeting::x}}");
    expect(&e, "{{charVersion}}|{{version}}|{{char_version}}", "v{{user}}|v{{user}}|v{{user}}");
    expect(&e, "{{creatorNotes}}|{{charCreatorNotes}}|{{charDepthPrompt}}", "notes|notes|depth");
    expect(&e, "{{mesExamplesRaw}}", "<START>\nAnn: hi\nSeraphina: hello\n<START>\nSeraphina: again");
    expect(&e, "{{mesExamples}}", "<START>\nAnn: hi\nSeraphina: hello\n<START>\nSeraphina: again\n");
    e.mes_examples = "{{user}}: no header";
    expect(&e, "{{mesExamples}}", "<START>\nAnn: no header\n");
    expect(&e, "{{group}}|{{charIfNotGroup}}|{{notChar}}|{{groupNotMuted}}|{{isMobile}}",
           "Seraphina|Seraphina|Ann|Seraphina|false");
    e.group = "Seraphina, Kai";
    expect(&e, "{{group}}|<GROUP>|<CHARIFNOTGROUP>", "Seraphina, Kai|Seraphina, Kai|Seraphina, Kai");
    e.original = "O";
    expect(&e, "{{original}}+{{original}}", "O+");
    assert_int_equal(e.flags & CDSH_TAVERN_MACRO_TURN_LOCAL, 0);
    json_decref(alts);
}

/* Instruct and system-prompt macros read ST's settings; with ST's defaults
 * (instruct off, the Neutral system prompt on) they give what ST gives. */
static void instruct_and_prompt_macros_follow_the_settings(void **state)
{
    (void)state;
    cdsh_tavern_macro_env e = env_base();
    expect(&e, "[{{instructUserPrefix}}{{instructInput}}{{instructStop}}]", "[]");
    expect(&e, "{{systemPrompt}}",
           "Write {{char}}'s next reply in a fictional chat between {{char}} and {{user}}.");
    expect(&e, "{{exampleSeparator}}|{{chatSeparator}}|{{chatStart}}", "***|***|***");
    expect(&e, "{{reasoningPrefix}}|{{reasoningSuffix}}|{{reasoningSeparator}}",
           "<think>|</think>|\n");
    json_t *ins = json_pack("{s:b,s:s,s:s,s:s,s:s}", "enabled", 1, "input_sequence", "### In:",
                            "output_sequence", "### Out:", "first_output_sequence", "",
                            "last_input_sequence", "### Last:");
    json_t *sys = json_pack("{s:b,s:s}", "enabled", 1, "content", "Be {{char}}.");
    e.instruct = ins;
    e.sysprompt = sys;
    expect(&e, "{{instructUserPrefix}}|{{instructInput}}|{{instructAssistantPrefix}}|"
               "{{instructFirstAssistantPrefix}}|{{instructLastUserPrefix}}|{{instructFirstInput}}",
           "### In:|### In:|### Out:|### Out:|### Last:|### In:");
    expect(&e, "{{defaultSystemPrompt}}|{{instructSystem}}|{{systemPrompt}}", "Be {{char}}.|Be {{char}}.|Be {{char}}.");
    e.char_prompt = "Card prompt for {{user}}";
    expect(&e, "{{systemPrompt}}|{{charPrompt}}", "Card prompt for Ann|Card prompt for Ann");
    json_object_set_new(sys, "enabled", json_false());
    expect(&e, "[{{systemPrompt}}{{defaultSystemPrompt}}]", "[]");
    e.max_context = 8192;
    e.max_response = 300;
    expect(&e, "{{maxContext}}|{{maxContextTokens}}|{{maxResponse}}|{{maxPrompt}}|{{maxPromptTokens}}",
           "8192|8192|300|7892|7892");
    e.summary = "so far";
    e.authors_note = "AN";
    expect(&e, "{{summary}}|{{authorsNote}}|[{{charAuthorsNote}}{{defaultAuthorsNote}}]", "so far|AN|[]");
    json_decref(ins);
    json_decref(sys);
}

static void chat_state_macros_are_turn_local(void **state)
{
    (void)state;
    cdsh_tavern_macro_env e = env_base();
    expect(&e, "[{{lastMessageId}}|{{allChatRange}}|{{lastSwipeId}}|{{firstIncludedMessageId}}]",
           "[|||]");
    e.last_message = "last one";
    e.last_user_message = "hello there";
    e.last_char_message = "greetings";
    e.last_message_id = 41;
    e.chat_length = 42;
    e.has_swipes = e.has_first_included = true;
    e.swipes = 3;
    e.swipe_id = 1;
    e.first_included_id = 7;
    e.generation_type = "continue";
    e.input = "typed";
    expect(&e, "{{lastUserMessage}}/{{lastCharMessage}}/{{lastMessage}}/{{lastMessageId}}",
           "hello there/greetings/last one/41");
    expect(&e, "{{allChatRange}}|{{lastSwipeId}}|{{currentSwipeId}}|{{firstIncludedMessageId}}",
           "0-41|3|2|7");
    expect(&e, "{{lastGenerationType}}|{{input}}", "continue|typed");
    assert_true(e.flags & CDSH_TAVERN_MACRO_TURN_LOCAL);
    e.idle_since_ms = e.now_ms - 3 * 3600000LL;
    expect(&e, "{{idleDuration}}|{{idle_duration}}", "3 hours|3 hours");
    e.idle_since_ms = 0;
    expect(&e, "{{idleDuration}}", "just now");
    assert_true(cdsh_tavern_macros_turn_local("a {{random::1::2}}"));
    assert_true(cdsh_tavern_macros_turn_local("{{LastUserMessage}}"));
    assert_true(cdsh_tavern_macros_turn_local("{{ #time }}"));
    assert_true(cdsh_tavern_macros_turn_local("{{time_UTC+2}}"));
    assert_false(cdsh_tavern_macros_turn_local("{{char}} {{user}} {{getvar::x}}"));
}

static void outlets_are_inserted_without_reexpansion(void **state)
{
    (void)state;
    json_t *outlets = json_pack("{s:s, s:s}", "lore", "L({{outlet::lore}})", "x", "{{user}}");
    cdsh_tavern_macro_env e = env_base();
    e.outlets = outlets;
    expect(&e, "<{{outlet::lore}}>{{outlet::none}}{{outlet::x}}", "<L({{outlet::lore}})>{{user}}");
    assert_true(e.flags & CDSH_TAVERN_MACRO_TURN_LOCAL);
    json_decref(outlets);
}

static void clock_follows_the_timezone_and_freezes(void **state)
{
    (void)state;
    cdsh_tavern_macro_env e = env_base();
    e.tz_offset_min = 60;
    expect(&e, "{{time}}|{{isotime}}|{{time::UTC+2}}", "2:05 PM|14:05|3:05 PM");
    e.clock_frozen = true;
    expect(&e, "[{{time}}{{date}}{{weekday}}{{datetimeformat::YYYY}}{{idleDuration}}]", "[]");
    assert_true(e.flags & CDSH_TAVERN_MACRO_TURN_LOCAL);
}

static void random_and_roll_replay_the_turn_seed(void **state)
{
    (void)state;
    const char *t = "{{random::a::b::c::d::e::f::g}}{{random:1,2,3,4,5,6,7,8,9}}{{roll:3d6+1}}";
    cdsh_tavern_macro_env e1 = env_base(), e2 = env_base();
    char *a = cdsh_tavern_macros_expand_dup(t, &e1);
    char *b = cdsh_tavern_macros_expand_dup(t, &e2);
    assert_string_equal(a, b);
    assert_true(e1.flags & CDSH_TAVERN_MACRO_TURN_LOCAL);
    int differ = 0;
    for (uint32_t s = 1; s < 20; s++) {
        cdsh_tavern_macro_env e3 = env_base();
        e3.seed = s;
        char *c = cdsh_tavern_macros_expand_dup(t, &e3);
        differ += strcmp(c, a) != 0;
        free(c);
    }
    assert_true(differ > 0);
    free(a);
    free(b);
    /* {{roll}} draws Math.random's stream: mulberry32 from the seed. */
    cdsh_tavern_macro_env e = env_base();
    cdsh_tavern_rng rng;
    cdsh_tavern_rng_init(&rng, e.seed);
    int d1 = 1 + (int)(cdsh_tavern_rng_next(&rng) * 20);
    int d2 = 1 + (int)(cdsh_tavern_rng_next(&rng) * 6);
    char want[32];
    snprintf(want, sizeof want, "%d|%d", d1, d2);
    expect(&e, "{{roll::1d20}}|{{roll::6}}", want);
    for (uint32_t s = 0; s < 50; s++) {
        cdsh_tavern_macro_env r = env_base();
        r.seed = s;
        char *o = cdsh_tavern_macros_expand_dup("{{random: x\\,y , z }}|{{roll:2d6}}", &r);
        assert_true(!strncmp(o, "x,y|", 4) || !strncmp(o, "z|", 2));
        int v = atoi(strchr(o, '|') + 1);
        assert_true(v >= 2 && v <= 12);
        free(o);
    }
}

static void registry_has_st_names_and_lists_what_stays_verbatim(void **state)
{
    (void)state;
    assert_int_equal(cdsh_tavern_macros_count(), 136);
    bool seen_comment = false, seen_greeting = false;
    for (size_t i = 0; i < cdsh_tavern_macros_count(); i++) {
        const char *n = cdsh_tavern_macros_name(i);
        assert_non_null(n);
        seen_comment |= !strcmp(n, "comment");
        seen_greeting |= !strcmp(n, "greeting");
    }
    assert_true(seen_comment && seen_greeting);
    assert_null(cdsh_tavern_macros_name(136));
    const char *why = NULL;
    assert_true(cdsh_tavern_macros_unsupported("charPrefix", &why));
    assert_non_null(strstr(why, "image"));
    assert_true(cdsh_tavern_macros_unsupported("LASTEXPRESSION", NULL));
    assert_false(cdsh_tavern_macros_unsupported("user", NULL));
    assert_false(cdsh_tavern_macros_unsupported("nosuch", NULL));

    cdsh_tavern_macro_env e = env_base();
    e.unknown = json_array();
    expect(&e, "{{charPrefix}} {{nosuch}} {{user}} {{nosuch}} {{space::x}}",
           "{{charPrefix}} {{nosuch}} Ann {{nosuch}} {{space::x}}");
    assert_true(e.flags & CDSH_TAVERN_MACRO_UNKNOWN);
    assert_int_equal(json_array_size(e.unknown), 3);
    assert_string_equal(json_string_value(json_array_get(e.unknown, 0)), "charPrefix");
    assert_string_equal(json_string_value(json_array_get(e.unknown, 1)), "nosuch");
    assert_string_equal(json_string_value(json_array_get(e.unknown, 2)), "space");
    /* No cap: 200 different unknown names are all listed. */
    char text[200 * 16];
    size_t o = 0;
    for (int i = 0; i < 200; i++)
        o += (size_t)snprintf(text + o, sizeof text - o, "{{unk%d}}", i);
    char *out = cdsh_tavern_macros_expand_dup(text, &e);
    assert_string_equal(out, text);
    free(out);
    assert_int_equal(json_array_size(e.unknown), 203);
    json_decref(e.unknown);
}

static void hostile_input_stays_bounded(void **state)
{
    (void)state;
    cdsh_tavern_macro_env e = env_base();
    e.vars_local = json_object();
    /* Doubling a variable 40 times would need 2^40 bytes. */
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    cdsh_strbuf_append_str(&sb, "{{setvar::a::xxxxxxxx}}");
    for (int i = 0; i < 40; i++)
        cdsh_strbuf_append_str(&sb, "{{setvar::a::{{getvar::a}}{{getvar::a}}}}");
    char *out = cdsh_tavern_macros_expand_dup(sb.data, &e);
    assert_non_null(out);
    assert_true(strlen(json_string_value(json_object_get(e.vars_local, "a"))) <=
                CDSH_TAVERN_MACRO_MAX_BYTES);
    assert_true(e.flags & CDSH_TAVERN_MACRO_TOO_BIG);
    free(out);
    cdsh_strbuf_deinit(&sb);
    /* 10 000 nested {{if}}s: the depth limit leaves the inner ones verbatim. */
    cdsh_strbuf_init(&sb);
    for (int i = 0; i < 10000; i++)
        cdsh_strbuf_append_str(&sb, "{{reverse::");
    for (int i = 0; i < 10000; i++)
        cdsh_strbuf_append_str(&sb, "}}");
    out = cdsh_tavern_macros_expand_dup(sb.data, &e);
    assert_non_null(out);
    free(out);
    cdsh_strbuf_deinit(&sb);
    expect(&e, "{{space::99999999999}}", "{{space::99999999999}}");
    expect(&e, "{{roll::99999999d6}}", "{{roll::99999999d6}}");
    json_decref(e.vars_local);
}

/* SillyTavern's guesstimate: ceil(UTF-8 bytes / 3.35) for every script. */
static void token_estimate_counts_utf8_bytes(void **state)
{
    (void)state;
    assert_int_equal(cdsh_tavern_tokens_count_str(""), 0);
    assert_int_equal(cdsh_tavern_tokens_count_str("abc"), 1);
    assert_int_equal(cdsh_tavern_tokens_count_str("abcd"), 2);
    assert_int_equal(cdsh_tavern_tokens_count_str("世界书"), 3);    /* 9 bytes */
    assert_int_equal(cdsh_tavern_tokens_count_str("世界 abc"), 3); /* 10 bytes */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(st_core_utilities),
        cmocka_unit_test(st_scoped_if_else_trim),
        cmocka_unit_test(st_variables),
        cmocka_unit_test(st_time),
        cmocka_unit_test(st_pick_and_roll),
        cmocka_unit_test(card_fields_are_expanded_once_like_st),
        cmocka_unit_test(instruct_and_prompt_macros_follow_the_settings),
        cmocka_unit_test(chat_state_macros_are_turn_local),
        cmocka_unit_test(outlets_are_inserted_without_reexpansion),
        cmocka_unit_test(clock_follows_the_timezone_and_freezes),
        cmocka_unit_test(random_and_roll_replay_the_turn_seed),
        cmocka_unit_test(registry_has_st_names_and_lists_what_stays_verbatim),
        cmocka_unit_test(hostile_input_stays_bounded),
        cmocka_unit_test(token_estimate_counts_utf8_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
