/* test_schema.c — the JSON Schema subset: every keyword, every violation and
 * refusal message (DSH's forms), path printing, walk order, integer and
 * Unicode edge cases, and concurrent validation of one compiled schema. */
#include "support/testkit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/schema.h"

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v)
        fail_msg("bad test JSON %s: %s", text, e.text);
    return v;
}

static cdsh_schema *compile_ok(const char *schema_text)
{
    json_t *js = parse(schema_text);
    cdsh_schema *s = NULL;
    cdsh_error err = {0};
    int rc = cdsh_schema_compile(js, &s, &err);
    if (rc != 0)
        fail_msg("schema %s refused: %s", schema_text, err.message);
    json_decref(js);
    return s;
}

/* Joined violations of `value_text` (NULL when valid). Owned. */
static char *violations_of(const cdsh_schema *s, const char *value_text, const char *root)
{
    json_t *v = parse(value_text);
    json_t *violations = (json_t *)0x1;
    int rc = cdsh_schema_validate(s, v, root, &violations);
    json_decref(v);
    if (rc == 0) {
        assert_null(violations);
        return NULL;
    }
    assert_int_equal(rc, CDSH_EINVAL);
    assert_non_null(violations);
    assert_true(json_array_size(violations) > 0);
    char *joined = cdsh_schema_violations_join_dup(violations);
    json_decref(violations);
    return joined;
}

static void expect_valid(const char *schema_text, const char *value_text)
{
    cdsh_schema *s = compile_ok(schema_text);
    char *got = violations_of(s, value_text, "arguments");
    if (got)
        fail_msg("%s against %s: unexpected %s", value_text, schema_text, got);
    cdsh_schema_free(s);
}

static void expect_invalid_at(const char *schema_text, const char *value_text, const char *root,
                              const char *expected)
{
    cdsh_schema *s = compile_ok(schema_text);
    char *got = violations_of(s, value_text, root);
    if (!got)
        fail_msg("%s against %s: expected violations", value_text, schema_text);
    assert_string_equal(got, expected);
    free(got);
    cdsh_schema_free(s);
}

static void expect_invalid(const char *schema_text, const char *value_text, const char *expected)
{
    expect_invalid_at(schema_text, value_text, "arguments", expected);
}

/* `expected` is the joined list after "unsupported JSON schema: ". */
static void expect_refused(const char *schema_text, const char *expected)
{
    json_t *js = parse(schema_text);
    cdsh_schema *s = (cdsh_schema *)0x1;
    json_t *violations = NULL;
    cdsh_error err = {0};
    int rc = cdsh_schema_compile_at(js, NULL, &s, &violations, &err);
    json_decref(js);
    assert_int_equal(rc, CDSH_EUNSUPPORTED);
    assert_null(s);
    assert_int_equal(err.rc, CDSH_EUNSUPPORTED);
    assert_string_equal(err.code, "UNSUPPORTED_SCHEMA");
    char *joined = cdsh_schema_violations_join_dup(violations);
    assert_string_equal(joined, expected);
    char message[CDSH_ERROR_MESSAGE_MAX];
    snprintf(message, sizeof message, "unsupported JSON schema: %s", expected);
    assert_string_equal(err.message, message);
    free(joined);
    json_decref(violations);
}

#define OBJ_AB                                                                                     \
    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":"            \
    "\"integer\"}},\"required\":[\"a\",\"b\"]}"

/* ---- type ---------------------------------------------------------------- */

static void type_string_accepts_strings_and_names_the_path(void **state)
{
    (void)state;
    expect_valid("{\"type\":\"string\"}", "\"x\"");
    expect_invalid("{\"type\":\"string\"}", "1", "\"arguments\" must be a string");
}

static void type_number_accepts_integers_and_reals(void **state)
{
    (void)state;
    expect_valid("{\"type\":\"number\"}", "1");
    expect_valid("{\"type\":\"number\"}", "1.5");
    expect_valid("{\"type\":\"number\"}", "-0");
    expect_invalid_at("{\"type\":\"number\"}", "\"1\"", "value", "\"value\" must be a number");
}

static void type_number_refuses_negative_zero_real_as_dsh(void **state)
{
    (void)state;
    expect_invalid("{\"type\":\"number\"}", "-0.0", "\"arguments\" must be a finite JSON number");
    expect_invalid("{\"type\":\"integer\"}", "-0.0", "\"arguments\" must be an integer");
}

static void type_integer_follows_number_is_integer(void **state)
{
    (void)state;
    expect_valid("{\"type\":\"integer\"}", "1");
    expect_valid("{\"type\":\"integer\"}", "1.0");
    expect_valid("{\"type\":\"integer\"}", "1e300");
    expect_valid("{\"type\":\"integer\"}", "-0"); /* jansson reads "-0" as integer 0 */
    expect_valid("{\"type\":\"integer\"}", "-9223372036854775808");
    expect_invalid("{\"type\":\"integer\"}", "1.5", "\"arguments\" must be an integer");
    expect_invalid("{\"type\":\"integer\"}", "1e-300", "\"arguments\" must be an integer");
    expect_invalid("{\"type\":\"integer\"}", "\"1\"", "\"arguments\" must be an integer");
}

