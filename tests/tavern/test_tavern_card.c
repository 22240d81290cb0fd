/* test_tavern_card.c — character cards: V1/V2/V3 JSON, PNG with tEXt, zTXt
 * and iTXt chunks, CHARX, embedded books, regex scripts, depth_prompt,
 * export round trips, ids, and every rejection of bad input. */
#include "support/testkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zip.h>
#include <zlib.h>

#include "base/json.h"
#include "base/base64.h"
#include "plugins/tavern/card.h"
#include "plugins/tavern/png.h"

#define SAMPLE_V2 CDSH_TEST_DATA("tavern-samples/st-card-v2-seraphina.json")

static json_t *load_json(const char *path)
{
    json_t *j = json_load_file(path, 0, NULL);
    assert_non_null(j);
    return j;
}

static cdsh_tavern_card *parse_text(const char *text, cdsh_error *err)
{
    cdsh_tavern_card *card = NULL;
    int rc = cdsh_tavern_card_parse((const uint8_t *)text, strlen(text), &card, err);
    return rc == 0 ? card : NULL;
}

static cdsh_tavern_card *parse_ok(const uint8_t *bytes, size_t len)
{
    cdsh_tavern_card *card = NULL;
    cdsh_error err = {0};
    int rc = cdsh_tavern_card_parse(bytes, len, &card, &err);
    if (rc != 0)
        fail_msg("parse failed: %s: %s", err.code, err.message);
    return card;
}

static void expect_error(const uint8_t *bytes, size_t len, const char *code)
{
    cdsh_tavern_card *card = NULL;
    cdsh_error err = {0};
    int rc = cdsh_tavern_card_parse(bytes, len, &card, &err);
    assert_true(rc < 0);
    assert_null(card);
    assert_string_equal(err.code, code);
    assert_true(strlen(err.message) > 10);
}

static void expect_text_error(const char *text, const char *code)
{
    expect_error((const uint8_t *)text, strlen(text), code);
}

static const json_t *data_of(const cdsh_tavern_card *c)
{
    return json_object_get(cdsh_tavern_card_record_get(c), "data");
}

static const char *data_str(const cdsh_tavern_card *c, const char *key)
{
    return json_string_value(json_object_get(data_of(c), key));
}

/* ---- PNG building helpers ---------------------------------------------------------- */

typedef struct pngb {
    uint8_t *d;
    size_t n;
} pngb;

static void pb_put(pngb *b, const void *p, size_t n)
{
    if (n == 0)
        return;
    b->d = realloc(b->d, b->n + n);
    memcpy(b->d + b->n, p, n);
    b->n += n;
}

