/* test_json.c — typed getters, deterministic output, bounded parsing, the
 * lossless check with paths, sanitising, snapshots, equality and the
 * string map. */
#include "support/testkit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/utf8.h"

static json_t *parse_ok(const char *text)
{
    cdsh_error err = {0};
    json_t *v = cdsh_json_parse(text, strlen(text), 0, &err);
    if (!v)
        fail_msg("parse failed: %s", err.message);
    return v;
}

static void getters_return_typed_values(void **state)
{
    (void)state;
    json_t *o =
        parse_ok("{\"s\":\"hi\",\"i\":-42,\"r\":2.5,\"b\":true,\"o\":{},\"a\":[1],\"f\":3.0}");
    const char *s = NULL;
    int64_t i = 0;
    double d = 0;
    bool b = false;
    json_t *sub = NULL;
    assert_int_equal(cdsh_json_get_string(o, "s", &s, NULL), 0);
    assert_string_equal(s, "hi");
    assert_int_equal(cdsh_json_get_int(o, "i", &i, NULL), 0);
    assert_int_equal(i, -42);
    assert_int_equal(cdsh_json_get_int(o, "f", &i, NULL), 0);
    assert_int_equal(i, 3);
    assert_int_equal(cdsh_json_get_number(o, "r", &d, NULL), 0);
    assert_true(d == 2.5);
    assert_int_equal(cdsh_json_get_number(o, "i", &d, NULL), 0);
    assert_true(d == -42.0);
    assert_int_equal(cdsh_json_get_bool(o, "b", &b, NULL), 0);
    assert_true(b);
    assert_int_equal(cdsh_json_get_object(o, "o", &sub, NULL), 0);
    assert_true(json_is_object(sub));
    assert_int_equal(cdsh_json_get_array(o, "a", &sub, NULL), 0);
    assert_int_equal(json_array_size(sub), 1);
    json_decref(o);
}

static void getter_missing_key_is_missing_field(void **state)
{
    (void)state;
    json_t *o = parse_ok("{}");
    cdsh_error err = {0};
    const char *s = NULL;
    assert_int_equal(cdsh_json_get_string(o, "name", &s, &err), CDSH_ENOTFOUND);
    assert_int_equal(err.rc, CDSH_ENOTFOUND);
    assert_string_equal(err.code, "MISSING_FIELD");
    assert_string_equal(err.message, "missing field \"name\"");
    json_decref(o);
}

