/* test_toml.c — the TOML parser against every TOML 1.0 case of the public
 * toml-test corpus (valid cases compared with their typed JSON, invalid ones
 * rejected with a line and column), plus exact error messages, the plain
 * mapping, Codex-style config, CRLF, BOM, limits and concurrent parsing. */
#include "support/testkit.h"

#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/toml.h"

#define CORPUS CDSH_TEST_DATA_DIR "/toml-test/tests"

/* No case of the TOML 1.0 list is excluded. */

/* ---- corpus comparison, as toml-test compares ------------------------- */

static bool is_leaf(const json_t *v)
{
    return json_is_object(v) && json_object_size(v) == 2 &&
           json_is_string(json_object_get(v, "type")) &&
           json_is_string(json_object_get(v, "value"));
}

/* Date-times compare by canonical form: upper-case T and Z, a space
 * separator as T, trailing zeros of the fraction dropped. */
static void canonical_datetime(const char *in, char *out, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; in[i] && o + 1 < n; i++) {
        char c = in[i];
        if (c == 't' || (c == ' ' && i == 10))
            c = 'T';
        else if (c == 'z')
            c = 'Z';
        out[o++] = c;
    }
    out[o] = '\0';
    char *dot = strchr(out, '.');
    if (!dot)
        return;
    char *end = dot + 1;
    while (*end >= '0' && *end <= '9')
        end++;
    char *last = end;
    while (last > dot + 1 && last[-1] == '0')
        last--;
    if (last == dot + 1)
        last = dot;
    memmove(last, end, strlen(end) + 1);
}

static bool leaf_equal(const json_t *want, const json_t *got, char *why, size_t n)
{
    const char *wt = json_string_value(json_object_get(want, "type"));
    const char *gt = json_string_value(json_object_get(got, "type"));
    const char *wv = json_string_value(json_object_get(want, "value"));
    const char *gv = json_string_value(json_object_get(got, "value"));
    if (strcmp(wt, gt) != 0) {
        snprintf(why, n, "type %s, expected %s", gt, wt);
        return false;
    }
    bool same;
    if (strcmp(wt, "float") == 0) {
        double a = strtod(wv, NULL), b = strtod(gv, NULL);
        same = (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
    } else if (strncmp(wt, "date", 4) == 0 || strcmp(wt, "time-local") == 0) {
        char ca[128], cb[128];
        canonical_datetime(wv, ca, sizeof ca);
        canonical_datetime(gv, cb, sizeof cb);
        same = strcmp(ca, cb) == 0;
    } else {
        same = json_equal(json_object_get(want, "value"), json_object_get(got, "value"));
    }
    if (!same)
        snprintf(why, n, "%s value %s, expected %s", wt, gv, wv);
    return same;
}

static bool typed_equal(const json_t *want, const json_t *got, char *why, size_t n)
{
    if (is_leaf(want)) {
        if (!is_leaf(got)) {
            snprintf(why, n, "expected a typed leaf");
            return false;
        }
        return leaf_equal(want, got, why, n);
    }
    if (json_is_array(want)) {
        if (!json_is_array(got) || json_array_size(got) != json_array_size(want)) {
            snprintf(why, n, "array size differs");
            return false;
        }
        for (size_t i = 0; i < json_array_size(want); i++)
            if (!typed_equal(json_array_get(want, i), json_array_get(got, i), why, n))
                return false;
        return true;
    }
    if (!json_is_object(want) || !json_is_object(got) ||
        json_object_size(want) != json_object_size(got)) {
        snprintf(why, n, "table keys differ");
        return false;
    }
    const char *k;
    size_t klen;
    json_t *v;
    json_object_keylen_foreach((json_t *)want, k, klen, v) {
        char key[256];
        if (klen > sizeof key) {
            snprintf(why, n, "corpus key too long");
            return false;
        }
        size_t kn = 0;
        for (size_t i = 0; i < klen; i++) {
            if (i + 2 < klen && memcmp(k + i, "\xEF\xB7\x90", 3) == 0) {
                key[kn++] = '\0';
                i += 2;
            } else {
                key[kn++] = k[i];
            }
        }
        json_t *g = json_object_getn(got, key, kn);
        if (!g) {
            snprintf(why, n, "missing key %.*s", (int)klen, k);
            return false;
        }
        if (!typed_equal(v, g, why, n))
            return false;
    }
    return true;
}

static char *read_case(const char *rel, size_t *len)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", CORPUS, rel);
    char *text = cdsh_test_read_file(path, len);
    if (!text)
        fail_msg("cannot read corpus file %s", path);
    return text;
}