static void pb_chunk(pngb *b, const char *type, const uint8_t *body, size_t n)
{
    uint8_t h[8] = {(uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
    memcpy(h + 4, type, 4);
    pb_put(b, h, 8);
    pb_put(b, body, n);
    uLong crc = crc32(crc32(0, (const Bytef *)type, 4), body, (uInt)n);
    uint8_t c[4] = {(uint8_t)(crc >> 24), (uint8_t)(crc >> 16), (uint8_t)(crc >> 8), (uint8_t)crc};
    pb_put(b, c, 4);
}

/* A 1×1 PNG (from the module's placeholder) with extra chunks before IEND. */
static pngb png_start(void)
{
    uint8_t *base = NULL;
    size_t n = 0;
    assert_int_equal(cdsh_tavern_png_embed(NULL, 0, "", NULL, &base, &n, NULL), 0);
    pngb b = {0};
    /* Copy everything except the empty chara chunk (8+6+4 bytes) and IEND (12). */
    size_t keep = n - 12 - (8 + 6 + 4);
    pb_put(&b, base, keep);
    free(base);
    return b;
}

static void png_end(pngb *b)
{
    pb_chunk(b, "IEND", NULL, 0);
}

static char *b64_of(const char *json)
{
    return cdsh_base64_encode_dup((const uint8_t *)json, strlen(json));
}

static void add_text(pngb *b, const char *kw, const char *json)
{
    char *t = b64_of(json);
    size_t kl = strlen(kw), tl = strlen(t);
    uint8_t *body = malloc(kl + 1 + tl);
    memcpy(body, kw, kl + 1);
    memcpy(body + kl + 1, t, tl);
    pb_chunk(b, "tEXt", body, kl + 1 + tl);
    free(body);
    free(t);
}

static uint8_t *deflate_dup(const void *src, size_t n, size_t *out_n)
{
    uLongf cap = compressBound(n);
    uint8_t *out = malloc(cap);
    assert_int_equal(compress2(out, &cap, src, n, 9), Z_OK);
    *out_n = cap;
    return out;
}

static void add_ztxt_raw(pngb *b, const char *kw, const void *payload, size_t pn)
{
    size_t zn = 0;
    uint8_t *z = deflate_dup(payload, pn, &zn);
    size_t kl = strlen(kw);
    uint8_t *body = malloc(kl + 2 + zn);
    memcpy(body, kw, kl + 1);
    body[kl + 1] = 0;
    memcpy(body + kl + 2, z, zn);
    pb_chunk(b, "zTXt", body, kl + 2 + zn);
    free(body);
    free(z);
}

static void add_itxt(pngb *b, const char *kw, const char *json, bool compressed)
{
    char *t = b64_of(json);
    size_t pn = strlen(t);
    uint8_t *payload = (uint8_t *)t;
    uint8_t *z = NULL;
    if (compressed)
        payload = z = deflate_dup(t, strlen(t), &pn);
    size_t kl = strlen(kw);
    size_t n = kl + 1 + 2 + 3 + 1 + pn; /* kw\0 flag method "en\0" "\0" text */
    uint8_t *body = malloc(n);
    size_t o = 0;
    memcpy(body, kw, kl + 1);
    o = kl + 1;
    body[o++] = compressed ? 1 : 0;
    body[o++] = 0;
    memcpy(body + o, "en", 3);
    o += 3;
    body[o++] = 0;
    memcpy(body + o, payload, pn);
    pb_chunk(b, "iTXt", body, n);
    free(body);
    free(t);
    free(z);
}

static const char *V2_CARD =
    "{\"spec\":\"chara_card_v2\",\"spec_version\":\"2.0\",\"data\":{\"name\":\"Alice\","
    "\"description\":\"d\",\"personality\":\"p\",\"scenario\":\"s\",\"first_mes\":\"hi\","
    "\"mes_example\":\"<START>\",\"creator_notes\":\"n\",\"system_prompt\":\"sp\","
    "\"post_history_instructions\":\"ph\",\"alternate_greetings\":[\"a\",\"b\"],\"tags\":[\"t\"],"
    "\"creator\":\"me\",\"character_version\":\"1\",\"extensions\":{\"x_custom\":{\"k\":1}},"
    "\"mystery\":42}}";

static const char *V3_CARD =
    "{\"spec\":\"chara_card_v3\",\"spec_version\":\"3.0\",\"data\":{\"name\":\"Bob\","
    "\"description\":\"\",\"personality\":\"\",\"scenario\":\"\",\"first_mes\":\"yo\","
    "\"mes_example\":\"\",\"creator_notes\":\"\",\"system_prompt\":\"\","
    "\"post_history_instructions\":\"\",\"alternate_greetings\":[],\"tags\":[],\"creator\":\"\","
    "\"character_version\":\"\",\"extensions\":{},\"nickname\":\"Bobby\","
    "\"group_only_greetings\":[\"g\"],\"creator_notes_multilingual\":{\"zh\":\"你好\"},"
    "\"source\":[\"https://example.org\"],\"creation_date\":1700000000,"
    "\"modification_date\":1700000001,\"assets\":[{\"type\":\"icon\",\"uri\":\"ccdefault:\","
    "\"name\":\"main\",\"ext\":\"png\"}],\"character_book\":{\"name\":\"BobBook\",\"entries\":[{"
    "\"keys\":[\"k\"],\"content\":\"c\",\"extensions\":{},\"enabled\":true,\"insertion_order\":5,"
    "\"use_regex\":true,\"id\":\"a1\"}]}}}";

/* ---- JSON cards ------------------------------------------------------------------------ */

static void v1_card_imports_every_field_and_keeps_unknown_keys(void **state)
{
    (void)state;
    cdsh_error err = {0};
    cdsh_tavern_card *c = parse_text(
        "{\"name\":\"Old\",\"description\":\"D\",\"personality\":\"P\",\"scenario\":\"S\","
        "\"first_mes\":\"F\",\"mes_example\":\"M\",\"talkativeness\":\"0.5\",\"spec\":\"odd\"}",
        &err);
    assert_non_null(c);
    const json_t *rec = cdsh_tavern_card_record_get(c);
    assert_string_equal(json_string_value(json_object_get(rec, "spec")), "chara_card_v1");
    assert_string_equal(data_str(c, "description"), "D");
    assert_string_equal(data_str(c, "personality"), "P");
    assert_string_equal(data_str(c, "scenario"), "S");
    assert_string_equal(data_str(c, "first_mes"), "F");
    assert_string_equal(data_str(c, "mes_example"), "M");
    assert_string_equal(data_str(c, "creator_notes"), "");
    assert_true(json_is_array(json_object_get(data_of(c), "alternate_greetings")));
    json_t *ext = json_object_get(data_of(c), "extensions");
    assert_string_equal(json_string_value(json_object_get(ext, "talkativeness")), "0.5");
    assert_string_equal(json_string_value(json_object_get(ext, "spec")), "odd");
    assert_string_equal(cdsh_tavern_card_name_get(c), "Old");
    cdsh_tavern_card_free(c);
}

static void v2_sample_keeps_every_field_and_its_book(void **state)
{
    (void)state;
    json_t *sample = load_json(SAMPLE_V2);
    cdsh_tavern_card *c = NULL;
    cdsh_error err = {0};
    assert_int_equal(cdsh_tavern_card_from_json(sample, false, NULL, 0, &c, &err), 0);
    json_t *sd = json_object_get(sample, "data");
    const char *k;
    json_t *v;
    json_object_foreach(sd, k, v) {
        if (!strcmp(k, "character_book"))
            continue;
        if (!cdsh_json_equal(v, json_object_get(data_of(c), k)))
            fail_msg("field %s differs", k);
    }
    const json_t *rec = cdsh_tavern_card_record_get(c);
    json_t *extra = json_object_get(rec, "extra");
    assert_string_equal(json_string_value(json_object_get(extra, "avatar")), "none");
    assert_non_null(json_object_get(extra, "create_date"));
    assert_null(json_object_get(extra, "description")); /* mirrors are regenerated */
    const json_t *book = cdsh_tavern_card_book_get(c);
    assert_string_equal(json_string_value(json_object_get(book, "name")), "Eldoria");
    assert_int_equal(json_array_size(json_object_get(book, "entries")), 4);
    assert_true(json_is_object(json_object_get(book, "extensions")));
    json_t *e0 = json_array_get(json_object_get(book, "entries"), 0);
    assert_string_equal(json_string_value(json_object_get(e0, "position")), "before_char");
    assert_string_equal(json_string_value(json_object_get(rec, "book_source")),
                        "data.character_book");
    json_t *info = cdsh_tavern_card_inspect_dup(c);
    assert_string_equal(json_string_value(json_object_get(info, "characterBookName")), "Eldoria");
    assert_int_equal(json_integer_value(json_object_get(info, "entryCount")), 4);
    assert_false(json_is_true(json_object_get(info, "hasAvatar")));
    json_decref(info);
    json_decref(sample);
    cdsh_tavern_card_free(c);
}

static void v2_unknown_data_keys_move_into_extensions(void **state)
{
    (void)state;
    cdsh_error err = {0};
    cdsh_tavern_card *c = parse_text(V2_CARD, &err);
    assert_non_null(c);
    json_t *ext = json_object_get(data_of(c), "extensions");
    assert_int_equal(json_integer_value(json_object_get(ext, "mystery")), 42);
    assert_non_null(json_object_get(ext, "x_custom"));
    assert_null(json_object_get(data_of(c), "mystery"));
    assert_string_equal(data_str(c, "post_history_instructions"), "ph");
    assert_int_equal(json_array_size(json_object_get(data_of(c), "alternate_greetings")), 2);
    cdsh_tavern_card_free(c);
}

static void v3_card_keeps_v3_fields(void **state)
{
    (void)state;
    cdsh_error err = {0};
    cdsh_tavern_card *c = parse_text(V3_CARD, &err);
    assert_non_null(c);
    const json_t *d = data_of(c);
    assert_string_equal(json_string_value(json_object_get(d, "nickname")), "Bobby");
    assert_int_equal(json_array_size(json_object_get(d, "group_only_greetings")), 1);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(d, "creator_notes_multilingual"), "zh")),
        "你好");
    assert_int_equal(json_integer_value(json_object_get(d, "creation_date")), 1700000000);
    assert_int_equal(json_integer_value(json_object_get(d, "modification_date")), 1700000001);
    assert_int_equal(json_array_size(json_object_get(d, "assets")), 1);
    assert_int_equal(json_array_size(json_object_get(d, "source")), 1);
    json_t *e = json_array_get(json_object_get(cdsh_tavern_card_book_get(c), "entries"), 0);
    assert_true(json_is_true(json_object_get(e, "use_regex")));
    assert_string_equal(json_string_value(json_object_get(e, "id")), "a1");
    cdsh_tavern_card_free(c);
}