static void type_boolean_null_object_array_messages(void **state)
{
    (void)state;
    expect_valid("{\"type\":\"boolean\"}", "false");
    expect_invalid("{\"type\":\"boolean\"}", "0", "\"arguments\" must be a boolean");
    expect_valid("{\"type\":\"null\"}", "null");
    expect_invalid("{\"type\":\"null\"}", "false", "\"arguments\" must be null");
    expect_valid("{\"type\":\"object\"}", "{\"k\":1}");
    expect_invalid("{\"type\":\"object\"}", "[]", "\"arguments\" must be an object");
    expect_valid("{\"type\":\"array\"}", "[1,\"a\"]");
    expect_invalid("{\"type\":\"array\"}", "{}", "\"arguments\" must be an array");
}

static void annotation_only_schema_accepts_any_json(void **state)
{
    (void)state;
    const char *any = "{\"description\":\"anything\",\"title\":\"t\",\"default\":[1],"
                      "\"examples\":[{\"a\":null}]}";
    expect_valid(any, "null");
    expect_valid(any, "{\"x\":[1,2,{}]}");
    expect_valid("{}", "\"s\"");
}

/* ---- objects --------------------------------------------------------------- */

static void required_reports_missing_properties_in_required_order(void **state)
{
    (void)state;
    expect_invalid(OBJ_AB, "{}",
                   "missing required property \"arguments.a\"; "
                   "missing required property \"arguments.b\"");
    expect_valid(OBJ_AB, "{\"a\":\"x\",\"b\":2,\"extra\":true}");
}

static void implicit_root_prints_bare_property_paths_like_dsh(void **state)
{
    (void)state;
    expect_invalid_at(OBJ_AB, "{\"b\":\"no\"}", "",
                      "missing required property \"a\"; \"b\" must be an integer");
    expect_invalid_at(OBJ_AB, "[]", "", "\"arguments\" must be an object");
}

static void properties_validate_nested_paths(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"object\","
                         "\"properties\":{\"b\":{\"type\":\"string\"}},\"required\":[\"b\"]}}}";
    expect_invalid(schema, "{\"a\":{\"b\":3}}", "\"arguments.a.b\" must be a string");
    expect_invalid(schema, "{\"a\":{}}", "missing required property \"arguments.a.b\"");
    expect_valid(schema, "{}");
}

static void additional_properties_false_names_each_undeclared_key(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},"
                         "\"additionalProperties\":false}";
    expect_invalid(schema, "{\"z\":1,\"a\":\"ok\",\"y\":2}",
                   "\"arguments.z\" is not a declared property (additionalProperties: false); "
                   "\"arguments.y\" is not a declared property (additionalProperties: false)");
    expect_valid(schema, "{\"a\":\"ok\"}");
    expect_valid("{\"type\":\"object\",\"additionalProperties\":true}", "{\"q\":1}");
    expect_invalid("{\"type\":\"object\",\"additionalProperties\":false}", "{\"q\":1}",
                   "\"arguments.q\" is not a declared property (additionalProperties: false)");
}

static void object_violations_follow_dsh_walk_order(void **state)
{
    (void)state;
    /* required first, then properties in schema order, then undeclared keys. */
    const char *schema =
        "{\"type\":\"object\",\"properties\":{\"p\":{\"type\":\"string\"},\"q\":{\"type\":"
        "\"number\"},\"r\":{\"type\":\"boolean\"}},\"required\":[\"r\"],"
        "\"additionalProperties\":false}";
    expect_invalid(schema, "{\"x\":0,\"q\":\"s\",\"p\":1}",
                   "missing required property \"arguments.r\"; "
                   "\"arguments.p\" must be a string; \"arguments.q\" must be a number; "
                   "\"arguments.x\" is not a declared property (additionalProperties: false)");
}

/* ---- arrays ---------------------------------------------------------------- */

static void items_validate_every_element_with_index_paths(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"object\",\"properties\":{\"items\":{\"type\":\"array\","
                         "\"items\":{\"type\":\"integer\"}}}}";
    expect_invalid(schema, "{\"items\":[1,\"two\",3,4.5]}",
                   "\"arguments.items[1]\" must be an integer; "
                   "\"arguments.items[3]\" must be an integer");
    expect_valid(schema, "{\"items\":[]}");
}

