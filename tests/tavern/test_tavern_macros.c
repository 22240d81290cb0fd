/* test_tavern_macros.c — the macro expander: every macro family of
 * formats §4 / liketavern §11, innermost-first order, pass limit, unknown
 * macros, per-turn seeding and the turn-local flag. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/tavern/macros.h"
#include "plugins/tavern/tokens.h"

static cdsh_tavern_macro_env env_base(void)
{
    cdsh_tavern_macro_env e = {0};
    e.user = "Ann";
    e.chr = "Seraphina";
    e.description = "A guardian of {{user}}'s forest.";
    e.personality = "kind";
    e.scenario = "glade";
    e.persona = "a traveller";
    e.first_message = "Welcome.";
    e.last_message = "last one";
    e.last_user_message = "hello there";
    e.last_char_message = "greetings";
    e.last_message_id = 41;
    e.chat_id = "chat-1";
    e.now_ms = 1767225600000LL + 13 * 3600000LL + 5 * 60000LL; /* 2026-01-01 13:05 UTC, Thu */
    e.seed = 1234;
    return e;
}

static void expect(cdsh_tavern_macro_env *e, const char *in, const char *want)
{
    char *out = cdsh_tavern_macros_expand_dup(in, e);
    assert_non_null(out);
    assert_string_equal(out, want);
    free(out);
}

static void identity_and_card_macros_expand(void **state)
{
    (void)state;
    cdsh_tavern_macro_env e = env_base();
    expect(&e, "{{char}} meets {{user}}", "Seraphina meets Ann");
    expect(&e, "{{CHAR}}/{{User}}", "Seraphina/Ann");
    expect(&e, "<USER> and <bot> and <CHAR>", "Ann and Seraphina and Seraphina");
    expect(&e, "{{description}}", "A guardian of Ann's forest.");
    expect(&e, "{{personality}}|{{scenario}}|{{persona}}|{{firstMessage}}",
           "kind|glade|a traveller|Welcome.");
    assert_int_equal(e.flags & CDSH_TAVERN_MACRO_TURN_LOCAL, 0);
}

static void formatting_macros_newline_trim_noop_comment(void **state)
{
    (void)state;
    cdsh_tavern_macro_env e = env_base();
    expect(&e, "a{{newline}}b", "a\nb");
    expect(&e, "a\n\n{{trim}}\nb", "ab");
    expect(&e, "x{{noop}}y", "xy");
    expect(&e, "x{{// a comment\nspanning lines}}y", "xy");
    expect(&e, "{{reverse:abc}}", "cba");
}

static void unknown_macros_stay_verbatim_and_are_listed(void **state)
{
    (void)state;
    cdsh_tavern_macro_env e = env_base();
    e.unknown = json_array();
    expect(&e, "{{nosuch}} {{char}} {{other::x}}", "{{nosuch}} Seraphina {{other::x}}");
    assert_true(e.flags & CDSH_TAVERN_MACRO_UNKNOWN);
    assert_int_equal(json_array_size(e.unknown), 2);
    assert_string_equal(json_string_value(json_array_get(e.unknown, 0)), "nosuch");
    json_decref(e.unknown);
}

static void variables_local_and_global_scopes(void **state)
{
    (void)state;
    cdsh_tavern_macro_env e = env_base();
    e.vars_local = json_object();
    e.vars_global = json_object();
    expect(&e, "{{setvar::hp::10}}{{getvar::hp}}", "10");
    expect(&e, "{{addvar::hp::5}}{{getvar::hp}}", "15");
    expect(&e, "{{incvar::hp}}", "16");
    expect(&e, "{{decvar::hp}}{{decvar::hp}}", "1514");
    expect(&e, "{{addvar::name::Bo}}{{addvar::name::b}}{{getvar::name}}", "Bob");
    expect(&e, "{{setglobalvar::g::x}}{{getvar::g}}|{{getglobalvar::g}}", "|x");
    expect(&e, "{{incglobalvar::n}}{{incglobalvar::n}}", "12");
    assert_string_equal(json_string_value(json_object_get(e.vars_local, "name")), "Bob");
    assert_int_equal(json_integer_value(json_object_get(e.vars_global, "n")), 2);
    /* setvar runs before getvar of the same pass even when written after it. */
    expect(&e, "{{getvar::late}}{{setvar::late::now}}", "now");
    /* Nested: the inner macro expands first. */
    expect(&e, "{{setvar::who::{{user}}}}{{getvar::who}}", "Ann");
    assert_true(e.flags & CDSH_TAVERN_MACRO_VARS);
    json_decref(e.vars_local);
    json_decref(e.vars_global);
}

static void random_is_seeded_per_turn(void **state)
{
    (void)state;
    const char *t = "{{random::a::b::c::d::e::f::g}}{{random:1,2,3,4,5,6,7,8,9}}{{roll:3d6+1}}";
    cdsh_tavern_macro_env e1 = env_base(), e2 = env_base(), e3 = env_base();
    char *a = cdsh_tavern_macros_expand_dup(t, &e1);
    char *b = cdsh_tavern_macros_expand_dup(t, &e2);
    assert_string_equal(a, b);
    assert_true(e1.flags & CDSH_TAVERN_MACRO_TURN_LOCAL);
    /* Over many seeds the results differ at least once. */
    int differ = 0;
    for (uint32_t s = 1; s < 20; s++) {
        e3 = env_base();
        e3.seed = s;
        char *c = cdsh_tavern_macros_expand_dup(t, &e3);
        differ += strcmp(c, a) != 0;
        free(c);
    }
    assert_true(differ > 0);
    free(a);
    free(b);
}

