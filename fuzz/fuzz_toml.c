/* fuzz_toml.c — fuzzes the TOML parser: the plain and typed forms must agree
 * on the verdict, the error message and, when the document is valid, on its
 * whole structure (same keys in the same order, each leaf's type and value
 * consistent); errors must carry a line and column. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_leaf(const json_t *plain, const json_t *typed)
{
    const char *type = json_string_value(json_object_get(typed, "type"));
    const char *value = json_string_value(json_object_get(typed, "value"));
    if (json_object_size(typed) != 2 || !type || !value)
        abort();
    char buf[64];
    if (json_is_integer(plain)) {
        snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(plain));
        if (strcmp(type, "integer") != 0 || strcmp(value, buf) != 0)
            abort();
    } else if (json_is_real(plain)) {
        double d = json_real_value(plain);
        if (strcmp(type, "float") != 0 || strtod(value, NULL) != d || !isfinite(d))
            abort();
    } else if (json_is_boolean(plain)) {
        if (strcmp(type, "bool") != 0 || strcmp(value, json_is_true(plain) ? "true" : "false"))
            abort();
    } else if (json_is_string(plain)) {
        if (strcmp(type, "float") == 0) {
            if (strcmp(value, "inf") && strcmp(value, "-inf") && strcmp(value, "nan"))
                abort();
        } else if (strcmp(type, "string") && strcmp(type, "datetime") &&
                   strcmp(type, "datetime-local") && strcmp(type, "date-local") &&
                   strcmp(type, "time-local")) {
            abort();
        }
        if (!json_equal(plain, json_object_get(typed, "value")))
            abort();
    } else {
        abort();
    }
}

static void check_same(const json_t *plain, const json_t *typed)
{
    if (json_is_array(plain)) {
        if (!json_is_array(typed) || json_array_size(plain) != json_array_size(typed))
            abort();
        for (size_t i = 0; i < json_array_size(plain); i++)
            check_same(json_array_get(plain, i), json_array_get(typed, i));
    } else if (json_is_object(plain)) {
        if (!json_is_object(typed) || json_object_size(plain) != json_object_size(typed))
            abort();
        void *pi = json_object_iter((json_t *)plain), *ti = json_object_iter((json_t *)typed);
        for (; pi && ti; pi = json_object_iter_next((json_t *)plain, pi),
                         ti = json_object_iter_next((json_t *)typed, ti)) {
            size_t pl = json_object_iter_key_len(pi), tl = json_object_iter_key_len(ti);
            if (pl != tl || memcmp(json_object_iter_key(pi), json_object_iter_key(ti), pl) != 0)
                abort();
            check_same(json_object_iter_value(pi), json_object_iter_value(ti));
        }
    } else {
        check_leaf(plain, typed);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    cdsh_toml_options opts = {.max_bytes = 1 << 20, .max_depth = 64};
    json_t *plain = NULL, *typed = NULL;
    cdsh_error e1 = {0}, e2 = {0};
    int rc = cdsh_toml_parse_with(text, size, &opts, &plain, &e1);
    opts.typed = 1;
    if (cdsh_toml_parse_with(text, size, &opts, &typed, &e2) != rc)
        abort();
    if (rc == 0) {
        if (!json_is_object(plain))
            abort();
        check_same(plain, typed);
    } else {
        unsigned long line, col;
        if (plain || typed || strcmp(e1.message, e2.message) != 0 || strcmp(e1.code, e2.code) != 0)
            abort();
        if ((rc == CDSH_EINVAL || rc == CDSH_ETOOBIG) &&
            (sscanf(e1.message, "line %lu, column %lu: ", &line, &col) != 2 || !line || !col))
            abort();
    }
    json_decref(plain);
    json_decref(typed);
    return 0;
}