static void spec_detection_follows_spec_then_data(void **state)
{
    (void)state;
    cdsh_error err = {0};
    cdsh_tavern_card *c = parse_text("{\"data\":{\"name\":\"N\"}}", &err);
    assert_string_equal(json_string_value(json_object_get(cdsh_tavern_card_record_get(c), "spec")),
                        "chara_card_v2");
    cdsh_tavern_card_free(c);
    json_t *root = json_pack("{s:s}", "name", "Hinted");
    assert_int_equal(cdsh_tavern_card_from_json(root, true, NULL, 0, &c, &err), 0);
    assert_string_equal(json_string_value(json_object_get(cdsh_tavern_card_record_get(c), "spec")),
                        "chara_card_v3");
    json_decref(root);
    cdsh_tavern_card_free(c);
    /* V2 with data missing falls back to the top level. */
    c = parse_text("{\"spec\":\"chara_card_v2\",\"name\":\"Flat\",\"first_mes\":\"f\"}", &err);
    assert_non_null(c);
    assert_string_equal(data_str(c, "first_mes"), "f");
    assert_null(json_object_get(json_object_get(data_of(c), "extensions"), "spec"));
    cdsh_tavern_card_free(c);
}

static void book_candidates_are_found_in_every_listed_place(void **state)
{
    (void)state;
    const char *cards[] = {
        "{\"spec\":\"chara_card_v2\",\"data\":{\"name\":\"A\",\"lorebook\":{\"entries\":[{"
        "\"keys\":[\"x\"],\"content\":\"y\"}]}}}",
        "{\"spec\":\"chara_card_v2\",\"character_book\":{\"entries\":[{\"keys\":[\"x\"]}]},"
        "\"data\":{\"name\":\"A\"}}",
        "{\"spec\":\"chara_card_v2\",\"data\":{\"name\":\"A\",\"extensions\":{\"world\":"
        "\"{\\\"entries\\\":{\\\"3\\\":{\\\"uid\\\":3,\\\"key\\\":[\\\"x\\\"],"
        "\\\"content\\\":\\\"y\\\"}}}\"}}}",
        "{\"spec\":\"chara_card_v2\",\"data\":{\"name\":\"A\",\"extensions\":{"
        "\"characterBook\":[{\"keys\":[\"x\"]}]}}}",
    };
    const char *sources[] = {"data.lorebook", "character_book", "data.extensions.world",
                             "data.extensions.characterBook"};
    for (size_t i = 0; i < 4; i++) {
        cdsh_error err = {0};
        cdsh_tavern_card *c = parse_text(cards[i], &err);
        if (!c)
            fail_msg("card %zu: %s", i, err.message);
        const json_t *rec = cdsh_tavern_card_record_get(c);
        assert_string_equal(json_string_value(json_object_get(rec, "book_source")), sources[i]);
        const json_t *book = cdsh_tavern_card_book_get(c);
        assert_int_equal(json_array_size(json_object_get(book, "entries")), 1);
        json_t *e = json_array_get(json_object_get(book, "entries"), 0);
        assert_string_equal(json_string_value(json_array_get(json_object_get(e, "keys"), 0)), "x");
        /* the book lives in one place only */
        json_t *ext = json_object_get(data_of(c), "extensions");
        assert_null(json_object_get(ext, "lorebook"));
        assert_null(json_object_get(ext, "world"));
        assert_null(json_object_get(ext, "characterBook"));
        assert_null(json_object_get(json_object_get(rec, "extra"), "character_book"));
        cdsh_tavern_card_free(c);
    }
}