static void nested_arrays_of_objects_print_full_paths(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"array\",\"items\":{\"type\":\"array\",\"items\":{"
                         "\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"null\"}},"
                         "\"required\":[\"n\"]}}}";
    expect_invalid_at(schema, "[[{\"n\":null}],[{},{\"n\":1}]]", "value",
                      "missing required property \"value[1][0].n\"; "
                      "\"value[1][1].n\" must be null");
}

static void min_and_max_items_bound_array_length(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"array\",\"minItems\":2,\"maxItems\":3,"
                         "\"items\":{\"type\":\"string\"}}";
    expect_invalid(schema, "[\"a\"]", "\"arguments\" must have at least 2 items");
    expect_invalid(schema, "[\"a\",\"b\",\"c\",\"d\"]", "\"arguments\" must have at most 3 items");
    expect_invalid(schema, "[1]",
                   "\"arguments\" must have at least 2 items; \"arguments[0]\" must be a string");
    expect_valid(schema, "[\"a\",\"b\"]");
    expect_invalid("{\"type\":\"array\",\"minItems\":1}", "[]",
                   "\"arguments\" must have at least 1 item");
    expect_invalid("{\"type\":\"array\",\"maxItems\":0}", "[0]",
                   "\"arguments\" must have at most 0 items");
}

/* ---- enum and const ------------------------------------------------------------ */

static void enum_prints_the_allowed_values_as_json(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"string\",\"enum\":[\"red\",\"gr\\\"een\",\"t\\u00e9\"]}";
    expect_valid(schema, "\"red\"");
    expect_invalid(schema, "\"blue\"",
                   "\"arguments\" must be one of [\"red\",\"gr\\\"een\",\"té\"]");
}

static void enum_of_numbers_compares_integer_and_real_alike(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"number\",\"enum\":[1,2.5,1e21,0.000001,1e-7]}";
    expect_valid(schema, "1.0");
    expect_valid(schema, "2.5");
    expect_invalid(schema, "3", "\"arguments\" must be one of [1,2.5,1e+21,0.000001,1e-7]");
    expect_valid("{\"type\":\"integer\",\"enum\":[1.0,2]}", "1");
}

static void enum_of_mixed_scalars_needs_a_single_type(void **state)
{
    (void)state;
    /* A mixed-scalar enum goes through oneOf of typed branches. */
    const char *schema =
        "{\"oneOf\":[{\"type\":\"string\",\"enum\":[\"a\"]},"
        "{\"type\":\"integer\",\"enum\":[1]},{\"type\":\"null\",\"enum\":[null]}]}";
    expect_valid(schema, "\"a\"");
    expect_valid(schema, "1");
    expect_valid(schema, "null");
    expect_invalid(schema, "true", "\"arguments\" must match exactly one oneOf branch (matched 0)");
    expect_refused("{\"type\":\"string\",\"enum\":[\"a\",1,null]}",
                   "schema.enum must be a non-empty array of string values");
}

static void boolean_enum_and_const(void **state)
{
    (void)state;
    expect_invalid("{\"type\":\"boolean\",\"enum\":[true]}", "false",
                   "\"arguments\" must be one of [true]");
    expect_invalid("{\"type\":\"boolean\",\"const\":false}", "true", "\"arguments\" must be false");
}

static void const_prints_the_expected_value(void **state)
{
    (void)state;
    expect_valid("{\"type\":\"string\",\"const\":\"c\"}", "\"c\"");
    expect_invalid("{\"type\":\"string\",\"const\":\"c\\n\"}", "\"d\"",
                   "\"arguments\" must be \"c\\n\"");
    expect_invalid("{\"type\":\"number\",\"const\":0.1}", "0.2", "\"arguments\" must be 0.1");
    expect_valid("{\"type\":\"integer\",\"const\":3}", "3.0");
}

static void const_null_accepts_only_null(void **state)
{
    (void)state;
    expect_valid("{\"type\":\"null\",\"const\":null}", "null");
    expect_invalid("{\"type\":\"null\",\"const\":null}", "0", "\"arguments\" must be null");
}

static void enum_failure_hides_const_failure_like_dsh(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"string\",\"enum\":[\"a\",\"b\"],\"const\":\"a\"}";
    expect_invalid(schema, "\"z\"", "\"arguments\" must be one of [\"a\",\"b\"]");
    expect_invalid(schema, "\"b\"", "\"arguments\" must be \"a\"");
}

/* ---- oneOf ------------------------------------------------------------------- */

static void one_of_needs_exactly_one_branch(void **state)
{
    (void)state;
    const char *schema = "{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"number\"}]}";
    expect_valid(schema, "1.5");
    expect_invalid(schema, "1", "\"arguments\" must match exactly one oneOf branch (matched 2)");
    expect_invalid(schema, "\"s\"",
                   "\"arguments\" must match exactly one oneOf branch (matched 0)");
}

