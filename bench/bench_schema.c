/* bench_schema.c — validations per second of a typical tool-argument schema
 * (six properties: a patterned string, an enum, a bounded integer, a boolean,
 * a nested object and an array of strings), valid and invalid arguments. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/schema.h"

static const char SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"pattern\":\"^[^\\\\u0000]+$"
    "\"},"
    "\"mode\":{\"type\":\"string\",\"enum\":[\"read\",\"write\",\"append\",\"delete\"]},"
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10000},"
    "\"recursive\":{\"type\":\"boolean\"},"
    "\"range\":{\"type\":\"object\",\"properties\":{\"start\":{\"type\":\"integer\",\"minimum\":0},"
    "\"end\":{\"type\":\"integer\",\"minimum\":0}},\"required\":[\"start\"],"
    "\"additionalProperties\":false},"
    "\"tags\":{\"type\":\"array\",\"maxItems\":32,\"items\":{\"type\":\"string\"}}},"
    "\"required\":[\"path\",\"mode\"]}";

static const char VALID[] = "{\"path\":\"src/base/schema.c\",\"mode\":\"read\",\"limit\":200,"
                            "\"recursive\":false,\"range\":{\"start\":10,\"end\":90},"
                            "\"tags\":[\"a\",\"bb\",\"ccc\"]}";
static const char INVALID[] = "{\"mode\":\"move\",\"limit\":0,\"range\":{\"end\":-1,\"x\":1},"
                              "\"tags\":[\"a\",2]}";

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void run(const char *label, const cdsh_schema *s, const json_t *value, long iterations)
{
    double start = now();
    long invalid = 0;
    for (long i = 0; i < iterations; i++) {
        json_t *violations = NULL;
        if (cdsh_schema_validate(s, value, "arguments", &violations) != 0)
            invalid++;
        json_decref(violations);
    }
    double secs = now() - start;
    printf("%-26s %9ld validations in %.3f s = %10.0f /s (%.2f us each, %ld invalid)\n", label,
           iterations, secs, (double)iterations / secs, secs * 1e6 / (double)iterations, invalid);
}

int main(void)
{
    json_t *js = json_loads(SCHEMA, 0, NULL);
    json_t *valid = json_loads(VALID, 0, NULL);
    json_t *invalid = json_loads(INVALID, 0, NULL);
    cdsh_schema *s = NULL;
    cdsh_error err = {0};
    if (!js || !valid || !invalid || cdsh_schema_compile(js, &s, &err) != 0) {
        fprintf(stderr, "bench_schema: setup failed: %s\n", err.message);
        return 1;
    }
    double start = now();
    enum { COMPILES = 2000 };
    for (int i = 0; i < COMPILES; i++) {
        cdsh_schema *t = NULL;
        if (cdsh_schema_compile(js, &t, NULL) == 0)
            cdsh_schema_free(t);
    }
    double secs = now() - start;
    printf("%-26s %9d compiles    in %.3f s = %10.0f /s\n", "compile (6 properties)", COMPILES,
           secs, COMPILES / secs);
    run("validate valid args", s, valid, 200000);
    run("validate invalid args (7)", s, invalid, 100000);
    cdsh_schema_free(s);
    json_decref(js);
    json_decref(valid);
    json_decref(invalid);
    return 0;
}