static void getter_wrong_type_is_bad_field(void **state)
{
    (void)state;
    json_t *o = parse_ok("{\"x\":1.5,\"n\":null,\"s\":\"a\"}");
    cdsh_error err = {0};
    const char *s;
    int64_t i;
    bool b;
    json_t *sub;
    double d;
    assert_int_equal(cdsh_json_get_string(o, "x", &s, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "BAD_FIELD");
    assert_string_equal(err.message, "field \"x\" must be a string");
    assert_int_equal(cdsh_json_get_int(o, "x", &i, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "field \"x\" must be an integer");
    assert_int_equal(cdsh_json_get_bool(o, "n", &b, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "field \"n\" must be a boolean");
    assert_int_equal(cdsh_json_get_object(o, "s", &sub, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "field \"s\" must be an object");
    assert_int_equal(cdsh_json_get_array(o, "s", &sub, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "field \"s\" must be an array");
    assert_int_equal(cdsh_json_get_number(o, "s", &d, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "field \"s\" must be a number");
    json_decref(o);
}

static void getter_refuses_non_object_and_nul_strings(void **state)
{
    (void)state;
    cdsh_error err = {0};
    const char *s;
    json_t *arr = json_array();
    assert_int_equal(cdsh_json_get_string(arr, "k", &s, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "BAD_FIELD");
    assert_string_equal(err.message, "cannot read field \"k\": the value is not a JSON object");
    assert_int_equal(cdsh_json_get_string(NULL, "k", &s, &err), CDSH_EINVAL);
    json_t *o = json_object();
    json_object_set_new(o, "z", json_stringn("a\0b", 3));
    assert_int_equal(cdsh_json_get_string(o, "z", &s, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "field \"z\" must be a string without NUL characters");
    json_decref(o);
    json_decref(arr);
}

static void int_getter_refuses_fractional_and_out_of_range_reals(void **state)
{
    (void)state;
    json_t *o = parse_ok("{\"big\":1e19,\"frac\":0.5}");
    int64_t i = 7;
    assert_int_equal(cdsh_json_get_int(o, "big", &i, NULL), CDSH_EINVAL);
    assert_int_equal(cdsh_json_get_int(o, "frac", &i, NULL), CDSH_EINVAL);
    assert_int_equal(i, 7);
    json_decref(o);
}

static void optional_getters_default_on_missing_or_null(void **state)
{
    (void)state;
    json_t *o = parse_ok("{\"n\":null,\"i\":5,\"s\":3}");
    const char *s = NULL;
    int64_t i = 0;
    double d = 0;
    bool b = false;
    cdsh_error err = {0};
    assert_int_equal(cdsh_json_opt_string(o, "missing", "dflt", &s, NULL), 0);
    assert_string_equal(s, "dflt");
    assert_int_equal(cdsh_json_opt_int(o, "n", 9, &i, NULL), 0);
    assert_int_equal(i, 9);
    assert_int_equal(cdsh_json_opt_int(o, "i", 9, &i, NULL), 0);
    assert_int_equal(i, 5);
    assert_int_equal(cdsh_json_opt_number(o, "none", 1.5, &d, NULL), 0);
    assert_true(d == 1.5);
    assert_int_equal(cdsh_json_opt_bool(o, "none", true, &b, NULL), 0);
    assert_true(b);
    assert_int_equal(cdsh_json_opt_string(o, "s", "dflt", &s, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "BAD_FIELD");
    assert_string_equal(err.message, "field \"s\" must be a string");
    json_decref(o);
}

static void compact_output_keeps_order_utf8_and_slashes(void **state)
{
    (void)state;
    json_t *o = json_object();
    json_object_set_new(o, "z", json_integer(1));
    json_object_set_new(o, "a", json_string("é/中\n\"\x01"));
    json_object_set_new(o, "m", json_pack("[n,b,b,{}]", 1, 0));
    char *s = cdsh_json_dump_compact_dup(o);
    assert_string_equal(s, "{\"z\":1,\"a\":\"é/中\\n\\\"\\u0001\",\"m\":[null,true,false,{}]}");
    free(s);
    json_decref(o);
}

static void pretty_output_indents_two_spaces_with_newline(void **state)
{
    (void)state;
    json_t *o = parse_ok("{\"a\":[1,{\"b\":[]}],\"c\":{}}");
    char *s = cdsh_json_dump_pretty_dup(o);
    assert_string_equal(s, "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ],\n"
                           "  \"c\": {}\n}\n");
    free(s);
    json_decref(o);
}

static void reals_print_shortest_round_trip(void **state)
{
    (void)state;
    static const struct {
        double d;
        const char *text;
    } cases[] = {{0.1, "0.1"},
                 {1.0, "1.0"},
                 {-0.0, "-0.0"},
                 {1e300, "1e+300"},
                 {2.5, "2.5"},
                 {1.0 / 3, "0.3333333333333333"},
                 {100.0, "100.0"},
                 {5e-324, "5e-324"},
                 {123456789012.5, "123456789012.5"},
                 {1e21, "1e+21"},
                 {1e20, "100000000000000000000.0"},
                 {1e-7, "1e-7"},
                 {0.000001, "0.000001"},
                 {-1.25e-10, "-1.25e-10"},
                 {1.7976931348623157e308, "1.7976931348623157e+308"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *r = json_real(cases[i].d);
        char *s = cdsh_json_dump_compact_dup(r);
        assert_string_equal(s, cases[i].text);
        json_t *back = parse_ok(s);
        assert_true(json_is_real(back));
        assert_true(json_real_value(back) == cases[i].d);
        json_decref(back);
        free(s);
        json_decref(r);
    }
}

static void format_double_follows_javascript(void **state)
{
    (void)state;
    static const struct {
        double d;
        bool keep_real;
        const char *text;
    } cases[] = {
        {100.0, false, "100"},     {100.0, true, "100.0"},      {-0.0, false, "0"},
        {-0.0, true, "-0.0"},      {0.5, false, "0.5"},         {1e21, false, "1e+21"},
        {1.5e-7, false, "1.5e-7"}, {123e-20, true, "1.23e-18"}, {-42.125, false, "-42.125"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char out[CDSH_JSON_DOUBLE_MAX];
        size_t n = cdsh_json_format_double(cases[i].d, cases[i].keep_real, out);
        assert_string_equal(out, cases[i].text);
        assert_int_equal(n, strlen(cases[i].text));
    }
    char out[CDSH_JSON_DOUBLE_MAX] = "x";
    assert_int_equal(cdsh_json_format_double(NAN, false, out), 0);
    assert_string_equal(out, "");
    assert_int_equal(cdsh_json_format_double(-INFINITY, true, out), 0);
    /* the longest outputs fit */
    assert_true(cdsh_json_format_double(-1.2345678901234567e-300, true, out) <
                CDSH_JSON_DOUBLE_MAX);
    assert_true(cdsh_json_format_double(-123456789012345678901.0, true, out) <
                CDSH_JSON_DOUBLE_MAX);
    assert_true(cdsh_json_format_double(-0.0000012345678901234567, true, out) <
                CDSH_JSON_DOUBLE_MAX);
}

static void dump_refuses_invalid_utf8_and_cycles(void **state)
{
    (void)state;
    json_t *bad = json_stringn_nocheck("a\xff", 2);
    assert_null(cdsh_json_dump_compact_dup(bad));
    assert_null(cdsh_json_dump_pretty_dup(bad));
    json_decref(bad);
    json_t *a = json_array();
    json_t *b = json_array();
    json_array_append(a, b);
    json_array_append(b, a); /* cycle */
    assert_null(cdsh_json_dump_compact_dup(a));
    json_array_clear(b);
    json_decref(b);
    json_decref(a);
    assert_null(cdsh_json_dump_compact_dup(NULL));
}

static void parse_accepts_scalars_and_trailing_whitespace(void **state)
{
    (void)state;
    json_t *v = parse_ok(" 42 \n");
    assert_int_equal(json_integer_value(v), 42);
    json_decref(v);
    v = parse_ok("\"x\"");
    assert_string_equal(json_string_value(v), "x");
    json_decref(v);
}

static void parse_rejects_duplicate_keys_with_position(void **state)
{
    (void)state;
    cdsh_error err = {0};
    const char *text = "{\"a\":1,\n \"a\":2}";
    assert_null(cdsh_json_parse(text, strlen(text), 0, &err));
    assert_int_equal(err.rc, CDSH_EINVAL);
    assert_string_equal(err.code, "BAD_JSON");
    assert_non_null(strstr(err.message, "invalid JSON at line 2, column "));
    assert_non_null(strstr(err.message, "duplicate object key"));
}

static void parse_reports_line_and_column_of_syntax_errors(void **state)
{
    (void)state;
    cdsh_error err = {0};
    const char *text = "{\n  \"a\": tru\n}";
    assert_null(cdsh_json_parse(text, strlen(text), 0, &err));
    assert_string_equal(err.code, "BAD_JSON");
    assert_non_null(strstr(err.message, "invalid JSON at line 2, column "));
    const char *trailing = "{} x";
    assert_null(cdsh_json_parse(trailing, strlen(trailing), 0, &err));
    assert_non_null(strstr(err.message, "line 1"));
    assert_null(cdsh_json_parse("", 0, 0, &err));
    assert_string_equal(err.code, "BAD_JSON");
}

static void parse_error_messages_are_valid_utf8_without_controls(void **state)
{
    (void)state;
    cdsh_error err = {0};
    const char *text = "[1\x01]"; /* jansson quotes the control byte */
    assert_null(cdsh_json_parse(text, strlen(text), 0, &err));
    assert_string_equal(err.code, "BAD_JSON");
    assert_string_equal(err.message, "invalid JSON at line 1, column 3: ']' expected near '?'");
    assert_true(cdsh_utf8_valid(err.message, strlen(err.message)));
    for (const char *c = err.message; *c; c++)
        assert_true((unsigned char)*c >= 0x20);
}

static void lossless_shortens_very_long_paths_on_character_boundaries(void **state)
{
    (void)state;
    /* a path of 300 bytes of 3-byte characters, then a bad string */
    char key[301];
    for (int i = 0; i < 100; i++)
        memcpy(key + 3 * i, "中", 3);
    key[300] = '\0';
    json_t *v = json_object();
    json_t *inner = json_object();
    json_object_set_new(v, key, inner);
    json_object_set_new(inner, "x", json_stringn_nocheck("\xff", 1));
    cdsh_error err = {0};
    assert_int_equal(cdsh_json_check_lossless(v, NULL, &err), CDSH_EINVAL);
    assert_true(cdsh_utf8_valid(err.message, strlen(err.message)));
    assert_non_null(strstr(err.message, "..."));
    assert_int_equal(strncmp(err.message, "value[\"中中", 12), 0);
    assert_non_null(strstr(err.message, "中\"].x is not valid UTF-8"));
    json_decref(v);
}

static void parse_enforces_size_limit(void **state)
{
    (void)state;
    cdsh_error err = {0};
    const char *text = "[1,2,3]";
    assert_null(cdsh_json_parse(text, 7, 6, &err));
    assert_int_equal(err.rc, CDSH_ETOOBIG);
    assert_string_equal(err.code, "BAD_JSON");
    assert_string_equal(err.message, "JSON text is 7 bytes, over the limit of 6 bytes");
    json_t *v = cdsh_json_parse(text, 7, 7, &err);
    assert_non_null(v);
    json_decref(v);
}

static void parse_enforces_depth_512(void **state)
{
    (void)state;
    char text[2 * 513 + 1];
    for (int i = 0; i < 512; i++) {
        text[i] = '[';
        text[512 + i] = ']';
    }
    json_t *v = cdsh_json_parse(text, 1024, 0, NULL);
    assert_non_null(v);
    json_decref(v);
    memset(text, '[', 513);
    memset(text + 513, ']', 513);
    cdsh_error err = {0};
    assert_null(cdsh_json_parse(text, 1026, 0, &err));
    assert_string_equal(err.message,
                        "invalid JSON at line 1, column 513: nesting deeper than 512 levels");
    /* brackets inside strings do not count */
    const char *s = "[\"[[[[\\\"[[[\"]";
    v = parse_ok(s);
    json_decref(v);
}

static void parse_rejects_invalid_utf8_and_nul_escape(void **state)
{
    (void)state;
    cdsh_error err = {0};
    assert_null(cdsh_json_parse("\"\xc0\xaf\"", 4, 0, &err));
    assert_string_equal(err.code, "BAD_JSON");
    assert_null(cdsh_json_parse("\"a\\u0000b\"", 10, 0, &err));
    assert_string_equal(err.code, "BAD_JSON");
}

static void lossless_accepts_clean_values(void **state)
{
    (void)state;
    json_t *v = parse_ok("{\"a\":[1,2.5,\"中\",{\"b\":null}]}");
    cdsh_error err = {0};
    assert_int_equal(cdsh_json_check_lossless(v, NULL, &err), 0);
    json_decref(v);
}

static void lossless_names_path_of_invalid_utf8(void **state)
{
    (void)state;
    json_t *v = parse_ok("{\"items\":[{},{},{\"name\":\"ok\"}]}");
    json_t *item = json_array_get(json_object_get(v, "items"), 2);
    json_object_set_new(item, "name", json_stringn_nocheck("bad\xe2\x82", 5));
    cdsh_error err = {0};
    assert_int_equal(cdsh_json_check_lossless(v, NULL, &err), CDSH_EINVAL);
    assert_int_equal(err.rc, CDSH_EINVAL);
    assert_string_equal(err.code, "NOT_LOSSLESS");
    assert_string_equal(err.message, "value.items[2].name is not valid UTF-8");
    assert_int_equal(cdsh_json_check_lossless(v, "arguments", &err), CDSH_EINVAL);
    assert_string_equal(err.message, "arguments.items[2].name is not valid UTF-8");
    json_decref(v);
}

static void lossless_reports_nul_bad_keys_and_quoted_paths(void **state)
{
    (void)state;
    cdsh_error err = {0};
    json_t *v = json_object();
    json_t *inner = json_object();
    json_object_set_new(v, "a b", inner);
    json_object_set_new(inner, "x", json_stringn("a\0", 2));
    assert_int_equal(cdsh_json_check_lossless(v, NULL, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "value[\"a b\"].x contains a NUL character");
    json_decref(v);

    v = json_object();
    json_object_setn_nocheck(v, "k\xff", 2, json_true());
    assert_int_equal(cdsh_json_check_lossless(v, "result", &err), CDSH_EINVAL);
    assert_string_equal(err.message, "result has a key that is not valid UTF-8");
    json_decref(v);
}

static json_t *nest(int depth)
{
    json_t *v = json_integer(1);
    for (int i = 0; i < depth; i++) {
        json_t *a = json_array();
        json_array_append_new(a, v);
        v = a;
    }
    return v;
}

static void lossless_limits_depth(void **state)
{
    (void)state;
    cdsh_error err = {0};
    json_t *ok = nest(512);
    assert_int_equal(cdsh_json_check_lossless(ok, NULL, &err), 0);
    json_t *deep = nest(513);
    assert_int_equal(cdsh_json_check_lossless(deep, NULL, &err), CDSH_EINVAL);
    assert_non_null(strstr(err.message, "is nested deeper than 512 levels"));
    assert_int_equal(strncmp(err.message, "value[0][0]", 11), 0);
    json_t *clean = cdsh_json_sanitize_dup(deep);
    assert_int_equal(cdsh_json_check_lossless(clean, NULL, NULL), 0);
    json_decref(clean);
    json_decref(ok);
    json_decref(deep);
}

static void sanitize_replaces_bad_utf8_and_drops_nul(void **state)
{
    (void)state;
    json_t *v = json_object();
    json_object_set_new(v, "s", json_stringn_nocheck("a\xffz\0b\xe2\x82", 7));
    json_object_setn_new_nocheck(v, "k\xc0", 2, json_integer(3));
    json_object_set_new(v, "r", json_real(1.5));
    json_t *clean = cdsh_json_sanitize_dup(v);
    assert_non_null(clean);
    assert_int_equal(cdsh_json_check_lossless(clean, NULL, NULL), 0);
    assert_string_equal(json_string_value(json_object_get(clean, "s")),
                        "a\xef\xbf\xbdzb\xef\xbf\xbd");
    assert_int_equal(json_integer_value(json_object_get(clean, "k\xef\xbf\xbd")), 3);
    assert_true(json_real_value(json_object_get(clean, "r")) == 1.5);
    char *s = cdsh_json_dump_compact_dup(clean);
    assert_string_equal(s, "{\"s\":\"a\xef\xbf\xbdzb\xef\xbf\xbd\",\"k\xef\xbf\xbd\":3,\"r\":1.5}");
    free(s);
    /* the original is untouched */
    assert_int_equal(json_string_length(json_object_get(v, "s")), 7);
    json_decref(clean);
    json_decref(v);
}

static void snapshot_copies_lossless_values_only(void **state)
{
    (void)state;
    json_t *v = parse_ok("{\"a\":[1,\"x\"]}");
    cdsh_error err = {0};
    json_t *snap = cdsh_json_snapshot_dup(v, "arguments", &err);
    assert_non_null(snap);
    assert_ptr_not_equal(snap, v);
    json_array_append_new(json_object_get(v, "a"), json_true());
    assert_int_equal(json_array_size(json_object_get(snap, "a")), 2);
    json_decref(snap);
    json_array_append_new(json_object_get(v, "a"), json_stringn_nocheck("\xff", 1));
    assert_null(cdsh_json_snapshot_dup(v, "arguments", &err));
    assert_string_equal(err.code, "NOT_LOSSLESS");
    assert_string_equal(err.message, "arguments.a[3] is not valid UTF-8");
    json_decref(v);
}

static void equal_ignores_key_order_and_int_real_difference(void **state)
{
    (void)state;
    json_t *a = parse_ok("{\"x\":1,\"y\":[true,\"s\",{\"z\":null}]}");
    json_t *b = parse_ok("{\"y\":[true,\"s\",{\"z\":null}],\"x\":1.0}");
    json_t *c = parse_ok("{\"y\":[true,\"s\",{\"z\":null}],\"x\":1.5}");
    json_t *d = parse_ok("{\"y\":[true,\"s\",{\"z\":null}],\"x\":1,\"w\":0}");
    assert_true(cdsh_json_equal(a, b));
    assert_false(cdsh_json_equal(a, c));
    assert_false(cdsh_json_equal(a, d));
    assert_false(cdsh_json_equal(a, NULL));
    assert_true(cdsh_json_equal(NULL, NULL));
    json_t *s1 = json_stringn("a\0b", 3), *s2 = json_stringn("a\0c", 3);
    assert_false(cdsh_json_equal(s1, s2));
    json_t *big = json_integer(9007199254740993LL), *bigr = json_real(9007199254740992.0);
    assert_false(cdsh_json_equal(big, bigr));
    json_decref(s1);
    json_decref(s2);
    json_decref(big);
    json_decref(bigr);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(d);
}

static void str_reads_strings_and_nothing_else(void **state)
{
    (void)state;
    json_t *o =
        json_pack("{s:s, s:s, s:i, s:n, s:[s]}", "a", "x", "empty", "", "n", 3, "z", "arr", "y");
    assert_string_equal(cdsh_json_str(o, "a"), "x");
    assert_string_equal(cdsh_json_str(o, "empty"), "");
    assert_null(cdsh_json_str(o, "n"));
    assert_null(cdsh_json_str(o, "z"));
    assert_null(cdsh_json_str(o, "arr"));
    assert_null(cdsh_json_str(o, "missing"));
    assert_null(cdsh_json_str(NULL, "a"));
    assert_null(cdsh_json_str(json_object_get(o, "arr"), "a"));
    assert_string_equal(cdsh_json_str_or(o, "a", "d"), "x");
    assert_string_equal(cdsh_json_str_or(o, "empty", "d"), ""); /* present, so not the default */
    assert_string_equal(cdsh_json_str_or(o, "n", "d"), "d");
    assert_string_equal(cdsh_json_str_or(NULL, "a", ""), "");
    assert_null(cdsh_json_str_or(o, "missing", NULL));
    json_decref(o);
}

/* Upper-cases a string and counts the calls; fails (NULL) on "boom". */
static char *upper(void *ud, const char *s, size_t n, size_t *out_n)
{
    ++*(int *)ud;
    if (n == 4 && memcmp(s, "boom", 4) == 0)
        return NULL;
    char *t = malloc(n + 1);
    for (size_t i = 0; t && i < n; i++)
        t[i] = (char)(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 32 : s[i]);
    if (t)
        t[n] = '\0';
    *out_n = n;
    return t;
}

static void map_strings_maps_every_string_value_and_nothing_else(void **state)
{
    (void)state;
    json_t *v = parse_ok("{\"key\": \"abc\", \"n\": 1, \"r\": 2.5, \"t\": true, \"z\": null,"
                         " \"list\": [\"x\", {\"deep\": \"y\"}, [], {}]}");
    json_object_set_new(v, "nul", json_stringn("a\0b", 3)); /* the parser refuses NUL */
    int calls = 0;
    json_t *m = cdsh_json_map_strings(v, upper, &calls, 10, "[DEEP]");
    assert_non_null(m);
    assert_int_equal(calls, 4); /* abc, x, y, a\0b: keys are not mapped */
    char *dump = json_dumps(m, JSON_COMPACT);
    assert_string_equal(dump, "{\"key\":\"ABC\",\"n\":1,\"r\":2.5,\"t\":true,\"z\":null,"
                              "\"list\":[\"X\",{\"deep\":\"Y\"},[],{}],\"nul\":\"A\\u0000B\"}");
    free(dump);
    /* a copy: the input is untouched and nothing is shared but the singletons */
    assert_string_equal(json_string_value(json_object_get(v, "key")), "abc");
    assert_ptr_not_equal(json_object_get(m, "n"), json_object_get(v, "n"));
    assert_ptr_equal(json_object_get(m, "t"), json_true());
    json_decref(m);
    /* a failing string fails the whole copy */
    json_t *bad = parse_ok("[\"ok\", [\"boom\"]]");
    assert_null(cdsh_json_map_strings(bad, upper, &calls, 10, "[DEEP]"));
    json_decref(bad);
    assert_null(cdsh_json_map_strings(NULL, upper, &calls, 10, "[DEEP]"));
    /* a bare string is mapped too */
    json_t *s = json_string("top");
    json_t *ms = cdsh_json_map_strings(s, upper, &calls, 0, "[DEEP]");
    assert_string_equal(json_string_value(ms), "TOP");
    json_decref(ms), json_decref(s);
    json_decref(v);
}

static void map_strings_cuts_values_deeper_than_the_limit(void **state)
{
    (void)state;
    /* depth: the array 0, "a" and the inner array 1, "b" and [[]] 2, [] 3 */
    json_t *v = parse_ok("[\"a\", [\"b\", [[]]]]");
    int calls = 0;
    json_t *m = cdsh_json_map_strings(v, upper, &calls, 2, "[DEEP]");
    char *dump = json_dumps(m, JSON_COMPACT);
    assert_string_equal(dump, "[\"A\",[\"B\",[\"[DEEP]\"]]]");
    free(dump);
    json_decref(m);
    m = cdsh_json_map_strings(v, upper, &calls, 1, "[DEEP]");
    dump = json_dumps(m, JSON_COMPACT);
    assert_string_equal(dump, "[\"A\",[\"[DEEP]\",\"[DEEP]\"]]"); /* leaves too */
    free(dump);
    json_decref(m);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(getters_return_typed_values),
        cmocka_unit_test(getter_missing_key_is_missing_field),
        cmocka_unit_test(getter_wrong_type_is_bad_field),
        cmocka_unit_test(getter_refuses_non_object_and_nul_strings),
        cmocka_unit_test(int_getter_refuses_fractional_and_out_of_range_reals),
        cmocka_unit_test(optional_getters_default_on_missing_or_null),
        cmocka_unit_test(compact_output_keeps_order_utf8_and_slashes),
        cmocka_unit_test(pretty_output_indents_two_spaces_with_newline),
        cmocka_unit_test(reals_print_shortest_round_trip),
        cmocka_unit_test(format_double_follows_javascript),
        cmocka_unit_test(dump_refuses_invalid_utf8_and_cycles),
        cmocka_unit_test(parse_accepts_scalars_and_trailing_whitespace),
        cmocka_unit_test(parse_rejects_duplicate_keys_with_position),
        cmocka_unit_test(parse_reports_line_and_column_of_syntax_errors),
        cmocka_unit_test(parse_error_messages_are_valid_utf8_without_controls),
        cmocka_unit_test(lossless_shortens_very_long_paths_on_character_boundaries),
        cmocka_unit_test(parse_enforces_size_limit),
        cmocka_unit_test(parse_enforces_depth_512),
        cmocka_unit_test(parse_rejects_invalid_utf8_and_nul_escape),
        cmocka_unit_test(lossless_accepts_clean_values),
        cmocka_unit_test(lossless_names_path_of_invalid_utf8),
        cmocka_unit_test(lossless_reports_nul_bad_keys_and_quoted_paths),
        cmocka_unit_test(lossless_limits_depth),
        cmocka_unit_test(sanitize_replaces_bad_utf8_and_drops_nul),
        cmocka_unit_test(snapshot_copies_lossless_values_only),
        cmocka_unit_test(equal_ignores_key_order_and_int_real_difference),
        cmocka_unit_test(str_reads_strings_and_nothing_else),
        cmocka_unit_test(map_strings_maps_every_string_value_and_nothing_else),
        cmocka_unit_test(map_strings_cuts_values_deeper_than_the_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