static void world_name_string_is_not_a_book(void **state)
{
    (void)state;
    cdsh_error err = {0};
    cdsh_tavern_card *c = parse_text("{\"spec\":\"chara_card_v2\",\"data\":{\"name\":\"A\","
                                     "\"extensions\":{\"world\":\"Eldoria\"}}}",
                                     &err);
    assert_null(cdsh_tavern_card_book_get(c));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(data_of(c), "extensions"), "world")),
        "Eldoria");
    cdsh_tavern_card_free(c);
}

static void regex_scripts_and_depth_prompt_are_read(void **state)
{
    (void)state;
    cdsh_error err = {0};
    cdsh_tavern_card *c = parse_text(
        "{\"spec\":\"chara_card_v2\",\"data\":{\"name\":\"A\",\"extensions\":{"
        "\"regex_scripts\":[{\"scriptName\":\"r\",\"findRegex\":\"/a/g\",\"replaceString\":\"b\","
        "\"placement\":[2]}],\"depth_prompt\":{\"prompt\":\"stay\",\"role\":2}}}}",
        &err);
    assert_non_null(c);
    const json_t *rec = cdsh_tavern_card_record_get(c);
    assert_int_equal(json_array_size(json_object_get(rec, "regex_scripts")), 1);
    json_t *dp = json_object_get(rec, "depth_prompt");
    assert_string_equal(json_string_value(json_object_get(dp, "prompt")), "stay");
    assert_int_equal(json_integer_value(json_object_get(dp, "depth")), 4);
    assert_string_equal(json_string_value(json_object_get(dp, "role")), "assistant");
    cdsh_tavern_card_free(c);
    c = parse_text("{\"spec\":\"chara_card_v2\",\"regex_scripts\":[{\"findRegex\":\"x\"}],"
                   "\"data\":{\"name\":\"A\"}}",
                   &err);
    assert_int_equal(
        json_array_size(json_object_get(cdsh_tavern_card_record_get(c), "regex_scripts")), 1);
    cdsh_tavern_card_free(c);
}