static void one_of_inside_objects_and_arrays_names_the_path(void **state)
{
    (void)state;
    const char *schema =
        "{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"array\",\"items\":{\"oneOf\":"
        "[{\"type\":\"string\"},{\"type\":\"object\",\"properties\":{\"k\":{\"type\":\"string\"}},"
        "\"required\":[\"k\"],\"additionalProperties\":false}]}}}}";
    expect_valid(schema, "{\"v\":[\"a\",{\"k\":\"b\"}]}");
    expect_invalid(schema, "{\"v\":[\"a\",{\"k\":1},{\"k\":\"x\",\"z\":0}]}",
                   "\"arguments.v[1]\" must match exactly one oneOf branch (matched 0); "
                   "\"arguments.v[2]\" must match exactly one oneOf branch (matched 0)");
}

static void nested_one_of_counts_inner_results(void **state)
{
    (void)state;
    const char *schema = "{\"oneOf\":[{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]},"
                         "{\"type\":\"string\",\"minLength\":3}]}";
    expect_valid(schema, "null");
    expect_valid(schema, "\"ab\"");
    expect_invalid(schema, "\"abc\"",
                   "\"arguments\" must match exactly one oneOf branch (matched 2)");
}

/* ---- cdsh's additions ------------------------------------------------------------ */

static void minimum_and_maximum_are_inclusive(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\","
                         "\"minimum\":1,\"maximum\":10}}}";
    expect_valid(schema, "{\"n\":1}");
    expect_valid(schema, "{\"n\":10}");
    expect_invalid(schema, "{\"n\":0}", "\"arguments.n\" must be >= 1");
    expect_invalid(schema, "{\"n\":11}", "\"arguments.n\" must be <= 10");
}

static void exclusive_bounds_exclude_the_limit(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"number\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":1.5}";
    expect_valid(schema, "0.5");
    expect_invalid(schema, "0", "\"arguments\" must be > 0");
    expect_invalid(schema, "1.5", "\"arguments\" must be < 1.5");
}

static void every_failed_bound_is_reported(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"number\",\"minimum\":5,\"exclusiveMinimum\":4.25}";
    expect_invalid(schema, "4", "\"arguments\" must be >= 5; \"arguments\" must be > 4.25");
}

static void bounds_print_numbers_as_javascript_does(void **state)
{
    (void)state;
    expect_invalid("{\"type\":\"number\",\"maximum\":1e21}", "2e21",
                   "\"arguments\" must be <= 1e+21");
    expect_invalid("{\"type\":\"number\",\"minimum\":2.0}", "1", "\"arguments\" must be >= 2");
    expect_invalid("{\"type\":\"number\",\"minimum\":-1.25e-7}", "-1",
                   "\"arguments\" must be >= -1.25e-7");
}

static void min_and_max_length_count_code_points(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"string\","
                         "\"minLength\":2,\"maxLength\":3}}}";
    /* "é" is 2 bytes, "😀" 4 bytes: byte counts would say otherwise. */
    expect_valid(schema, "{\"s\":\"\xc3\xa9\xc3\xa9\xc3\xa9\"}");
    expect_valid(schema, "{\"s\":\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\"}");
    expect_invalid(schema, "{\"s\":\"\xf0\x9f\x98\x80\"}",
                   "\"arguments.s\" must be at least 2 characters");
    expect_invalid(schema, "{\"s\":\"abcd\"}", "\"arguments.s\" must be at most 3 characters");
    expect_invalid("{\"type\":\"string\",\"maxLength\":10}", "\"abcdefghijk\"",
                   "\"arguments\" must be at most 10 characters");
    expect_invalid("{\"type\":\"string\",\"minLength\":1}", "\"\"",
                   "\"arguments\" must be at least 1 character");
}

static void pattern_is_an_unanchored_search(void **state)
{
    (void)state;
    expect_valid("{\"type\":\"string\",\"pattern\":\"b+\"}", "\"abbc\"");
    expect_invalid("{\"type\":\"string\",\"pattern\":\"^a\"}", "\"ba\"",
                   "\"arguments\" must match pattern \"^a\"");
    expect_invalid("{\"type\":\"string\",\"pattern\":\"^\\\\d+$\"}", "\"12\\n\"",
                   "\"arguments\" must match pattern \"^\\\\d+$\"");
}

static void pattern_matches_utf8_by_code_point(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"string\",\"pattern\":\"^.\\u00e9.$\"}";
    expect_valid(schema, "\"x\xc3\xa9\xf0\x9f\x98\x80\"");
    expect_invalid(schema, "\"xe\xf0\x9f\x98\x80\"", "\"arguments\" must match pattern \"^.é.$\"");
    /* ECMAScript's \u escape inside the pattern itself. */
    expect_valid("{\"type\":\"string\",\"pattern\":\"^\\\\u00e9$\"}", "\"\xc3\xa9\"");
}