static void random_picks_from_the_list_only(void **state)
{
    (void)state;
    for (uint32_t s = 0; s < 50; s++) {
        cdsh_tavern_macro_env e = env_base();
        e.seed = s;
        char *o = cdsh_tavern_macros_expand_dup("{{random: x\\,y , z }}", &e);
        assert_true(!strcmp(o, "x,y") || !strcmp(o, "z"));
        free(o);
        o = cdsh_tavern_macros_expand_dup("{{roll:2d6}}", &e);
        int v = atoi(o);
        assert_true(v >= 2 && v <= 12);
        free(o);
        o = cdsh_tavern_macros_expand_dup("{{roll 20}}", &e);
        v = atoi(o);
        assert_true(v >= 1 && v <= 20);
        free(o);
    }
    cdsh_tavern_macro_env e = env_base();
    expect(&e, "[{{roll:banana}}]", "[]");
}

static void pick_is_stable_per_chat_and_text(void **state)
{
    (void)state;
    const char *t = "{{pick::a::b::c::d::e::f::g::h::i::j}}";
    cdsh_tavern_macro_env e1 = env_base(), e2 = env_base();
    e2.seed = 999; /* the turn seed does not move {{pick}} */
    char *a = cdsh_tavern_macros_expand_dup(t, &e1);
    char *b = cdsh_tavern_macros_expand_dup(t, &e2);
    assert_string_equal(a, b);
    int differ = 0;
    char id[32];
    for (int i = 0; i < 20; i++) {
        cdsh_tavern_macro_env e = env_base();
        snprintf(id, sizeof id, "chat-%d", i);
        e.chat_id = id;
        char *c = cdsh_tavern_macros_expand_dup(t, &e);
        differ += strcmp(c, a) != 0;
        free(c);
    }
    assert_true(differ > 0);
    free(a);
    free(b);
}

static void clock_macros_use_the_frozen_clock(void **state)
{
    (void)state;
    cdsh_tavern_macro_env e = env_base();
    expect(&e, "{{time}} {{date}} {{weekday}}", "13:05 2026-01-01 Thursday");
    expect(&e, "{{isotime}}|{{isodate}}|{{datetime}}", "13:05|2026-01-01|2026-01-01 13:05");
    expect(&e, "{{datetimeformat YYYY/MM/DD HH:mm dddd}}", "2026/01/01 13:05 Thursday");
    expect(&e, "{{time_UTC+2}}", "15:05");
    assert_true(e.flags & CDSH_TAVERN_MACRO_TURN_LOCAL);
    e.tz_offset_min = 60;
    expect(&e, "{{time}}", "14:05");
    e.clock_frozen = true;
    expect(&e, "[{{time}}{{date}}]", "[]");
}

static void last_messages_and_outlets_are_turn_local(void **state)
{
    (void)state;
    cdsh_tavern_macro_env e = env_base();
    expect(&e, "{{char}}", "Seraphina");
    assert_int_equal(e.flags & CDSH_TAVERN_MACRO_TURN_LOCAL, 0);
    expect(&e, "{{lastUserMessage}}/{{lastCharMessage}}/{{lastMessage}}/{{lastMessageId}}",
           "hello there/greetings/last one/41");
    assert_true(e.flags & CDSH_TAVERN_MACRO_TURN_LOCAL);
    json_t *outlets = json_pack("{s:s, s:s}", "lore", "L({{outlet::lore}})", "x", "{{user}}");
    e = env_base();
    e.outlets = outlets;
    /* Outlet text is inserted frozen: no nested outlet, no re-expansion. */
    expect(&e, "<{{outlet::lore}}>{{outlet::none}}{{outlet::x}}", "<L({{outlet::lore}})>{{user}}");
    assert_true(e.flags & CDSH_TAVERN_MACRO_TURN_LOCAL);
    json_decref(outlets);
    assert_true(cdsh_tavern_macros_turn_local("a {{random::1::2}}"));
    assert_true(cdsh_tavern_macros_turn_local("{{LastUserMessage}}"));
    assert_false(cdsh_tavern_macros_turn_local("{{char}} {{user}}"));
}

static void pass_limit_stops_deep_nesting(void **state)
{
    (void)state;
    cdsh_tavern_macro_env e = env_base();
    e.vars_local = json_object();
    /* Each pass resolves one level; a chain of getvar → name stays bounded. */
    json_object_set_new(e.vars_local, "a", json_string("{{getvar::a}}"));
    char *o = cdsh_tavern_macros_expand_dup("{{getvar::a}}", &e);
    assert_string_equal(o, "{{getvar::a}}");
    free(o);
    json_decref(e.vars_local);
    expect(&e, "{{original}}{{original}}", "");
    e.original = "O";
    expect(&e, "{{original}}+{{original}}", "O+");
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
        cmocka_unit_test(identity_and_card_macros_expand),
        cmocka_unit_test(formatting_macros_newline_trim_noop_comment),
        cmocka_unit_test(unknown_macros_stay_verbatim_and_are_listed),
        cmocka_unit_test(variables_local_and_global_scopes),
        cmocka_unit_test(random_is_seeded_per_turn),
        cmocka_unit_test(random_picks_from_the_list_only),
        cmocka_unit_test(pick_is_stable_per_chat_and_text),
        cmocka_unit_test(clock_macros_use_the_frozen_clock),
        cmocka_unit_test(last_messages_and_outlets_are_turn_local),
        cmocka_unit_test(pass_limit_stops_deep_nesting),
        cmocka_unit_test(token_estimate_counts_utf8_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