static void bad_json_cards_fail_with_clear_codes(void **state)
{
    (void)state;
    expect_text_error("{\"data\":{\"description\":\"x\"}}", "CARD_NO_NAME");
    expect_text_error("{\"name\":\"\"}", "CARD_NO_NAME");
    expect_text_error("{\"name\":\"a\xff\"}", "CARD_NOT_UTF8");
    expect_text_error("{\"name\":", "CARD_BAD_JSON");
    expect_text_error("[1,2]", "CARD_BAD_SHAPE");
    expect_text_error("{\"name\":\"a\",\"description\":5}", "CARD_BAD_FIELD");
    expect_text_error("{\"name\":\"a\",\"tags\":[1]}", "CARD_BAD_FIELD");
    size_t big = 32u * 1024 * 1024 + 1;
    uint8_t *huge = calloc(1, big);
    expect_error(huge, big, "CARD_TOO_BIG");
    free(huge);
}

static void json_over_eight_million_characters_is_refused(void **state)
{
    (void)state;
    size_t n = 8u * 1024 * 1024 + 64;
    char *text = malloc(n + 1);
    memset(text, ' ', n);
    memcpy(text, "{\"name\":\"a\"}", 12);
    text[n] = 0;
    expect_error((const uint8_t *)text, n, "CARD_TOO_BIG");
    free(text);
}

/* ---- PNG ---------------------------------------------------------------------------------- */

static void png_text_ztxt_and_itxt_chunks_are_read(void **state)
{
    (void)state;
    for (int kind = 0; kind < 4; kind++) {
        pngb b = png_start();
        char *t = b64_of(V2_CARD);
        if (kind == 0)
            add_text(&b, "chara", V2_CARD);
        else if (kind == 1)
            add_ztxt_raw(&b, "chara", t, strlen(t));
        else
            add_itxt(&b, "Chara", V2_CARD, kind == 3);
        free(t);
        png_end(&b);
        cdsh_tavern_card *c = parse_ok(b.d, b.n);
        assert_string_equal(cdsh_tavern_card_name_get(c), "Alice");
        size_t alen = 0;
        assert_non_null(cdsh_tavern_card_avatar_get(c, &alen));
        assert_int_equal(alen, b.n);
        cdsh_tavern_card_free(c);
        free(b.d);
    }
}

static void ccv3_chunk_wins_over_chara(void **state)
{
    (void)state;
    pngb b = png_start();
    add_text(&b, "chara", V2_CARD);
    add_text(&b, "ccv3", "{\"data\":{\"name\":\"Three\"}}");
    png_end(&b);
    cdsh_tavern_card *c = parse_ok(b.d, b.n);
    assert_string_equal(cdsh_tavern_card_name_get(c), "Three");
    assert_string_equal(json_string_value(json_object_get(cdsh_tavern_card_record_get(c), "spec")),
                        "chara_card_v3");
    cdsh_tavern_card_free(c);
    free(b.d);
}

static void bad_pngs_fail_with_clear_codes(void **state)
{
    (void)state;
    pngb b = png_start();
    add_text(&b, "chara", V2_CARD);
    png_end(&b);
    /* truncated: IEND cut off */
    expect_error(b.d, b.n - 12, "PNG_TRUNCATED");
    expect_error(b.d, b.n - 5, "PNG_TRUNCATED");
    /* a chunk length that runs past the end */
    uint8_t *bad = malloc(b.n);
    memcpy(bad, b.d, b.n);
    bad[8] = 0x10; /* IHDR length becomes 0x1000000d */
    expect_error(bad, b.n, "PNG_BAD_CHUNK");
    memcpy(bad, b.d, b.n);
    bad[8 + 4] = '1'; /* IHDR type gets a digit */
    expect_error(bad, b.n, "PNG_BAD_CHUNK");
    free(bad);
    free(b.d);
    /* no card chunk */
    pngb e = png_start();
    png_end(&e);
    expect_error(e.d, e.n, "PNG_NO_CARD");
    free(e.d);
    /* invalid base64 in the chunk */
    pngb x = png_start();
    pb_chunk(&x, "tEXt", (const uint8_t *)"chara\0!!!notbase64", 18);
    png_end(&x);
    expect_error(x.d, x.n, "CARD_BAD_BASE64");
    free(x.d);
    /* base64 of non-UTF-8 JSON */
    pngb u = png_start();
    char *t = cdsh_base64_encode_dup((const uint8_t *)"{\"name\":\"\xc3\x28\"}", 13);
    char body[128];
    snprintf(body, sizeof body, "chara%c%s", 0, t);
    pb_chunk(&u, "tEXt", (const uint8_t *)body, 6 + strlen(t));
    free(t);
    png_end(&u);
    expect_error(u.d, u.n, "CARD_NOT_UTF8");
    free(u.d);
    expect_text_error("\x89PNG\r\n\x1a\x00", "PNG_BAD_SIGNATURE");
}

static void ztxt_zip_bomb_is_an_explicit_error(void **state)
{
    (void)state;
    size_t n = 5u * 1024 * 1024;
    char *zeros = malloc(n);
    memset(zeros, 'A', n);
    pngb b = png_start();
    add_ztxt_raw(&b, "chara", zeros, n);
    png_end(&b);
    free(zeros);
    expect_error(b.d, b.n, "INFLATE_TOO_BIG");
    free(b.d);
}