static void length_and_pattern_failures_are_all_reported(void **state)
{
    (void)state;
    expect_invalid("{\"type\":\"string\",\"minLength\":3,\"pattern\":\"^z\"}", "\"a\"",
                   "\"arguments\" must be at least 3 characters; "
                   "\"arguments\" must match pattern \"^z\"");
}

static void runaway_pattern_is_a_failure_not_a_hang(void **state)
{
    (void)state;
    expect_invalid("{\"type\":\"string\",\"pattern\":\"(a+)+$\"}",
                   "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\"",
                   "\"arguments\" must match pattern \"(a+)+$\" (pattern match failed: match "
                   "limit exceeded)");
}

static void invalid_utf8_string_is_not_lossless(void **state)
{
    (void)state;
    cdsh_schema *s = compile_ok("{\"type\":\"string\",\"maxLength\":5}");
    json_t *v = json_stringn_nocheck("\xff\xfe", 2);
    json_t *violations = NULL;
    assert_int_equal(cdsh_schema_validate(s, v, "value", &violations), CDSH_EINVAL);
    assert_string_equal(json_string_value(json_array_get(violations, 0)),
                        "\"value\" must be a lossless JSON value");
    json_decref(violations);
    json_decref(v);
    cdsh_schema_free(s);
}

/* ---- refusals ------------------------------------------------------------------- */

static void unsupported_keywords_are_refused_with_their_path(void **state)
{
    (void)state;
    const char *subset = " is not a supported keyword (subset: type/oneOf/properties/required/"
                         "additionalProperties/items/enum/const/minimum/maximum/exclusiveMinimum/"
                         "exclusiveMaximum/minLength/maxLength/pattern/minItems/maxItems + "
                         "annotations)";
    const char *keywords[] = {"anyOf", "allOf", "$ref",       "format", "patternProperties",
                              "not",   "$defs", "uniqueItems"};
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++) {
        char schema[256], expected[512];
        snprintf(schema, sizeof schema,
                 "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\",\"%s\":[]}}}",
                 keywords[i]);
        snprintf(expected, sizeof expected, "schema.properties.x.%s%s", keywords[i], subset);
        expect_refused(schema, expected);
    }
}

static void compile_at_names_the_root_in_refusals(void **state)
{
    (void)state;
    json_t *js = parse("{\"type\":\"object\",\"properties\":{\"x\":{\"anyOf\":[]}}}");
    cdsh_schema *s = NULL;
    json_t *violations = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_schema_compile_at(js, "parameters", &s, &violations, &err),
                     CDSH_EUNSUPPORTED);
    assert_int_equal(json_array_size(violations), 1);
    assert_non_null(strstr(json_string_value(json_array_get(violations, 0)),
                           "parameters.properties.x.anyOf is not a supported keyword"));
    assert_int_equal(strncmp(err.message, "unsupported JSON schema: parameters.properties.x.anyOf",
                             strlen("unsupported JSON schema: parameters.properties.x.anyOf")),
                     0);
    json_decref(violations);
    json_decref(js);
}

static void type_must_be_one_known_string(void **state)
{
    (void)state;
    expect_refused("{\"type\":[\"string\",\"null\"]}",
                   "schema.type must be a single type string (type arrays are not supported)");
    expect_refused("{\"type\":\"float\"}",
                   "schema.type must be one of object/array/string/number/integer/boolean/null");
}

static void one_of_shape_is_enforced(void **state)
{
    (void)state;
    expect_refused("{\"oneOf\":[{\"type\":\"string\"}]}",
                   "schema.oneOf must be an array of at least two schemas");
    expect_refused("{\"oneOf\":{}}", "schema.oneOf must be an array of at least two schemas");
    expect_refused("{\"type\":\"string\",\"oneOf\":[{},{}]}",
                   "schema cannot declare both type and oneOf");
    expect_refused("{\"oneOf\":[{\"type\":\"string\"},3],\"enum\":[\"a\"],\"minLength\":1}",
                   "schema.oneOf[1] must be a schema object; "
                   "schema.enum is not supported beside oneOf; "
                   "schema.minLength is not supported beside oneOf");
    expect_refused("{\"oneOf\":[{\"type\":\"nope\"},{}]}",
                   "schema.oneOf[0].type must be one of "
                   "object/array/string/number/integer/boolean/null");
}

static void required_must_name_declared_properties(void **state)
{
    (void)state;
    expect_refused("{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"a\",\"b\"]}",
                   "schema.required names \"b\" which is not in properties");
    expect_refused("{\"type\":\"object\",\"required\":[\"a\"]}",
                   "schema.required names \"a\" which is not in properties");
    expect_refused("{\"type\":\"object\",\"required\":\"a\"}",
                   "schema.required must be an array of strings");
}

static void additional_properties_must_be_boolean(void **state)
{
    (void)state;
    expect_refused("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}",
                   "schema.additionalProperties must be a boolean");
}

