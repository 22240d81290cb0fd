/* test_tavern_card_frame.c — card HTML becomes the sandboxed frame's
 * document: detection (bare, fenced, not HTML), the bridge placed first in
 * <head> (added when missing), the fence dropped, and the frameGreeting
 * method refusing plain greetings and cards-off settings. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "host/rpc.h"
#include "plugins/tavern/card_frame.h"
#include "support/tavern_world.h"

static void card_html_is_recognised_bare_or_fenced(void **state)
{
    (void)state;
    assert_true(cdsh_tavern_card_is_html("  <!DOCTYPE html><p>x</p>"));
    assert_true(cdsh_tavern_card_is_html("<html lang=en><body></body></html>"));
    assert_true(cdsh_tavern_card_is_html("Look:\n```html\n<html><body>hi</body></html>\n```"));
    assert_false(cdsh_tavern_card_is_html("*She smiles.* <b>hello</b>"));
    assert_false(cdsh_tavern_card_is_html("<htmlish>"));
    assert_false(cdsh_tavern_card_is_html("```html\n<p>fragment</p>\n```"));
    assert_false(cdsh_tavern_card_is_html(NULL));
    assert_null(cdsh_tavern_card_document_dup("plain text"));
}

static void the_bridge_goes_first_into_the_head(void **state)
{
    (void)state;
    char *d = cdsh_tavern_card_document_dup(
        "<!doctype html><html><HEAD><title>t</title></HEAD><body><header>h</header></body></html>");
    assert_non_null(d);
    const char *bridge = strstr(d, CDSH_TAVERN_CARD_BRIDGE);
    assert_non_null(bridge);
    assert_true(bridge < strstr(d, "<title>"));
    assert_true(bridge > strstr(d, "<HEAD>"));
    free(d);
    /* no <head>: one is added right after <html ...> */
    d = cdsh_tavern_card_document_dup("<html data-x=\"1\"><body><header>h</header></body></html>");
    assert_string_equal(d, "<html data-x=\"1\"><head>" CDSH_TAVERN_CARD_BRIDGE
                           "</head><body><header>h</header></body></html>");
    free(d);
    /* no <html> either: after the doctype */
    d = cdsh_tavern_card_document_dup("<!doctype html><p>x</p>");
    assert_string_equal(d, "<!doctype html><head>" CDSH_TAVERN_CARD_BRIDGE "</head><p>x</p>");
    free(d);
    /* a doctype that never closes: the bridge goes first */
    d = cdsh_tavern_card_document_dup("<!doctype html");
    assert_string_equal(d, "<head>" CDSH_TAVERN_CARD_BRIDGE "</head><!doctype html");
    free(d);
    /* a fenced card: only the document between the fences */
    d = cdsh_tavern_card_document_dup("Intro\n```html \n<html><body>b</body></html>\n```\nafter");
    assert_string_equal(d, "<html><head>" CDSH_TAVERN_CARD_BRIDGE "</head><body>b</body></html>\n");
    free(d);
}

/* The error code of a /tavern call that must fail (payload taken). */
static void assert_call_fails(cdsh_test_tavern_world *w, const char *method, json_t *payload_take,
                              const char *code)
{
    json_t *env = cdsh_rpc_call(cdsh_host_rpc(w->host), "/tavern", method, payload_take, NULL);
    json_decref(payload_take);
    assert_false(json_is_true(json_object_get(env, "ok")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(env, "error"), "code")),
                        code);
    json_decref(env);
}

static void frame_greeting_serves_only_card_html_while_enabled(void **state)
{
    (void)state;
    char *home = cdsh_test_home_new();
    cdsh_test_tavern_world w;
    cdsh_test_tavern_world_open(&w);
    const char *card = "{\"spec\":\"chara_card_v2\",\"spec_version\":\"2.0\",\"data\":{\"name\":"
                       "\"Frame\",\"first_mes\":\"<!doctype html><html><body><p>hi</p></body>"
                       "</html>\",\"alternate_greetings\":[\"Plain hello.\"]}}";
    char *sid = cdsh_test_tavern_bound_session_bytes(&w, card, strlen(card), "discard", "f", NULL);
    json_t *v = cdsh_test_tavern_rpc(&w, "frameGreeting", json_pack("{s:s}", "sessionId", sid));
    const char *html = json_string_value(json_object_get(v, "html"));
    assert_non_null(html);
    assert_non_null(strstr(html, CDSH_TAVERN_CARD_BRIDGE));
    assert_non_null(strstr(html, "<p>hi</p>"));
    json_decref(v);

    json_decref(cdsh_test_tavern_rpc(&w, "updateSettings",
                                     json_pack("{s:{s:b}}", "patch", "interactiveCards", 0)));
    assert_call_fails(&w, "frameGreeting", json_pack("{s:s}", "sessionId", sid),
                      "interactive-cards-off");
    json_decref(cdsh_test_tavern_rpc(&w, "updateSettings",
                                     json_pack("{s:{s:b}}", "patch", "interactiveCards", 1)));

    json_decref(cdsh_test_tavern_rpc(&w, "swipeGreeting",
                                     json_pack("{s:s,s:i}", "sessionId", sid, "index", 1)));
    assert_call_fails(&w, "frameGreeting", json_pack("{s:s}", "sessionId", sid), "not-found");
    assert_call_fails(&w, "frameGreeting", json_pack("{s:s}", "sessionId", "s-nobody"),
                      "not-bound");
    free(sid);
    cdsh_test_tavern_world_close(&w);
    cdsh_test_home_free(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(card_html_is_recognised_bare_or_fenced),
        cmocka_unit_test(the_bridge_goes_first_into_the_head),
        cmocka_unit_test(frame_greeting_serves_only_card_html_while_enabled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