/* ---- export round trips ------------------------------------------------------------------ */

static void assert_same_card(const cdsh_tavern_card *a, const cdsh_tavern_card *b)
{
    const json_t *ra = cdsh_tavern_card_record_get(a), *rb = cdsh_tavern_card_record_get(b);
    const char *keys[] = {"name", "data", "extra", "depth_prompt", "regex_scripts"};
    for (size_t i = 0; i < 5; i++)
        if (!cdsh_json_equal(json_object_get(ra, keys[i]), json_object_get(rb, keys[i]))) {
            char *x = cdsh_json_dump_compact_dup(json_object_get(ra, keys[i]));
            char *y = cdsh_json_dump_compact_dup(json_object_get(rb, keys[i]));
            fail_msg("%s differs:\n%s\n%s", keys[i], x, y);
        }
}

static cdsh_tavern_card *reparse_json(const cdsh_tavern_card *c)
{
    json_t *j = cdsh_tavern_card_to_json_dup(cdsh_tavern_card_record_get(c), false);
    char *text = cdsh_json_dump_pretty_dup(j);
    json_decref(j);
    cdsh_tavern_card *r = parse_ok((const uint8_t *)text, strlen(text));
    free(text);
    return r;
}

static cdsh_tavern_card *reparse_png(const cdsh_tavern_card *c)
{
    uint8_t *png = NULL;
    size_t n = 0, alen = 0;
    const uint8_t *avatar = cdsh_tavern_card_avatar_get(c, &alen);
    cdsh_error err = {0};
    assert_int_equal(
        cdsh_tavern_card_to_png(cdsh_tavern_card_record_get(c), avatar, alen, &png, &n, &err), 0);
    cdsh_tavern_card *r = parse_ok(png, n);
    free(png);
    return r;
}

static void export_round_trips_field_for_field(void **state)
{
    (void)state;
    char *sample = cdsh_test_read_file(SAMPLE_V2, NULL);
    const char *inputs[] = {sample, V2_CARD, V3_CARD,
                            "{\"name\":\"V1\",\"description\":\"d\",\"unknown\":[1]}"};
    for (size_t i = 0; i < 4; i++) {
        cdsh_tavern_card *c = parse_ok((const uint8_t *)inputs[i], strlen(inputs[i]));
        cdsh_tavern_card *j = reparse_json(c);
        cdsh_tavern_card *p = reparse_png(c);
        assert_same_card(c, j);
        assert_same_card(c, p);
        cdsh_tavern_card *pp = reparse_png(p); /* re-embedding replaces old chunks */
        assert_same_card(c, pp);
        cdsh_tavern_card_free(c);
        cdsh_tavern_card_free(j);
        cdsh_tavern_card_free(p);
        cdsh_tavern_card_free(pp);
    }
    free(sample);
}

typedef struct count_ctx {
    int chara, ccv3;
} count_ctx;

static void count_chunks(const uint8_t *d, size_t n, count_ctx *c)
{
    for (size_t pos = 8; pos + 12 <= n;) {
        size_t len =
            (size_t)d[pos] << 24 | (size_t)d[pos + 1] << 16 | (size_t)d[pos + 2] << 8 | d[pos + 3];
        if (!memcmp(d + pos + 4, "tEXt", 4)) {
            if (len >= 6 && !memcmp(d + pos + 8, "chara", 6))
                c->chara++;
            if (len >= 5 && !memcmp(d + pos + 8, "ccv3", 5))
                c->ccv3++;
        }
        uLong crc = crc32(0, d + pos + 4, (uInt)(len + 4));
        const uint8_t *cp = d + pos + 8 + len;
        assert_int_equal((uint32_t)crc, (uint32_t)cp[0] << 24 | (uint32_t)cp[1] << 16 |
                                            (uint32_t)cp[2] << 8 | cp[3]);
        pos += 12 + len;
    }
}

static void v3_png_export_has_both_chunks_with_valid_crcs(void **state)
{
    (void)state;
    cdsh_tavern_card *c = parse_ok((const uint8_t *)V3_CARD, strlen(V3_CARD));
    uint8_t *png = NULL;
    size_t n = 0;
    assert_int_equal(
        cdsh_tavern_card_to_png(cdsh_tavern_card_record_get(c), NULL, 0, &png, &n, NULL), 0);
    count_ctx cc = {0};
    count_chunks(png, n, &cc);
    assert_int_equal(cc.chara, 1);
    assert_int_equal(cc.ccv3, 1);
    /* the chara chunk holds the V2 form */
    char *text = NULL;
    size_t tl = 0;
    bool is3 = false;
    assert_int_equal(cdsh_tavern_png_find_card(png, n, &text, &tl, &is3, NULL), 0);
    assert_true(is3);
    free(text);
    free(png);
    cdsh_tavern_card *v2 = parse_ok((const uint8_t *)V2_CARD, strlen(V2_CARD));
    assert_int_equal(
        cdsh_tavern_card_to_png(cdsh_tavern_card_record_get(v2), NULL, 0, &png, &n, NULL), 0);
    count_ctx c2 = {0};
    count_chunks(png, n, &c2);
    assert_int_equal(c2.chara, 1);
    assert_int_equal(c2.ccv3, 0);
    free(png);
    cdsh_tavern_card_free(v2);
    cdsh_tavern_card_free(c);
}

