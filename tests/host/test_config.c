/* test_config.c — config schemas: the accepted vocabulary, defaults,
 * `invalid config:` reports with paths, field lists and dotted keys. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "host/config.h"

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v)
        fail_msg("bad test JSON: %s", e.text);
    return v;
}

static const char *SCHEMA =
    "{\"type\":\"object\",\"properties\":{"
    "\"depth\":{\"type\":\"integer\",\"default\":3,\"minimum\":1,\"maximum\":10,"
    "\"description\":\"search depth\"},"
    "\"side\":{\"type\":\"string\",\"enum\":[\"red\",\"black\"],\"default\":\"red\"},"
    "\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":5},"
    "\"engine\":{\"type\":\"object\",\"properties\":{"
    "  \"threads\":{\"type\":\"integer\",\"default\":1},"
    "  \"hash\":{\"type\":\"number\",\"default\":16.5}}},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"default\":[]},"
    "\"verbose\":{\"type\":\"boolean\",\"default\":false}}}";

static char *resolve_dump(const char *input, cdsh_error *err, int *rc)
{
    json_t *schema = parse(SCHEMA);
    json_t *in = input ? parse(input) : NULL;
    json_t *out = NULL;
    *rc = cdsh_config_resolve(schema, in, &out, NULL, err);
    char *s = out ? json_dumps(out, JSON_COMPACT) : NULL;
    json_decref(out);
    json_decref(in);
    json_decref(schema);
    return s;
}

static void schema_check_accepts_the_vocabulary(void **state)
{
    (void)state;
    json_t *s = parse(SCHEMA);
    assert_int_equal(cdsh_config_schema_check(s, NULL), 0);
    json_decref(s);
}

static void schema_check_refuses_unknown_keywords_with_path(void **state)
{
    (void)state;
    json_t *s = parse("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"object\","
                      "\"properties\":{\"b\":{\"type\":\"string\",\"pattern\":\"x\"}}}}}");
    cdsh_error err = {0};
    assert_int_equal(cdsh_config_schema_check(s, &err), CDSH_EUNSUPPORTED);
    assert_string_equal(err.code, "UNSUPPORTED_SCHEMA");
    assert_string_equal(err.message, "config schema: unsupported keyword \"pattern\" at a.b");
    json_decref(s);
}

static void schema_check_refuses_bad_roots_types_and_defaults(void **state)
{
    (void)state;
    cdsh_error err = {0};
    json_t *s = parse("{\"type\":\"string\"}");
    assert_int_equal(cdsh_config_schema_check(s, &err), CDSH_EUNSUPPORTED);
    assert_string_equal(err.message, "config schema: the root must be {\"type\":\"object\"}");
    json_decref(s);
    s = parse("{\"type\":\"object\",\"properties\":{\"a\":{\"default\":1}}}");
    assert_int_equal(cdsh_config_schema_check(s, &err), CDSH_EUNSUPPORTED);
    assert_non_null(strstr(err.message, "\"type\" must be one of"));
    json_decref(s);
    s = parse("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"default\":0,"
              "\"minimum\":1}}}");
    assert_int_equal(cdsh_config_schema_check(s, &err), CDSH_EUNSUPPORTED);
    assert_string_equal(err.message, "config schema: default does not satisfy the schema "
                                     "(expected a value >= 1 but got 0) at a");
    json_decref(s);
    s = parse("{\"type\":\"object\",\"required\":[\"nope\"],\"properties\":{}}");
    assert_int_equal(cdsh_config_schema_check(s, &err), CDSH_EUNSUPPORTED);
    json_decref(s);
}

static void absent_config_gets_every_default(void **state)
{
    (void)state;
    int rc;
    char *s = resolve_dump(NULL, NULL, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(s, "{\"depth\":3,\"side\":\"red\",\"engine\":{\"threads\":1,"
                           "\"hash\":16.5},\"tags\":[],\"verbose\":false}");
    free(s);
}

static void given_values_are_kept_and_the_rest_filled(void **state)
{
    (void)state;
    int rc;
    char *s = resolve_dump("{\"depth\":7,\"engine\":{\"threads\":4},\"name\":\"bob\"}", NULL, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(s, "{\"depth\":7,\"side\":\"red\",\"name\":\"bob\",\"engine\":{"
                           "\"threads\":4,\"hash\":16.5},\"tags\":[],\"verbose\":false}");
    free(s);
}

static void type_error_names_the_path(void **state)
{
    (void)state;
    int rc;
    cdsh_error err = {0};
    char *s = resolve_dump("{\"depth\":\"deep\"}", &err, &rc);
    assert_null(s);
    assert_int_equal(rc, CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_CONFIG");
    assert_string_equal(err.message,
                        "invalid config:\n  - expected integer but got string (at depth)");
}

static void every_issue_is_listed_in_document_order(void **state)
{
    (void)state;
    int rc;
    cdsh_error err = {0};
    char *s = resolve_dump("{\"depth\":0,\"side\":\"blue\",\"engine\":{\"threads\":1.5},"
                           "\"tags\":[\"a\",2],\"name\":\"\",\"colour\":1}",
                           &err, &rc);
    assert_null(s);
    assert_string_equal(err.message,
                        "invalid config:\n"
                        "  - expected a value >= 1 but got 0 (at depth)\n"
                        "  - expected one of [\"red\",\"black\"] but got \"blue\" (at side)\n"
                        "  - expected at least 1 characters (at name)\n"
                        "  - expected integer but got number (at engine.threads)\n"
                        "  - expected string but got integer (at tags[1])\n"
                        "  - unknown key (at colour)");
}

static void issues_array_has_path_and_message(void **state)
{
    (void)state;
    json_t *schema = parse(SCHEMA), *in = parse("{\"depth\":11}"), *out = NULL, *issues = NULL;
    assert_int_equal(cdsh_config_resolve(schema, in, &out, &issues, NULL), CDSH_EINVAL);
    assert_null(out);
    char *s = json_dumps(issues, JSON_COMPACT);
    assert_string_equal(s,
                        "[{\"path\":\"depth\",\"message\":\"expected a value <= 10 but got 11\"}]");
    free(s);
    json_decref(issues);
    json_decref(in);
    json_decref(schema);
}

static void integral_real_is_accepted_as_integer(void **state)
{
    (void)state;
    int rc;
    char *s = resolve_dump("{\"depth\":4.0}", NULL, &rc);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(s, "\"depth\":4,"));
    free(s);
}

static void huge_integral_real_is_not_an_integer(void **state)
{
    (void)state;
    int rc;
    cdsh_error err = {0};
    char *s = resolve_dump("{\"depth\":1e30}", &err, &rc);
    assert_null(s);
    assert_string_equal(err.message,
                        "invalid config:\n  - expected integer but got number (at depth)");
}

static void required_property_without_default_is_reported(void **state)
{
    (void)state;
    json_t *schema = parse("{\"type\":\"object\",\"required\":[\"key\"],\"properties\":{"
                           "\"key\":{\"type\":\"string\"}}}");
    json_t *out = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_config_schema_check(schema, NULL), 0);
    assert_int_equal(cdsh_config_resolve(schema, NULL, &out, NULL, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "invalid config:\n  - missing required property (at key)");
    json_decref(schema);
}

static void root_type_error_has_no_path(void **state)
{
    (void)state;
    json_t *schema = parse(SCHEMA), *in = parse("[1]"), *out = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_config_resolve(schema, in, &out, NULL, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "invalid config:\n  - expected object but got array");
    json_decref(in);
    json_decref(schema);
}

static void open_objects_keep_extra_keys(void **state)
{
    (void)state;
    json_t *schema = parse("{\"type\":\"object\",\"additionalProperties\":true,\"properties\":{"
                           "\"a\":{\"type\":\"integer\",\"default\":1}}}");
    json_t *in = parse("{\"extra\":[1]}"), *out = NULL;
    assert_int_equal(cdsh_config_resolve(schema, in, &out, NULL, NULL), 0);
    char *s = json_dumps(out, JSON_COMPACT);
    assert_string_equal(s, "{\"a\":1,\"extra\":[1]}");
    free(s);
    json_decref(out);
    json_decref(in);
    json_decref(schema);
}

static void fields_flatten_nested_objects_in_order(void **state)
{
    (void)state;
    json_t *schema = parse(SCHEMA);
    json_t *fields = cdsh_config_fields(schema);
    assert_int_equal(json_array_size(fields), 7);
    const char *keys[] = {"depth",       "side", "name",   "engine.threads",
                          "engine.hash", "tags", "verbose"};
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(fields, i), "key")),
                            keys[i]);
    char *s = json_dumps(json_array_get(fields, 0), JSON_COMPACT);
    assert_string_equal(s, "{\"key\":\"depth\",\"type\":\"integer\",\"default\":3,"
                           "\"description\":\"search depth\",\"minimum\":1,\"maximum\":10}");
    free(s);
    assert_null(json_object_get(json_array_get(fields, 2), "default"));
    json_decref(fields);
    json_decref(schema);
}

static void dotted_paths_get_set_and_remove(void **state)
{
    (void)state;
    json_t *obj = json_object();
    assert_int_equal(cdsh_config_path_set(obj, "engine.threads", json_integer(4), NULL), 0);
    assert_int_equal(json_integer_value(cdsh_config_path_get(obj, "engine.threads")), 4);
    assert_null(cdsh_config_path_get(obj, "engine.nope"));
    cdsh_error err = {0};
    assert_int_equal(cdsh_config_path_set(obj, "engine.threads.x", json_true(), &err), CDSH_EINVAL);
    assert_string_equal(err.message,
                        "config: \"threads\" is not an object in \"engine.threads.x\"");
    assert_int_equal(cdsh_config_path_set(obj, "engine.threads", NULL, NULL), 0);
    char *s = json_dumps(obj, JSON_COMPACT);
    assert_string_equal(s, "{\"engine\":{}}");
    free(s);
    assert_int_equal(cdsh_config_path_set(obj, "", json_true(), NULL), CDSH_EINVAL);
    json_decref(obj);
}

static void parse_value_uses_the_field_type(void **state)
{
    (void)state;
    json_t *schema = parse(SCHEMA), *v = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_config_parse_value(schema, "side", "true", &v, NULL), 0);
    assert_string_equal(json_string_value(v), "true"); /* strings are literal */
    json_decref(v);
    assert_int_equal(cdsh_config_parse_value(schema, "engine.threads", "8", &v, NULL), 0);
    assert_int_equal(json_integer_value(v), 8);
    json_decref(v);
    assert_int_equal(cdsh_config_parse_value(schema, "tags", "[\"a\"]", &v, NULL), 0);
    assert_true(json_is_array(v));
    json_decref(v);
    assert_int_equal(cdsh_config_parse_value(schema, "depth", "deep", &v, &err), CDSH_EINVAL);
    assert_string_equal(err.message,
                        "invalid config:\n  - expected integer but got text \"deep\" (at depth)");
    assert_int_equal(cdsh_config_parse_value(schema, "nope", "1", &v, &err), CDSH_ENOTFOUND);
    assert_string_equal(err.code, "UNKNOWN_KEY");
    assert_string_equal(err.message, "unknown config key \"nope\"");
    json_decref(schema);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(schema_check_accepts_the_vocabulary),
        cmocka_unit_test(schema_check_refuses_unknown_keywords_with_path),
        cmocka_unit_test(schema_check_refuses_bad_roots_types_and_defaults),
        cmocka_unit_test(absent_config_gets_every_default),
        cmocka_unit_test(given_values_are_kept_and_the_rest_filled),
        cmocka_unit_test(type_error_names_the_path),
        cmocka_unit_test(every_issue_is_listed_in_document_order),
        cmocka_unit_test(issues_array_has_path_and_message),
        cmocka_unit_test(integral_real_is_accepted_as_integer),
        cmocka_unit_test(huge_integral_real_is_not_an_integer),
        cmocka_unit_test(required_property_without_default_is_reported),
        cmocka_unit_test(root_type_error_has_no_path),
        cmocka_unit_test(open_objects_keep_extra_keys),
        cmocka_unit_test(fields_flatten_nested_objects_in_order),
        cmocka_unit_test(dotted_paths_get_set_and_remove),
        cmocka_unit_test(parse_value_uses_the_field_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
