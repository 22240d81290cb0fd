/* test_tavern_story_ui.c — static checks of the role-play UI (web/tavern/):
 * zh/en dictionaries with identical key sets and non-empty values, no Han
 * characters in English, every t('key') used by the panel defined, card
 * HTML only in a sandbox="allow-scripts" iframe (never allow-same-origin)
 * loaded from cdsh web with its own connect-denying CSP (never srcdoc,
 * which inherits the page's) and a source-checked swipeGreeting-only
 * bridge, and no window.confirm / prompt dialogs. */
#include "support/testkit.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WEB CDSH_SOURCE_DIR "/web/tavern/"

/* Keys of the `<lang>: {` block of i18n.js, as a NUL-separated list. */
static size_t keys_of(const char *src, const char *lang, char keys[][64], size_t max,
                      bool *han_in_values)
{
    char head[16];
    snprintf(head, sizeof head, "  %s: {\n", lang);
    const char *p = strstr(src, head);
    assert_non_null(p);
    p += strlen(head);
    size_t n = 0;
    *han_in_values = false;
    while (*p && strncmp(p, "  },", 4) != 0) {
        const char *eol = strchr(p, '\n');
        char key[64] = {0}, value[512] = {0};
        if (sscanf(p, " %63[A-Za-z0-9_]: '%511[^\n]", key, value) == 2) {
            assert_true(n < max);
            size_t vl = strlen(value);
            assert_true(vl > 2); /* "'," at least one character before */
            for (size_t i = 0; i < vl; i++)
                if ((unsigned char)value[i] == 0xE4 ||
                    ((unsigned char)value[i] >= 0xE5 && (unsigned char)value[i] <= 0xE9))
                    *han_in_values = true;
            snprintf(keys[n++], 64, "%s", key);
        }
        p = eol ? eol + 1 : p + strlen(p);
    }
    return n;
}

static bool has_key(char keys[][64], size_t n, const char *k)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(keys[i], k) == 0)
            return true;
    return false;
}

static void zh_and_en_have_identical_keys(void **state)
{
    (void)state;
    char *src = cdsh_test_read_file(WEB "i18n.js", NULL);
    assert_non_null(src);
    static char en[256][64], zh[256][64];
    bool han_en, han_zh;
    size_t ne = keys_of(src, "en", en, 256, &han_en);
    size_t nz = keys_of(src, "zh", zh, 256, &han_zh);
    assert_true(ne >= 50);
    assert_int_equal(ne, nz);
    for (size_t i = 0; i < ne; i++)
        if (!has_key(zh, nz, en[i]))
            fail_msg("zh lacks %s", en[i]);
    assert_false(han_en);
    assert_true(han_zh);
    /* every t('key') in the panel and its editor modules exists */
    static const char *const modules[] = {"tavern.js", "library.js", "lore-editor.js"};
    size_t used = 0;
    for (size_t m = 0; m < sizeof modules / sizeof *modules; m++) {
        char path[512];
        snprintf(path, sizeof path, "%s%s", WEB, modules[m]);
        char *ui = cdsh_test_read_file(path, NULL);
        assert_non_null(ui);
        for (char *p = strstr(ui, "t('"); p; p = strstr(p + 1, "t('")) {
            if (p > ui && (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z')))
                continue; /* rpc(' and the like */
            char key[64] = {0};
            sscanf(p + 3, "%63[A-Za-z0-9_]", key);
            if (!has_key(en, ne, key))
                fail_msg("%s: t('%s') is not in the dictionaries", modules[m], key);
            used++;
        }
        /* keys picked from lists (entry logic, positions) */
        for (char *p = strstr(ui, "'logic"); p; p = strstr(p + 1, "'logic")) {
            char key[64] = {0};
            if (sscanf(p + 1, "%63[A-Za-z0-9_]", key) == 1 && strcmp(key, "logic") != 0 &&
                !has_key(en, ne, key))
                fail_msg("%s: '%s' is not in the dictionaries", modules[m], key);
        }
        for (char *p = strstr(ui, "'pos"); p; p = strstr(p + 1, "'pos")) {
            char key[64] = {0};
            if (sscanf(p + 1, "%63[A-Za-z0-9_]", key) == 1 && strcmp(key, "position") != 0 &&
                !has_key(en, ne, key))
                fail_msg("%s: '%s' is not in the dictionaries", modules[m], key);
        }
        free(ui);
    }
    assert_true(used >= 100);
    free(src);
}

static void card_html_is_sandboxed_and_bridge_is_narrow(void **state)
{
    (void)state;
    char *frame = cdsh_test_read_file(WEB "frame.js", NULL);
    assert_non_null(frame);
    assert_non_null(strstr(frame, "setAttribute('sandbox', 'allow-scripts')"));
    assert_null(strstr(frame, "allow-same-origin"));
    assert_null(strstr(frame, "srcdoc")); /* srcdoc would inherit the page's CSP */
    assert_non_null(strstr(frame, "/frame/tavern/frameGreeting"));
    assert_non_null(strstr(frame, "ev.source !== frame.contentWindow"));
    assert_non_null(strstr(frame, "d.type !== 'tavern:swipeGreeting'"));
    free(frame);
    /* the document's own CSP, sent by cdsh web with it */
    char *gw = cdsh_test_read_file(CDSH_SOURCE_DIR "/src/server/rpc_gateway.h", NULL);
    assert_non_null(gw);
    const char *csp = strstr(gw, "#define CDSH_WEB_FRAME_CSP");
    assert_non_null(csp);
    const char *end = strstr(csp, "\"frame-ancestors 'self'\"");
    assert_non_null(end);
    const char *need[] = {"\"sandbox allow-scripts;", "default-src 'none'", "connect-src 'none'",
                          "form-action 'none'"};
    for (size_t i = 0; i < 4; i++) {
        const char *at = strstr(csp, need[i]);
        assert_true(at && at < end);
    }
    const char *same = strstr(csp, "allow-same-origin");
    assert_true(!same || same > end);
    free(gw);
    const char *files[] = {"tavern.js", "frame.js",   "render.js",
                           "dialog.js", "library.js", "lore-editor.js"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s%s", WEB, files[i]);
        char *src = cdsh_test_read_file(path, NULL);
        assert_non_null(src);
        assert_null(strstr(src, "window.confirm"));
        assert_null(strstr(src, "confirm("));
        assert_null(strstr(src, "window.prompt"));
        free(src);
    }
    /* model output reaches innerHTML only through the escaping renderer */
    char *ui = cdsh_test_read_file(WEB "tavern.js", NULL);
    size_t n = 0;
    for (char *p = strstr(ui, "innerHTML"); p; p = strstr(p + 1, "innerHTML")) {
        assert_non_null(strstr(p, "= renderMarkdown("));
        assert_true(strstr(p, "= renderMarkdown(") - p < 20);
        n++;
    }
    assert_int_equal(n, 1);
    free(ui);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(zh_and_en_have_identical_keys),
        cmocka_unit_test(card_html_is_sandboxed_and_bridge_is_narrow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