static void export_of_truncated_avatar_fails(void **state)
{
    (void)state;
    cdsh_tavern_card *c = parse_ok((const uint8_t *)V2_CARD, strlen(V2_CARD));
    pngb b = png_start();
    uint8_t *png = NULL;
    size_t n = 0;
    cdsh_error err = {0};
    assert_true(cdsh_tavern_card_to_png(cdsh_tavern_card_record_get(c), b.d, b.n, &png, &n, &err) <
                0);
    assert_string_equal(err.code, "PNG_TRUNCATED");
    free(b.d);
    cdsh_tavern_card_free(c);
}

static void v2_book_fields_of_the_wrong_type_move_into_extensions(void **state)
{
    (void)state;
    cdsh_error err = {0};
    const char *text = "{\"spec\":\"chara_card_v2\",\"data\":{\"name\":\"A\",\"character_book\":{"
                       "\"name\":7,\"entries\":[{\"keys\":[\"k\"],\"id\":\"e1\",\"position\":"
                       "\"before_desc\",\"comment\":\"ok\"}]}}}";
    cdsh_tavern_card *c = parse_text(text, &err);
    assert_non_null(c);
    const json_t *book = cdsh_tavern_card_book_get(c);
    assert_null(json_object_get(book, "name"));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(book, "extensions"),
                                                        "cdsh_original_name")),
                     7);
    json_t *e = json_array_get(json_object_get(book, "entries"), 0);
    assert_null(json_object_get(e, "id"));
    assert_null(json_object_get(e, "position"));
    assert_string_equal(json_string_value(json_object_get(e, "comment")), "ok");
    json_t *ext = json_object_get(e, "extensions");
    assert_string_equal(json_string_value(json_object_get(ext, "cdsh_original_id")), "e1");
    assert_string_equal(json_string_value(json_object_get(ext, "cdsh_original_position")),
                        "before_desc");
    cdsh_tavern_card *again = reparse_json(c);
    assert_same_card(c, again);
    cdsh_tavern_card_free(again);
    cdsh_tavern_card_free(c);
    /* a V3 card keeps its string id; only the V2 backfill moves it */
    c = parse_text(V3_CARD, &err);
    json_t *v2 = cdsh_tavern_card_to_json_dup(cdsh_tavern_card_record_get(c), true);
    json_t *e2 = json_array_get(
        json_object_get(json_object_get(json_object_get(v2, "data"), "character_book"), "entries"),
        0);
    assert_null(json_object_get(e2, "id"));
    assert_string_equal(json_string_value(json_object_get(v2, "spec")), "chara_card_v2");
    json_decref(v2);
    cdsh_tavern_card_free(c);
}

/* ---- CHARX ------------------------------------------------------------------------------------
 */

static uint8_t *make_zip(const char *const *names, const void *const *datas, const size_t *lens,
                         size_t count, size_t *out_len)
{
    char path[] = "/tmp/cdsh-charx-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    int zerr = 0;
    zip_t *z = zip_open(path, ZIP_TRUNCATE, &zerr);
    assert_non_null(z);
    for (size_t i = 0; i < count; i++) {
        zip_source_t *s = zip_source_buffer(z, datas[i], lens[i], 0);
        assert_true(zip_file_add(z, names[i], s, ZIP_FL_OVERWRITE) >= 0);
    }
    assert_int_equal(zip_close(z), 0);
    uint8_t *bytes = (uint8_t *)cdsh_test_read_file(path, out_len);
    unlink(path);
    return bytes;
}

static void charx_imports_card_json_and_main_icon(void **state)
{
    (void)state;
    uint8_t *icon = NULL;
    size_t icon_len = 0;
    assert_int_equal(cdsh_tavern_png_embed(NULL, 0, "x", NULL, &icon, &icon_len, NULL), 0);
    const char *card = "{\"spec\":\"chara_card_v3\",\"spec_version\":\"3.0\",\"data\":{\"name\":"
                       "\"Zip\",\"assets\":[{\"type\":\"icon\",\"uri\":\"embeded://assets/icon/"
                       "images/face.png\",\"name\":\"main\",\"ext\":\"png\"}]}}";
    const char *names[] = {"card.json", "assets/icon/images/face.png"};
    const void *datas[] = {card, icon};
    size_t lens[] = {strlen(card), icon_len};
    size_t zn = 0;
    uint8_t *zip = make_zip(names, datas, lens, 2, &zn);
    cdsh_tavern_card *c = parse_ok(zip, zn);
    assert_string_equal(cdsh_tavern_card_name_get(c), "Zip");
    assert_string_equal(json_string_value(json_object_get(cdsh_tavern_card_record_get(c), "spec")),
                        "chara_card_v3");
    size_t alen = 0;
    const uint8_t *avatar = cdsh_tavern_card_avatar_get(c, &alen);
    assert_int_equal(alen, icon_len);
    assert_memory_equal(avatar, icon, icon_len);
    cdsh_tavern_card_free(c);
    free(zip);
    free(icon);
}