static void properties_and_items_must_hold_schemas(void **state)
{
    (void)state;
    expect_refused("{\"type\":\"object\",\"properties\":[]}",
                   "schema.properties must be an object of schemas");
    expect_refused("{\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}",
                   "schema.items must be a schema object");
    expect_refused("[]", "schema must be a schema object");
}

static void keywords_on_the_wrong_type_are_refused(void **state)
{
    (void)state;
    expect_refused("{\"type\":\"string\",\"items\":{},\"minimum\":1}",
                   "schema.items is not supported on type \"string\"; "
                   "schema.minimum is not supported on type \"string\"");
    expect_refused("{\"type\":\"object\",\"enum\":[{}],\"maxItems\":1}",
                   "schema.enum is not supported on type \"object\"; "
                   "schema.maxItems is not supported on type \"object\"");
    expect_refused("{\"type\":\"array\",\"properties\":{},\"pattern\":\"a\"}",
                   "schema.properties is not supported on type \"array\"; "
                   "schema.pattern is not supported on type \"array\"");
}

static void constraints_without_type_are_refused(void **state)
{
    (void)state;
    expect_refused("{\"properties\":{},\"enum\":[1]}",
                   "schema.properties requires type or oneOf; schema.enum requires type or oneOf");
}

static void enum_and_const_must_fit_the_type(void **state)
{
    (void)state;
    expect_refused("{\"type\":\"integer\",\"enum\":[1,1.5]}",
                   "schema.enum must be a non-empty array of integer values");
    expect_refused("{\"type\":\"string\",\"enum\":[]}",
                   "schema.enum must be a non-empty array of string values");
    expect_refused("{\"type\":\"number\",\"enum\":[[1]]}",
                   "schema.enum must be a non-empty array of number values");
    expect_refused("{\"type\":\"boolean\",\"const\":\"true\"}",
                   "schema.const must be a boolean value");
    expect_refused("{\"type\":\"string\",\"enum\":[\"a\"],\"const\":\"b\"}",
                   "schema.const must be one of schema.enum when both are declared");
    expect_refused("{\"type\":\"number\",\"const\":-0.0}", "schema.const must be a number value");
}

static void annotations_must_be_well_formed(void **state)
{
    (void)state;
    expect_refused("{\"description\":1,\"title\":[]}",
                   "schema.description must be a string; schema.title must be a string");
    json_t *js = parse("{\"type\":\"string\"}");
    json_object_set_new(js, "default", json_stringn_nocheck("\xc3", 1));
    cdsh_schema *s = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_schema_compile(js, &s, &err), CDSH_EUNSUPPORTED);
    assert_string_equal(err.message,
                        "unsupported JSON schema: schema.default annotation must be lossless "
                        "JSON data");
    json_decref(js);
}

static void bounds_must_be_numbers_and_counts(void **state)
{
    (void)state;
    expect_refused("{\"type\":\"number\",\"minimum\":\"1\",\"exclusiveMaximum\":true}",
                   "schema.minimum must be a number; schema.exclusiveMaximum must be a number");
    expect_refused("{\"type\":\"string\",\"minLength\":-1,\"maxLength\":1.5}",
                   "schema.minLength must be a non-negative integer; "
                   "schema.maxLength must be a non-negative integer");
    expect_refused("{\"type\":\"array\",\"minItems\":null}",
                   "schema.minItems must be a non-negative integer");
    expect_valid("{\"type\":\"string\",\"maxLength\":2.0}", "\"ab\"");
}

static void invalid_patterns_are_refused_with_the_pcre2_message(void **state)
{
    (void)state;
    expect_refused("{\"type\":\"string\",\"pattern\":\"(a\"}",
                   "schema.pattern is not a supported pattern: missing closing parenthesis at "
                   "offset 2");
    expect_refused("{\"type\":\"string\",\"pattern\":7}", "schema.pattern must be a string");
}

static void dollar_schema_is_tolerated_only_at_the_root(void **state)
{
    (void)state;
    expect_valid("{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"type\":\"object\"}",
                 "{}");
    expect_refused("{\"$schema\":1}", "schema.$schema must be a string");
    expect_refused("{\"type\":\"array\",\"items\":{\"$schema\":\"x\"}}",
                   "schema.items.$schema is not a supported keyword (subset: type/oneOf/properties/"
                   "required/additionalProperties/items/enum/const/minimum/maximum/"
                   "exclusiveMinimum/exclusiveMaximum/minLength/maxLength/pattern/minItems/"
                   "maxItems + annotations)");
}

static void all_refusals_are_collected_in_walk_order(void **state)
{
    (void)state;
    expect_refused("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\",\"items\":"
                   "{\"type\":\"x\"}},\"b\":{\"oneOf\":[]}},\"required\":[\"c\"],"
                   "\"additionalProperties\":1}",
                   "schema.properties.a.items.type must be one of "
                   "object/array/string/number/integer/boolean/null; "
                   "schema.properties.b.oneOf must be an array of at least two schemas; "
                   "schema.required names \"c\" which is not in properties; "
                   "schema.additionalProperties must be a boolean");
}