static bool message_has_position(const char *msg)
{
    regex_t re;
    assert_int_equal(regcomp(&re, "^line [1-9][0-9]*, column [1-9][0-9]*: .", REG_EXTENDED), 0);
    bool ok = regexec(&re, msg, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

static bool run_valid(const char *rel)
{
    size_t len;
    char *text = read_case(rel, &len);
    char jrel[1024];
    snprintf(jrel, sizeof jrel, "%.*s.json", (int)(strlen(rel) - 5), rel);
    size_t jlen;
    char *jtext = read_case(jrel, &jlen);
    json_error_t jerr;
    json_t *want = json_loadb(jtext, jlen, JSON_ALLOW_NUL, &jerr);
    if (!want) {
        /* jansson refuses NUL in object keys (valid/key/quoted-unicode has one):
         * read \u0000 as U+FDD0, which key lookup maps back. */
        for (char *u = strstr(jtext, "\\u0000"); u; u = strstr(u + 1, "\\u0000"))
            if (u == jtext || u[-1] != '\\') /* not an escaped backslash before u0000 */
                memcpy(u, "\\uFDD0", 6);
        want = json_loadb(jtext, jlen, 0, &jerr);
        if (!want)
            fail_msg("%s: %s", jrel, jerr.text);
    }
    json_t *got = NULL, *plain = NULL;
    cdsh_error err = {0};
    bool ok = false;
    char why[512] = "";
    if (cdsh_toml_parse_typed(text, len, &got, &err) != 0) {
        snprintf(why, sizeof why, "rejected: %.400s", err.message);
    } else if (typed_equal(want, got, why, sizeof why)) {
        /* The plain form must accept the same document. */
        ok = cdsh_toml_parse(text, len, &plain, &err) == 0;
        if (!ok)
            snprintf(why, sizeof why, "plain form rejected: %.400s", err.message);
    }
    if (!ok)
        printf("FAIL %s: %s\n", rel, why);
    json_decref(plain);
    json_decref(got);
    json_decref(want);
    free(jtext);
    free(text);
    return ok;
}

static bool run_invalid(const char *rel)
{
    size_t len;
    char *text = read_case(rel, &len);
    json_t *got = NULL;
    cdsh_error err = {0};
    int rc = cdsh_toml_parse(text, len, &got, &err);
    bool ok = rc == CDSH_EINVAL && got == NULL && strcmp(err.code, "BAD_TOML") == 0 &&
              message_has_position(err.message);
    if (ok) {
        cdsh_error err2 = {0};
        ok = cdsh_toml_parse_typed(text, len, &got, &err2) == CDSH_EINVAL &&
             strcmp(err.message, err2.message) == 0;
    }
    if (!ok)
        printf("FAIL %s: rc %d, code '%s', message '%s'\n", rel, rc, err.code, err.message);
    json_decref(got);
    free(text);
    return ok;
}

static void corpus_toml_1_0_cases_all_pass(void **state)
{
    (void)state;
    size_t len;
    char *list = read_case("files-toml-1.0.0", &len);
    int valid = 0, valid_ok = 0, invalid = 0, invalid_ok = 0;
    for (char *line = strtok(list, "\n"); line; line = strtok(NULL, "\n")) {
        size_t n = strlen(line);
        if (n < 5 || strcmp(line + n - 5, ".toml") != 0)
            continue;
        if (strncmp(line, "valid/", 6) == 0) {
            valid++;
            valid_ok += run_valid(line);
        } else if (strncmp(line, "invalid/", 8) == 0) {
            invalid++;
            invalid_ok += run_invalid(line);
        }
    }
    free(list);
    printf("toml-test (TOML 1.0): %d/%d valid cases match, %d/%d invalid cases rejected\n",
           valid_ok, valid, invalid_ok, invalid);
    /* The list of the pinned corpus holds 210 valid and 499 invalid cases. */
    assert_int_equal(valid, 210);
    assert_int_equal(invalid, 499);
    assert_int_equal(valid_ok, valid);
    assert_int_equal(invalid_ok, invalid);
}

/* ---- exact messages ---------------------------------------------------- */

static void expect_error(const char *text, size_t len, int rc, const char *code, const char *msg)
{
    json_t *out = (json_t *)0x1;
    cdsh_error err = {0};
    int got = cdsh_toml_parse(text, len, &out, &err);
    if (got != rc || strcmp(err.code, code) != 0 || strcmp(err.message, msg) != 0)
        fail_msg("for %s\n got  %d %s '%s'\n want %d %s '%s'", text, got, err.code, err.message, rc,
                 code, msg);
    assert_null(out);
    assert_int_equal(err.rc, rc);
}

static void bad(const char *text, const char *msg)
{
    expect_error(text, strlen(text), CDSH_EINVAL, "BAD_TOML", msg);
}

static void errors_name_line_and_column_in_characters(void **state)
{
    (void)state;
    bad("a = 1\nb = \n", "line 2, column 5: expected a value, found end of line");
    bad("a = 1\na = 2\n", "line 2, column 1: duplicate key 'a' (already an integer)");
    bad("x = \"\xC3\xA9\xE2\x82\xAC\\q\"",
        "line 1, column 8: invalid escape sequence: backslash followed by 'q'");
    bad("[a]\nx = 1\n[a]\n", "line 3, column 2: table 'a' is defined twice");
    bad("d = 2023-02-29\n", "line 1, column 13: day 29 does not exist in 2023-02");
    bad("n = 9223372036854775808", "line 1, column 5: integer out of 64-bit range");
    bad("n = 0x8000000000000000", "line 1, column 5: integer out of 64-bit range");
    bad("n = 012", "line 1, column 5: leading zeros are not allowed in a number");
    bad("n = 1__2", "line 1, column 6: an underscore in a number must sit between two digits");
    bad("n = +0x10", "line 1, column 5: a hexadecimal integer cannot have a sign");
    bad("f = 1e400", "line 1, column 5: float out of range");
    bad("s = \"abc", "line 1, column 9: unterminated string: no closing quote before the end of "
                     "file");
    bad("s = \"ab\ncd\"",
        "line 1, column 8: a single-line string must end before the end of the line");
    bad("s = \"a\x01\"",
        "line 1, column 7: control character U+0001 is not allowed in a string; write it as an "
        "escape");
    bad("k = \"\xFF\"", "line 1, column 6: invalid UTF-8 starting at byte 0xFF");
    bad("k = \"\xED\xA0\x80\"", "line 1, column 6: invalid UTF-8 starting at byte 0xED");
    bad("# \xE2\x82\xAC\xE2\x82\n", "line 1, column 4: invalid UTF-8 starting at byte 0xE2");
    bad("s = \"\\uD800\"", "line 1, column 6: escape \\uD800 is not a Unicode scalar value");
    bad("a = 1 b = 2", "line 1, column 7: expected a newline after a key/value pair, found 'b'");
    bad("a = {b = 1,}", "line 1, column 11: a trailing comma is not allowed in an inline table");
    bad("a = {b = 1\n}", "line 1, column 11: an inline table must end on the line where it starts");
    bad("a = [1 2]", "line 1, column 8: expected ',' or ']' in an array, found '2'");
    bad("a.b = 1\n[a]\n",
        "line 2, column 2: cannot define table 'a': it was already defined by dotted keys");
    bad("a = {}\n[a.b]\n", "line 2, column 2: cannot extend inline table 'a'");
    bad("a = {b = {}}\na.b.c = 1\n", "line 2, column 1: cannot add keys to an inline table 'a' "
                                     "defined elsewhere");
    bad("a = []\n[[a]]\n",
        "line 2, column 3: cannot define array of tables 'a': it is already an array");
    bad("[[a]]\n[a]\n", "line 2, column 2: cannot define table 'a': it is already an array of "
                        "tables");
    bad("[a.b.c]\n[a]\nb.c.d = 1\n",
        "line 3, column 1: cannot add keys to a table 'b' defined elsewhere");
    bad("t = 07:32\n", "line 1, column 10: a time needs two-digit seconds (TOML 1.0 requires "
                       "them)");
    bad("t = 1979-05-27T07:32:00+24:00\n", "line 1, column 24: time offset +24:00 is out of range");
    bad("x = yes", "line 1, column 5: invalid value 'yes'");
    bad("# c\x7f\n", "line 1, column 4: control character U+007F is not allowed in a comment");
    bad("a = 1\r", "line 1, column 6: a carriage return must be followed by a newline");
    bad("[a\n", "line 1, column 3: expected ']' to close the table header, found end of line");
    bad("\"\"\"k\"\"\" = 1", "line 1, column 1: a multi-line string cannot be a key");
    bad("= 1", "line 1, column 1: expected a key, found '='");
    bad("s = '''a''''''", "line 1, column 14: too many quotes at the end of a multi-line string");
}

/* ---- plain and typed mappings ------------------------------------------ */

static json_t *parse_ok(const char *text, bool typed)
{
    json_t *out = NULL;
    cdsh_error err = {0};
    int rc = typed ? cdsh_toml_parse_typed(text, strlen(text), &out, &err)
                   : cdsh_toml_parse(text, strlen(text), &out, &err);
    if (rc != 0)
        fail_msg("refused %s: %s", text, err.message);
    return out;
}

static void expect_dump(const char *toml, bool typed, const char *json)
{
    json_t *v = parse_ok(toml, typed);
    char *dump = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (strcmp(dump, json) != 0)
        fail_msg("for %s\n got  %s\n want %s", toml, dump, json);
    free(dump);
    json_decref(v);
}

static void plain_mapping_keeps_order_and_canonical_datetimes(void **state)
{
    (void)state;
    expect_dump("z = 1\na = true\nm = 'x'\n", false, "{\"z\":1,\"a\":true,\"m\":\"x\"}");
    expect_dump("odt = 1979-05-27 07:32:00.50z\n"
                "off = 1979-05-27t07:32:00-07:30\n"
                "ldt = 1979-05-27T07:32:00.999999\n"
                "ld = 1979-05-27\n"
                "lt = 00:32:00.5\n",
                false,
                "{\"odt\":\"1979-05-27T07:32:00.50Z\",\"off\":\"1979-05-27T07:32:00-07:30\","
                "\"ldt\":\"1979-05-27T07:32:00.999999\",\"ld\":\"1979-05-27\","
                "\"lt\":\"00:32:00.5\"}");
    expect_dump("min = -9_223_372_036_854_775_808\nmax = 0x7fff_ffff_ffff_ffff\n"
                "o = 0o755\nb = 0b1010\n",
                false,
                "{\"min\":-9223372036854775808,\"max\":9223372036854775807,\"o\":493,\"b\":10}");
    expect_dump("a = inf\nb = -inf\nc = nan\nd = 1.5\ne = -0.0\n", false,
                "{\"a\":\"inf\",\"b\":\"-inf\",\"c\":\"nan\",\"d\":1.5,\"e\":-0.0}");
    expect_dump("[b]\nx = 1\n[a]\ny = 2\n[b.c]\n", false,
                "{\"b\":{\"x\":1,\"c\":{}},\"a\":{\"y\":2}}");
    expect_dump("[[t]]\nn = 1\n[[t]]\n[t.s]\nk = 'v'\n", false,
                "{\"t\":[{\"n\":1},{\"s\":{\"k\":\"v\"}}]}");
    expect_dump("\"a\\u0000b\" = \"\\u0000\"\n", false, "{\"a\\u0000b\":\"\\u0000\"}");
    expect_dump("s = \"\"\"\n  one \\\n    two\"\"\"\"\"\n", false,
                "{\"s\":\"  one two\\\"\\\"\"}");
}

static void typed_mapping_keeps_every_toml_type(void **state)
{
    (void)state;
    expect_dump("f = 0.1\ng = -0.0\nh = 1e300\ni = -nan\nj = +inf\n", true,
                "{\"f\":{\"type\":\"float\",\"value\":\"0.1\"},"
                "\"g\":{\"type\":\"float\",\"value\":\"-0\"},"
                "\"h\":{\"type\":\"float\",\"value\":\"1e+300\"},"
                "\"i\":{\"type\":\"float\",\"value\":\"nan\"},"
                "\"j\":{\"type\":\"float\",\"value\":\"inf\"}}");
    expect_dump("n = -9223372036854775808\nb = false\ns = \"inf\"\n", true,
                "{\"n\":{\"type\":\"integer\",\"value\":\"-9223372036854775808\"},"
                "\"b\":{\"type\":\"bool\",\"value\":\"false\"},"
                "\"s\":{\"type\":\"string\",\"value\":\"inf\"}}");
    expect_dump("a = [1979-05-27T07:32:00Z, 1979-05-27T07:32:00, 1979-05-27, 07:32:00]\n", true,
                "{\"a\":[{\"type\":\"datetime\",\"value\":\"1979-05-27T07:32:00Z\"},"
                "{\"type\":\"datetime-local\",\"value\":\"1979-05-27T07:32:00\"},"
                "{\"type\":\"date-local\",\"value\":\"1979-05-27\"},"
                "{\"type\":\"time-local\",\"value\":\"07:32:00\"}]}");
    expect_dump("t = {}\na = []\n", true, "{\"t\":{},\"a\":[]}");
}

static void dates_follow_the_calendar(void **state)
{
    (void)state;
    expect_dump("a = 2000-02-29\nb = 2024-02-29\nc = 1987-07-05T23:59:60Z\n", false,
                "{\"a\":\"2000-02-29\",\"b\":\"2024-02-29\",\"c\":\"1987-07-05T23:59:60Z\"}");
    bad("a = 1900-02-29", "line 1, column 13: day 29 does not exist in 1900-02");
    bad("a = 2024-04-31", "line 1, column 13: day 31 does not exist in 2024-04");
    bad("a = 2024-13-01", "line 1, column 10: month 13 is out of range (01-12)");
    bad("a = 2024-01-01T24:00:00", "line 1, column 16: hour 24 is out of range (00-23)");
    bad("a = 12:00:61", "line 1, column 11: second 61 is out of range (00-60)");
}

/* ---- Codex config ------------------------------------------------------ */

static const char CODEX[] =
    "# ~/.codex/config.toml\n"
    "model = \"o3\"\n"
    "approval_policy = \"on-request\"\n"
    "\n"
    "[mcp_servers.docs]\n"
    "command = \"npx\"\n"
    "args = [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/tmp\"]\n"
    "env = { \"API_KEY\" = \"x\", LOG = \"debug\" }\n"
    "startup_timeout_sec = 20\n"
    "tool_timeout_sec = 60.5\n"
    "\n"
    "[mcp_servers.remote]\n"
    "url = \"https://example.com/mcp\"\n"
    "bearer_token_env_var = \"REMOTE_TOKEN\"\n"
    "env_http_headers = { \"X-Api-Key\" = \"REMOTE_KEY\" }\n"
    "http_headers = { \"X-Team\" = \"core\" }\n"
    "enabled = false\n"
    "\n"
    "[mcp_servers.\"name.with.dots\"]\n"
    "command = '''C:\\tools\\server.exe'''\n"
    "args = [\n"
    "  \"--port\", # the port\n"
    "  \"8080\",\n"
    "]\n";

static const char CODEX_JSON[] =
    "{\"model\":\"o3\",\"approval_policy\":\"on-request\",\"mcp_servers\":{"
    "\"docs\":{\"command\":\"npx\",\"args\":[\"-y\",\"@modelcontextprotocol/server-filesystem\","
    "\"/tmp\"],\"env\":{\"API_KEY\":\"x\",\"LOG\":\"debug\"},\"startup_timeout_sec\":20,"
    "\"tool_timeout_sec\":60.5},"
    "\"remote\":{\"url\":\"https://example.com/mcp\",\"bearer_token_env_var\":\"REMOTE_TOKEN\","
    "\"env_http_headers\":{\"X-Api-Key\":\"REMOTE_KEY\"},\"http_headers\":{\"X-Team\":\"core\"},"
    "\"enabled\":false},"
    "\"name.with.dots\":{\"command\":\"C:\\\\tools\\\\server.exe\",\"args\":[\"--port\","
    "\"8080\"]}}}";

static void codex_config_maps_mcp_servers(void **state)
{
    (void)state;
    expect_dump(CODEX, false, CODEX_JSON);
    json_t *v = parse_ok(CODEX, false);
    json_t *docs = json_object_get(json_object_get(v, "mcp_servers"), "docs");
    assert_true(json_is_integer(json_object_get(docs, "startup_timeout_sec")));
    assert_true(json_is_real(json_object_get(docs, "tool_timeout_sec")));
    json_decref(v);
}

static void crlf_and_bom_parse_like_lf(void **state)
{
    (void)state;
    const char *lf = "a = 1 # one\n[t]\ns = \"\"\"\nx\ny\"\"\"\nr = '''\nz'''\n";
    const char *crlf = "a = 1 # one\r\n[t]\r\ns = \"\"\"\r\nx\r\ny\"\"\"\r\nr = '''\r\nz'''\r\n";
    char bom[128];
    snprintf(bom, sizeof bom, "\xEF\xBB\xBF%s", crlf);
    const char *want = "{\"a\":1,\"t\":{\"s\":\"x\\ny\",\"r\":\"z\"}}";
    expect_dump(lf, false, want);
    expect_dump(crlf, false, want);
    expect_dump(bom, false, want);
    /* Columns count from after the BOM; a BOM anywhere else is an error. */
    bad("\xEF\xBB\xBF"
        "a = x",
        "line 1, column 5: invalid value 'x'");
    bad("a = 1\n\xEF\xBB\xBF"
        "b = 2",
        "line 2, column 1: expected a key, found U+FEFF");
    bad("a = 1\r\nb = 2\r\nc = \r\n", "line 3, column 5: expected a value, found end of line");
    bad("s = \"\"\"a\rb\"\"\"",
        "line 1, column 9: control character U+000D is not allowed in a string; write it as an "
        "escape");
}

/* ---- limits and arguments ---------------------------------------------- */

static void limits_bound_size_depth_and_key_length(void **state)
{
    (void)state;
    char deep[600];
    size_t o = (size_t)snprintf(deep, sizeof deep, "a = ");
    for (int i = 0; i < 200; i++)
        deep[o++] = '[';
    for (int i = 0; i < 200; i++)
        deep[o++] = ']';
    deep[o] = '\0';
    expect_error(deep, o, CDSH_ETOOBIG, "TOML_TOO_BIG",
                 "line 1, column 133: nesting deeper than 128 levels");

    cdsh_toml_options opts = {.max_depth = 4};
    json_t *out = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_toml_parse_with("a = [[[[1]]]]", 13, &opts, &out, &err), 0);
    json_decref(out);
    assert_int_equal(cdsh_toml_parse_with("a = [[[[[1]]]]]", 15, &opts, &out, &err), CDSH_ETOOBIG);
    assert_string_equal(err.message, "line 1, column 9: nesting deeper than 4 levels");
    assert_int_equal(cdsh_toml_parse_with("[a.b.c.d]", 9, &opts, &out, &err), 0);
    json_decref(out);
    assert_int_equal(cdsh_toml_parse_with("[a.b.c.d.e]", 11, &opts, &out, &err), CDSH_ETOOBIG);
    assert_string_equal(err.message, "line 1, column 10: a key with more than 4 parts");
    assert_int_equal(cdsh_toml_parse_with("[a.b.c]\nd.e.f = 1", 17, &opts, &out, &err),
                     CDSH_ETOOBIG);
    assert_string_equal(err.message, "line 2, column 3: nesting deeper than 4 levels");
    assert_null(out);

    /* A huge max_depth is lowered to the cap, so recursion stays bounded. */
    char *very = malloc(1300);
    size_t vn = (size_t)snprintf(very, 1300, "a = ");
    for (int i = 0; i < 600; i++)
        very[vn++] = '[';
    for (int i = 0; i < 600; i++)
        very[vn++] = ']';
    opts = (cdsh_toml_options){.max_depth = 1 << 30};
    assert_int_equal(cdsh_toml_parse_with(very, vn, &opts, &out, &err), CDSH_ETOOBIG);
    assert_string_equal(err.message, "line 1, column 517: nesting deeper than 512 levels");
    free(very);

    opts = (cdsh_toml_options){.max_bytes = 10};
    assert_int_equal(cdsh_toml_parse_with("a = 123456", 10, &opts, &out, &err), 0);
    json_decref(out);
    assert_int_equal(cdsh_toml_parse_with("a = 1234567", 11, &opts, &out, &err), CDSH_ETOOBIG);
    assert_string_equal(err.code, "TOML_TOO_BIG");
    assert_string_equal(err.message, "the TOML document is 11 bytes, over the limit of 10");
}

static void arguments_are_checked(void **state)
{
    (void)state;
    cdsh_error err = {0};
    assert_int_equal(cdsh_toml_parse("a = 1", 5, NULL, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_ARGS");
    json_t *out = NULL;
    assert_int_equal(cdsh_toml_parse(NULL, 1, &out, &err), CDSH_EINVAL);
    assert_null(out);
    assert_int_equal(cdsh_toml_parse(NULL, 0, &out, NULL), 0);
    assert_true(json_is_object(out) && json_object_size(out) == 0);
    json_decref(out);
    /* Not NUL-terminated: only len bytes are read. */
    assert_int_equal(cdsh_toml_parse("a = 1b = 2", 5, &out, NULL), 0);
    assert_int_equal(json_integer_value(json_object_get(out, "a")), 1);
    json_decref(out);
}

static void large_tables_find_duplicates(void **state)
{
    (void)state;
    enum { N = 3000 };
    size_t cap = N * 24 + 64;
    char *doc = malloc(cap);
    size_t o = 0;
    for (int i = 0; i < N; i++)
        o += (size_t)snprintf(doc + o, cap - o, "k%d = %d\n", i, i);
    json_t *out = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_toml_parse(doc, o, &out, &err), 0);
    assert_int_equal(json_object_size(out), N);
    for (int i = 0; i < N; i += 97) {
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        assert_int_equal(json_integer_value(json_object_get(out, k)), i);
    }
    json_decref(out);
    o += (size_t)snprintf(doc + o, cap - o, "k1777 = 0\n");
    assert_int_equal(cdsh_toml_parse(doc, o, &out, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "line 3001, column 1: duplicate key 'k1777' (already an "
                                     "integer)");
    free(doc);
}

static void *parse_codex(void *arg)
{
    (void)arg;
    for (int i = 0; i < 200; i++) {
        json_t *out = NULL;
        if (cdsh_toml_parse(CODEX, sizeof CODEX - 1, &out, NULL) != 0)
            return (void *)1;
        char *dump = json_dumps(out, JSON_COMPACT);
        bool same = strcmp(dump, CODEX_JSON) == 0;
        free(dump);
        json_decref(out);
        if (!same)
            return (void *)1;
    }
    return NULL;
}

static void threads_parse_concurrently(void **state)
{
    (void)state;
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, parse_codex, NULL), 0);
    for (int i = 0; i < 4; i++) {
        void *r = (void *)1;
        pthread_join(t[i], &r);
        assert_null(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(corpus_toml_1_0_cases_all_pass),
        cmocka_unit_test(errors_name_line_and_column_in_characters),
        cmocka_unit_test(plain_mapping_keeps_order_and_canonical_datetimes),
        cmocka_unit_test(typed_mapping_keeps_every_toml_type),
        cmocka_unit_test(dates_follow_the_calendar),
        cmocka_unit_test(codex_config_maps_mcp_servers),
        cmocka_unit_test(crlf_and_bom_parse_like_lf),
        cmocka_unit_test(limits_bound_size_depth_and_key_length),
        cmocka_unit_test(arguments_are_checked),
        cmocka_unit_test(large_tables_find_duplicates),
        cmocka_unit_test(threads_parse_concurrently),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