static void charx_errors_are_explicit(void **state)
{
    (void)state;
    const char *names[] = {"readme.txt"};
    const void *datas[] = {"hi"};
    size_t lens[] = {2};
    size_t zn = 0;
    uint8_t *zip = make_zip(names, datas, lens, 1, &zn);
    expect_error(zip, zn, "CHARX_NO_CARD");
    free(zip);
    /* a card.json that inflates past the limit */
    size_t big = 33u * 1024 * 1024;
    char *spaces = malloc(big);
    memset(spaces, ' ', big);
    memcpy(spaces, "{\"name\":\"a\"}", 12);
    const char *bn[] = {"card.json"};
    const void *bd[] = {spaces};
    size_t bl[] = {big};
    zip = make_zip(bn, bd, bl, 1, &zn);
    free(spaces);
    assert_true(zn < 1024 * 1024);
    expect_error(zip, zn, "CHARX_TOO_BIG");
    /* a truncated archive */
    expect_error(zip, zn / 2, "CHARX_BAD_ZIP");
    free(zip);
}

/* ---- ids
 * ------------------------------------------------------------------------------------------ */

static void card_ids_are_sanitised_names_with_random_hex(void **state)
{
    (void)state;
    const char *cases[][2] = {
        {"Seraphina", "seraphina"},
        {"  Hello, World!! ", "hello-world"},
        {"白雪公主 Snow", "白雪公主-snow"},
        {"!!!", "card"},
        {"", "card"},
        {"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123", "abcdefghijklmnopqrstuvwx"},
        {"ab------------------------cd", "ab-cd"},
        {"Ünïcödé ok", "n-c-d-ok"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *s = cdsh_tavern_card_sanitize_dup(cases[i][0]);
        assert_string_equal(s, cases[i][1]);
        free(s);
    }
    char *a = cdsh_tavern_card_id_new("Seraphina");
    char *b = cdsh_tavern_card_id_new("Seraphina");
    assert_int_equal(strlen(a), strlen("seraphina-") + 8);
    assert_memory_equal(a, "seraphina-", 10);
    assert_string_not_equal(a, b);
    assert_true(cdsh_tavern_card_id_valid(a));
    free(a);
    free(b);
    assert_true(cdsh_tavern_card_id_valid("白雪-1a2b3c4d"));
    assert_true(cdsh_tavern_card_id_valid("a.b"));
    const char *invalid[] = {"", ".", "..", "a..b", ".a", "a.", "a/b", "../x", "a b", "a\\b"};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++)
        if (cdsh_tavern_card_id_valid(invalid[i]))
            fail_msg("\"%s\" accepted", invalid[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(v1_card_imports_every_field_and_keeps_unknown_keys),
        cmocka_unit_test(v2_sample_keeps_every_field_and_its_book),
        cmocka_unit_test(v2_unknown_data_keys_move_into_extensions),
        cmocka_unit_test(v3_card_keeps_v3_fields),
        cmocka_unit_test(spec_detection_follows_spec_then_data),
        cmocka_unit_test(book_candidates_are_found_in_every_listed_place),
        cmocka_unit_test(world_name_string_is_not_a_book),
        cmocka_unit_test(regex_scripts_and_depth_prompt_are_read),
        cmocka_unit_test(bad_json_cards_fail_with_clear_codes),
        cmocka_unit_test(json_over_eight_million_characters_is_refused),
        cmocka_unit_test(png_text_ztxt_and_itxt_chunks_are_read),
        cmocka_unit_test(ccv3_chunk_wins_over_chara),
        cmocka_unit_test(bad_pngs_fail_with_clear_codes),
        cmocka_unit_test(ztxt_zip_bomb_is_an_explicit_error),
        cmocka_unit_test(export_round_trips_field_for_field),
        cmocka_unit_test(v3_png_export_has_both_chunks_with_valid_crcs),
        cmocka_unit_test(export_of_truncated_avatar_fails),
        cmocka_unit_test(v2_book_fields_of_the_wrong_type_move_into_extensions),
        cmocka_unit_test(charx_imports_card_json_and_main_icon),
        cmocka_unit_test(charx_errors_are_explicit),
        cmocka_unit_test(card_ids_are_sanitised_names_with_random_hex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