static void deeply_nested_schemas_are_refused(void **state)
{
    (void)state;
    json_t *js = json_object();
    json_object_set_new(js, "type", json_string("string"));
    for (int i = 0; i < 300; i++) {
        json_t *outer = json_pack("{s:s, s:o}", "type", "array", "items", js);
        js = outer;
    }
    cdsh_schema *s = NULL;
    json_t *violations = NULL;
    assert_int_equal(cdsh_schema_compile_at(js, NULL, &s, &violations, NULL), CDSH_EUNSUPPORTED);
    assert_int_equal(json_array_size(violations), 1);
    const char *msg = json_string_value(json_array_get(violations, 0));
    char expected[2048] = "schema";
    for (int i = 0; i < 257; i++)
        strcat(expected, ".items");
    strcat(expected, " is nested too deeply (more than 256 levels)");
    assert_string_equal(msg, expected);
    json_decref(violations);
    json_decref(js);
}

/* ---- API edges ---------------------------------------------------------------- */

static void compiled_schema_keeps_its_own_copy(void **state)
{
    (void)state;
    json_t *js = parse("{\"type\":\"string\",\"pattern\":\"^a\"}");
    cdsh_schema *s = NULL;
    assert_int_equal(cdsh_schema_compile(js, &s, NULL), 0);
    json_object_set_new(js, "type", json_string("integer"));
    json_decref(js);
    assert_string_equal(json_string_value(json_object_get(cdsh_schema_json(s), "type")), "string");
    char *got = violations_of(s, "\"ab\"", "value");
    assert_null(got);
    cdsh_schema_free(s);
}

static void validate_handles_null_arguments_and_counts_without_an_array(void **state)
{
    (void)state;
    cdsh_schema *s = compile_ok("{}");
    json_t *violations = NULL;
    assert_int_equal(cdsh_schema_validate(s, NULL, NULL, &violations), CDSH_EINVAL);
    assert_string_equal(json_string_value(json_array_get(violations, 0)),
                        "\"value\" must be a lossless JSON value");
    json_decref(violations);
    assert_int_equal(cdsh_schema_validate(NULL, json_null(), "value", &violations), CDSH_EINVAL);
    assert_null(violations);
    json_t *v = json_integer(1);
    assert_int_equal(cdsh_schema_validate(s, v, "value", NULL), 0);
    cdsh_schema_free(s);
    s = compile_ok("{\"type\":\"object\",\"properties\":{\"k\":{\"oneOf\":[{\"type\":"
                   "\"string\"},{\"type\":\"integer\",\"maximum\":0}]}}}");
    json_t *obj = json_pack("{s:O}", "k", v);
    assert_int_equal(cdsh_schema_validate(s, obj, "value", NULL), CDSH_EINVAL);
    json_object_set_new(obj, "k", json_integer(-1));
    assert_int_equal(cdsh_schema_validate(s, obj, "value", NULL), 0);
    json_decref(obj);
    json_decref(v);
    cdsh_schema_free(s);
    cdsh_schema_free(NULL);
    cdsh_error err = {0};
    assert_int_equal(cdsh_schema_compile(NULL, &s, &err), CDSH_EINVAL);
}

static void join_uses_semicolons_and_skips_non_strings(void **state)
{
    (void)state;
    json_t *arr = parse("[\"a\",1,\"b\",\"c\"]");
    char *joined = cdsh_schema_violations_join_dup(arr);
    assert_string_equal(joined, "a; b; c");
    free(joined);
    json_decref(arr);
    joined = cdsh_schema_violations_join_dup(NULL);
    assert_string_equal(joined, "");
    free(joined);
}

/* ---- concurrency ----------------------------------------------------------------- */

typedef struct worker {
    const cdsh_schema *schema;
    int failures;
} worker;

static void *validate_many(void *arg)
{
    worker *w = arg;
    json_t *good = parse("{\"name\":\"abc\",\"n\":3,\"tags\":[\"x\",\"y\"]}");
    json_t *bad = parse("{\"name\":\"Abc\",\"n\":0,\"tags\":[\"x\",7]}");
    const char *expected = "\"arguments.name\" must match pattern \"^[a-z]+$\"; "
                           "\"arguments.n\" must be >= 1; \"arguments.tags[1]\" must be a string";
    for (int i = 0; i < 2000; i++) {
        json_t *violations = NULL;
        if (cdsh_schema_validate(w->schema, good, "arguments", &violations) != 0)
            w->failures++;
        if (cdsh_schema_validate(w->schema, bad, "arguments", &violations) != CDSH_EINVAL) {
            w->failures++;
            continue;
        }
        char *joined = cdsh_schema_violations_join_dup(violations);
        if (!joined || strcmp(joined, expected) != 0)
            w->failures++;
        free(joined);
        json_decref(violations);
    }
    json_decref(good);
    json_decref(bad);
    return NULL;
}

static void one_compiled_schema_validates_concurrently(void **state)
{
    (void)state;
    cdsh_schema *s = compile_ok(
        "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"pattern\":"
        "\"^[a-z]+$\"},\"n\":{\"type\":\"integer\",\"minimum\":1},\"tags\":{\"type\":\"array\","
        "\"items\":{\"type\":\"string\"}}},\"required\":[\"name\"]}");
    enum { NTHREADS = 4 };
    pthread_t threads[NTHREADS];
    worker workers[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        workers[i] = (worker){.schema = s};
        assert_int_equal(pthread_create(&threads[i], NULL, validate_many, &workers[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(workers[i].failures, 0);
    }
    cdsh_schema_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(type_string_accepts_strings_and_names_the_path),
        cmocka_unit_test(type_number_accepts_integers_and_reals),
        cmocka_unit_test(type_number_refuses_negative_zero_real_as_dsh),
        cmocka_unit_test(type_integer_follows_number_is_integer),
        cmocka_unit_test(type_boolean_null_object_array_messages),
        cmocka_unit_test(annotation_only_schema_accepts_any_json),
        cmocka_unit_test(required_reports_missing_properties_in_required_order),
        cmocka_unit_test(implicit_root_prints_bare_property_paths_like_dsh),
        cmocka_unit_test(properties_validate_nested_paths),
        cmocka_unit_test(additional_properties_false_names_each_undeclared_key),
        cmocka_unit_test(object_violations_follow_dsh_walk_order),
        cmocka_unit_test(items_validate_every_element_with_index_paths),
        cmocka_unit_test(nested_arrays_of_objects_print_full_paths),
        cmocka_unit_test(min_and_max_items_bound_array_length),
        cmocka_unit_test(enum_prints_the_allowed_values_as_json),
        cmocka_unit_test(enum_of_numbers_compares_integer_and_real_alike),
        cmocka_unit_test(enum_of_mixed_scalars_needs_a_single_type),
        cmocka_unit_test(boolean_enum_and_const),
        cmocka_unit_test(const_prints_the_expected_value),
        cmocka_unit_test(const_null_accepts_only_null),
        cmocka_unit_test(enum_failure_hides_const_failure_like_dsh),
        cmocka_unit_test(one_of_needs_exactly_one_branch),
        cmocka_unit_test(one_of_inside_objects_and_arrays_names_the_path),
        cmocka_unit_test(nested_one_of_counts_inner_results),
        cmocka_unit_test(minimum_and_maximum_are_inclusive),
        cmocka_unit_test(exclusive_bounds_exclude_the_limit),
        cmocka_unit_test(every_failed_bound_is_reported),
        cmocka_unit_test(bounds_print_numbers_as_javascript_does),
        cmocka_unit_test(min_and_max_length_count_code_points),
        cmocka_unit_test(pattern_is_an_unanchored_search),
        cmocka_unit_test(pattern_matches_utf8_by_code_point),
        cmocka_unit_test(length_and_pattern_failures_are_all_reported),
        cmocka_unit_test(runaway_pattern_is_a_failure_not_a_hang),
        cmocka_unit_test(invalid_utf8_string_is_not_lossless),
        cmocka_unit_test(unsupported_keywords_are_refused_with_their_path),
        cmocka_unit_test(compile_at_names_the_root_in_refusals),
        cmocka_unit_test(type_must_be_one_known_string),
        cmocka_unit_test(one_of_shape_is_enforced),
        cmocka_unit_test(required_must_name_declared_properties),
        cmocka_unit_test(additional_properties_must_be_boolean),
        cmocka_unit_test(properties_and_items_must_hold_schemas),
        cmocka_unit_test(keywords_on_the_wrong_type_are_refused),
        cmocka_unit_test(constraints_without_type_are_refused),
        cmocka_unit_test(enum_and_const_must_fit_the_type),
        cmocka_unit_test(annotations_must_be_well_formed),
        cmocka_unit_test(bounds_must_be_numbers_and_counts),
        cmocka_unit_test(invalid_patterns_are_refused_with_the_pcre2_message),
        cmocka_unit_test(dollar_schema_is_tolerated_only_at_the_root),
        cmocka_unit_test(all_refusals_are_collected_in_walk_order),
        cmocka_unit_test(deeply_nested_schemas_are_refused),
        cmocka_unit_test(compiled_schema_keeps_its_own_copy),
        cmocka_unit_test(validate_handles_null_arguments_and_counts_without_an_array),
        cmocka_unit_test(join_uses_semicolons_and_skips_non_strings),
        cmocka_unit_test(one_compiled_schema_validates_concurrently),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
