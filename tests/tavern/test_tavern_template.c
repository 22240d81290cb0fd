/* test_tavern_template.c — EJS templates on JavaScriptCore: ejs's tag
 * semantics and whitespace control, ES2023 syntax, the variable and
 * world-info API, frozen clock and randomness, preview never writing, the
 * sandbox limits (infinite loop, huge output, memory bomb, file-system and
 * module access) with their codes, errors that name the template's
 * line, column and expression, libraries loaded on first use, the sealed
 * library realm, and the compiled-template cache. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/tavern/template.h"

static json_t *ctx_new(void)
{
    return json_loads("{\"vars\":{\"global\":{\"g\":1},\"local\":{\"hp\":10},\"message\":{}},"
                      "\"wi\":{\"books\":{\"Eldoria\":[{\"uid\":3,\"comment\":\"Castle\","
                      "\"content\":\"A keep.\"}]},"
                      "\"active\":[{\"uid\":3,\"book\":\"Eldoria\"}]},"
                      "\"macros\":{\"char\":\"Seraphina\",\"user\":\"Ann\"},"
                      "\"now\":1767225600000,\"seed\":42}",
                      0, NULL);
}

/* Generous wall clock for renders that must succeed: the suite may run on a
 * loaded machine, and only the timeout test is about time. */
static const cdsh_tavern_template_limits *relaxed(void)
{
    static cdsh_tavern_template_limits lim;
    cdsh_tavern_template_limits_default(&lim);
    lim.wall_ms = cdsh_test_scale_ms(20000);
    return &lim;
}

static char *render_ok(const char *src, bool write, json_t **vars)
{
    json_t *ctx = ctx_new(), *res = NULL;
    cdsh_error err = {0};
    int rc = cdsh_tavern_template_render(src, ctx, write, relaxed(), &res, &err);
    if (rc != 0)
        fail_msg("render failed: %s %s", err.code, err.message);
    char *out = strdup(json_string_value(json_object_get(res, "output")));
    if (vars)
        *vars = json_incref(json_object_get(res, "vars"));
    json_decref(res);
    json_decref(ctx);
    return out;
}

static void expect(const char *src, const char *want)
{
    char *out = render_ok(src, false, NULL);
    assert_string_equal(out, want);
    free(out);
}

static const char *render_err(const char *src, const cdsh_tavern_template_limits *lim,
                              cdsh_error *err)
{
    json_t *res = NULL;
    int rc = cdsh_tavern_template_render(src, NULL, true, lim ? lim : relaxed(), &res, err);
    assert_true(rc < 0);
    assert_null(res);
    return err->code;
}

static void tags_escape_raw_comment_and_literals(void **state)
{
    (void)state;
    expect("a<%= '<b>&' %>c", "a&lt;b&gt;&amp;c");
    expect("<%- '<b>' %>", "<b>");
    expect("x<%# hidden %>y", "xy");
    expect("<%% not a tag %%>", "<% not a tag %>");
    expect("<% for (var i = 0; i < 3; i++) { %><%= i %>,<% } %>", "0,1,2,");
    expect("<%= undefined %>|<%- null %>", "|");
    expect("line1\n<% if (true) { -%>\nyes\n<% } -%>\nend", "line1\nyes\nend");
    expect("a\n    <%_ var z = 1 _%>   \nb", "a\nb");
    expect("{{user}} stays", "{{user}} stays");
    expect("<% print('p', 1) %>!", "p1!");
}

static void unclosed_tags_are_syntax_errors_with_their_line(void **state)
{
    (void)state;
    cdsh_error err = {0};
    json_t *res = NULL, *detail = NULL;
    assert_true(cdsh_tavern_template_render_ex("ok\nstill\n<% oops", NULL, false, relaxed(), &res,
                                               &detail, &err) < 0);
    assert_string_equal(err.code, "TEMPLATE_SYNTAX");
    assert_non_null(strstr(err.message, "line 3"));
    assert_non_null(strstr(err.message, "Could not find matching close tag"));
    assert_int_equal(json_integer_value(json_object_get(detail, "line")), 3);
    assert_int_equal(json_integer_value(json_object_get(detail, "column")), 1);
    json_decref(detail);
    assert_true(cdsh_tavern_template_has_tags("x <% y %>"));
    assert_false(cdsh_tavern_template_has_tags("plain"));
}

static void variables_worldinfo_and_macros(void **state)
{
    (void)state;
    json_t *vars = NULL;
    char *out = render_ok(
        "<% setvar('hp', getvar('hp') - 3); incvar('turns'); "
        "setvar('a.b', 'deep', {scope:'global'}); delvar('g', {scope:'global'}); "
        "setvar('seen', true, {scope:'message'}) %>"
        "<%= getvar('hp') %>/<%= getvar('turns') %>/<%= getvar('missing', {defaults:'d'}) %>"
        "|<%= getwi('Eldoria','Castle') %>|<%= getwi('Eldoria',3) %>|<%= activewi().length %>"
        "|<%= charName %>&<%= userName %>",
        true, &vars);
    assert_string_equal(out, "7/1/d|A keep.|A keep.|1|Seraphina&Ann");
    free(out);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(vars, "local"), "hp")), 7);
    json_t *g = json_object_get(vars, "global");
    assert_null(json_object_get(g, "g"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(g, "a"), "b")), "deep");
    assert_true(json_is_true(json_object_get(json_object_get(vars, "message"), "seen")));
    json_decref(vars);
    /* decvar and an unknown scope. */
    expect("<% decvar('hp', 4) %><%= getvar('hp') %>", "6");
    cdsh_error err = {0};
    json_t *res = NULL;
    json_t *ctx = ctx_new();
    assert_true(cdsh_tavern_template_render("<% setvar('x', 1, {scope:'nope'}) %>", ctx, true,
                                            relaxed(), &res, &err) < 0);
    assert_string_equal(err.code, "TEMPLATE_RUNTIME");
    assert_non_null(strstr(err.message, "unknown scope nope"));
    json_decref(ctx);
}

static void preview_returns_no_variables(void **state)
{
    (void)state;
    json_t *ctx = ctx_new(), *res = NULL;
    cdsh_error err = {0};
    assert_int_equal(
        cdsh_tavern_template_render("<% setvar('hp', 0) %>x", ctx, false, relaxed(), &res, &err),
        0);
    assert_string_equal(json_string_value(json_object_get(res, "output")), "x");
    assert_null(json_object_get(res, "vars"));
    /* The caller's context is never modified either way. */
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(ctx, "vars"), "local"), "hp")),
                     10);
    json_decref(res);
    json_decref(ctx);
}

static void clock_and_random_are_frozen_per_execution(void **state)
{
    (void)state;
    const char *src = "<%= Date.now() %>|<%= new Date().getUTCFullYear() %>|<%= Math.random() "
                      "%>,<%= Math.random() %>";
    char *a = render_ok(src, false, NULL);
    char *b = render_ok(src, false, NULL);
    assert_string_equal(a, b);
    assert_true(!strncmp(a, "1767225600000|2026|", 19));
    free(a);
    free(b);
    expect("<%= new Date(2020, 0, 2).getFullYear() %>", "2020");
}

static void sandbox_has_no_file_system_network_or_modules(void **state)
{
    (void)state;
    const char *probes[] = {
        "<%= typeof require %>|<%= typeof process %>|<%= typeof module %>|<%= typeof "
        "XMLHttpRequest %>|<%= typeof fetch %>|<%= typeof WebSocket %>|<%= typeof document %>"
        "|<%= typeof __lib %>|<%= typeof __input %>|<%= typeof __sources %>",
    };
    expect(probes[0], "undefined|undefined|undefined|undefined|undefined|undefined|undefined"
                      "|undefined|undefined|undefined");
    cdsh_error err = {0};
    assert_string_equal(render_err("<% require('fs').readFileSync('/etc/passwd') %>", NULL, &err),
                        "TEMPLATE_RUNTIME");
    assert_non_null(strstr(err.message, "require"));
    assert_non_null(strstr(err.message, "line 1, column 4"));
}

static void infinite_loop_times_out(void **state)
{
    (void)state;
    cdsh_tavern_template_limits lim;
    cdsh_tavern_template_limits_default(&lim);
    lim.wall_ms = 300;
    cdsh_error err = {0};
    assert_string_equal(render_err("<% while (true) {} %>", &lim, &err), "TEMPLATE_TIMEOUT");
    assert_int_equal(err.rc, CDSH_ETIMEDOUT);
    /* The next render works normally. */
    expect("<%= 1 + 1 %>", "2");
}

static void huge_output_and_memory_bomb_fail_cleanly(void **state)
{
    (void)state;
    cdsh_tavern_template_limits lim;
    cdsh_tavern_template_limits_default(&lim);
    lim.max_output = 64 * 1024;
    lim.wall_ms = cdsh_test_scale_ms(20000);
    cdsh_error err = {0};
    assert_string_equal(
        render_err("<% for (var i = 0; i < 20000; i++) { %>0123456789<% } %>", &lim, &err),
        "TEMPLATE_OUTPUT_TOO_LARGE");
    expect("<%= 'ok' %>", "ok");
    cdsh_tavern_template_limits_default(&lim);
    lim.mem_bytes = 64u << 20;
    /* the bombs end on memory, not time; filling the allowance takes
     * seconds of CPU under ASan on a loaded machine */
    lim.wall_ms = cdsh_test_scale_ms(120000);
    err = (cdsh_error){0};
    assert_string_equal(
        render_err("<% var a = []; for (;;) a.push(new Array(1000).join('x') + a.length) %>", &lim,
                   &err),
        "TEMPLATE_MEMORY");
    err = (cdsh_error){0};
    assert_string_equal(render_err("<% var s = 'x'; for (;;) s = s + s %>", &lim, &err),
                        "TEMPLATE_MEMORY");
    expect("<%= 'clean' %>", "clean");
}

static void javascript_errors_are_reported(void **state)
{
    (void)state;
    cdsh_error err = {0};
    assert_string_equal(render_err("<% throw new Error('boom') %>", NULL, &err),
                        "TEMPLATE_RUNTIME");
    assert_non_null(strstr(err.message, "boom"));
    assert_string_equal(render_err("<% var = ; %>", NULL, &err), "TEMPLATE_SYNTAX");
}


static void modern_javascript_syntax_works(void **state)
{
    (void)state;
    expect("<% const xs = [3, 1, 2]; let o = {a: {b: 1}}; %>"
           "<%= xs.toSorted().at(-1) %>|<%= o?.a?.b ?? 'x' %>|<%= o.z?.q ?? 'none' %>|"
           "<%= `t${1 + 1}` %>|<%= [1, [2, [3]]].flat(Infinity).findLast(x => x < 3) %>|"
           "<%= Object.hasOwn(o, 'a') %>|<%= [...'ab'].map((c, i) => c + i).join() %>|"
           "<%= (({p, ...rest}) => Object.keys(rest).length)({p: 1, q: 2, r: 3}) %>|"
           "<%= 2n ** 70n %>|<%= Object.groupBy([1, 2, 3], x => x % 2 ? 'odd' : 'even').odd %>"
           "<% class A { #x = 4; get x() { return this.#x; } } %>|<%= new A().x %>",
           "3|1|none|t2|2|true|a0,b1|2|1180591620717411303424|1,3|4");
}

static void the_libraries_are_there(void **state)
{
    (void)state;
    expect("<%= _.chunk([1, 2, 3, 4, 5], 2).length %>|<%= _.capitalize('hERO') %>|"
           "<%= _.sumBy([{n: 2}, {n: 3}], 'n') %>|<%= _.get({a: [{b: 'deep'}]}, 'a[0].b') %>",
           "3|Hero|5|deep");
    expect("<%- showdown.makeHtml('# Title\\n\\n*soft*') %>",
           "<h1>Title</h1>\n<p><em>soft</em></p>");
    expect("<%- new showdown.Converter().makeHtml('## Two') %>", "<h2>Two</h2>");
    expect("<%- jsonrepair(\"{name: 'Ann', tags: ['a', 'b',], }\") %>",
           "{\"name\": \"Ann\", \"tags\": [\"a\", \"b\"] }");
    expect("<%- JSON.parse(jsonrepair('```json\\n{\"hp\": 3}\\n```')).hp %>", "3");
    expect("<%- ejs.render('<' + '%= who %' + '>!', {who: '<ejs>'}) %>", "&lt;ejs&gt;!");
    /* faker: seeded from ctx.seed, so the same turn gives the same names;
     * the zh_CN locale gives Chinese names. */
    char *a = render_ok("<%= faker.person.firstName() %>|<%= fakerZH_CN.person.fullName() %>",
                        false, NULL);
    char *b = render_ok("<%= faker.person.firstName() %>|<%= fakerZH_CN.person.fullName() %>",
                        false, NULL);
    assert_string_equal(a, b);
    const char *bar = strchr(a, '|');
    assert_non_null(bar);
    assert_true(bar > a);
    assert_true((unsigned char)bar[1] >= 0xE4); /* a CJK ideograph */
    free(a);
    free(b);
}

static void errors_name_the_template_line_column_and_expression(void **state)
{
    (void)state;
    cdsh_error err = {0};
    json_t *res = NULL, *detail = NULL;
    const char *src = "Hello {{user}}.\nHP: <%= getvar('hp') %>, gold: <%= inventory.gold %>\nend";
    assert_true(cdsh_tavern_template_render_ex(src, NULL, false, relaxed(), &res, &detail, &err) <
                0);
    assert_string_equal(err.code, "TEMPLATE_RUNTIME");
    assert_int_equal(json_integer_value(json_object_get(detail, "line")), 2);
    assert_int_equal(json_integer_value(json_object_get(detail, "column")), 36);
    assert_string_equal(json_string_value(json_object_get(detail, "expression")),
                        "inventory.gold");
    assert_non_null(strstr(err.message, "line 2, column 36"));
    assert_non_null(strstr(err.message, "inventory"));
    assert_non_null(strstr(err.message, "(in `inventory.gold`)"));
    json_decref(detail);
    /* A syntax error inside a scriptlet: the template's line, not the
     * generated code's. */
    err = (cdsh_error){0};
    assert_true(cdsh_tavern_template_render_ex("one\ntwo\n<% if (x { %>three<% } %>", NULL, false,
                                               relaxed(), &res, &detail, &err) < 0);
    assert_string_equal(err.code, "TEMPLATE_SYNTAX");
    assert_int_equal(json_integer_value(json_object_get(detail, "line")), 3);
    assert_string_equal(json_string_value(json_object_get(detail, "expression")), "if (x {");
    json_decref(detail);
    /* A throw in a multi-line scriptlet. */
    err = (cdsh_error){0};
    assert_true(cdsh_tavern_template_render_ex("a\n<%\n  const n = 1;\n  null.boom;\n%>", NULL,
                                               false, relaxed(), &res, &detail, &err) < 0);
    assert_string_equal(err.code, "TEMPLATE_RUNTIME");
    assert_int_equal(json_integer_value(json_object_get(detail, "line")), 2);
    json_decref(detail);
}

/* Each hostile template ends with its code, and the next evaluation is
 * clean. */
static void hostile_templates_end_with_their_codes(void **state)
{
    (void)state;
    cdsh_tavern_template_limits lim;
    cdsh_tavern_template_limits_default(&lim);
    lim.wall_ms = 500;
    static const struct {
        const char *src, *code;
    } cases[] = {
        {"<% while (1) {} %>", "TEMPLATE_TIMEOUT"},
        {"<% for (;;) { try { for (;;) {} } catch (e) {} } %>", "TEMPLATE_TIMEOUT"},
        {"<% const s = 'x'.repeat(2 ** 30); %><%= s.length %>", "TEMPLATE_MEMORY"},
        {"<% function f(n) { return f(n + 1) + 1; } f(0) %>", "TEMPLATE_RUNTIME"},
        {"<% eval(fetch('http://127.0.0.1:9/x').text()) %>", "TEMPLATE_RUNTIME"},
        {"<% await import('data:text/javascript,1') %>", "TEMPLATE_SYNTAX"},
        {"<%= 'y'.repeat(4 << 20) %>", "TEMPLATE_OUTPUT_TOO_LARGE"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cdsh_error err = {0};
        cdsh_tavern_template_limits l = lim;
        if (strcmp(cases[i].code, "TEMPLATE_TIMEOUT"))
            l.wall_ms = cdsh_test_scale_ms(20000);
        const char *code = render_err(cases[i].src, &l, &err);
        if (strcmp(code, cases[i].code))
            fail_msg("%s: %s (%s), want %s", cases[i].src, code, err.message, cases[i].code);
        expect("<%= [1, 2].map(x => x * 2).join() %>", "2,4");
    }
    /* import() has no loader to reach: the promise rejects, nothing loads. */
    expect("<% let r = 'pending'; import('x').then(() => r = 'loaded', e => r = 'rejected'); %>"
           "<%= typeof r %>",
           "string");
    /* Function('return this')() is this evaluation's own global: nothing of
     * the host is on it, and what is put there is gone next time. */
    expect("<% const g = Function('return this')(); g.leak = 1; %><%= typeof g.require %>|"
           "<%= typeof g.process %>|<%= g.leak %>",
           "undefined|undefined|1");
    expect("<%= typeof leak %>", "undefined");
}

static void prototype_pollution_does_not_cross_evaluations(void **state)
{
    (void)state;
    char *out = render_ok(
        "<% Object.prototype.polluted = 'yes'; Array.prototype.push = null; "
        "String.prototype.trim = () => 'hacked'; "
        "try { Object.getPrototypeOf(_).evil = 1 } catch (e) {} "
        "try { _.constructor('return this')().leaked = 1 } catch (e) {} "
        "try { _.chunk = null } catch (e) {} "
        "try { Object.getPrototypeOf(_.map([1], x => x)).evil = 1 } catch (e) {} "
        "try { Object.getPrototypeOf(showdown).evil = 1 } catch (e) {} "
        "try { faker.person.firstName = () => 'Mallory' } catch (e) {} "
        "try { _.templateSettings.interpolate = /x/ } catch (e) {} %>"
        "<%= ({}).polluted %>",
        false, NULL);
    assert_string_equal(out, "yes"); /* visible within its own evaluation */
    free(out);
    expect("<%= typeof ({}).polluted %>|<%= [1].push(2) %>|<%= ' a '.trim() %>|"
           "<%= typeof _.evil %>|<%= typeof leaked %>|<%= typeof _.chunk %>|"
           "<%= typeof [].evil %>|<%= typeof _.map([1], x => x).evil %>|"
           "<%= faker.person.firstName() === 'Mallory' %>|"
           "<%= String(_.templateSettings.interpolate) === '/x/' %>",
           "undefined|2|a|undefined|undefined|function|undefined|undefined|false|false");
}

static void missing_runtime_names_the_file(void **state)
{
    (void)state;
    cdsh_tavern_template_set_runtime_dir("/nonexistent/cdsh-runtime");
    cdsh_tavern_template_worker_stop();
    cdsh_error err = {0};
    json_t *res = NULL;
    assert_true(cdsh_tavern_template_render("<%= 1 %>", NULL, false, relaxed(), &res, &err) < 0);
    assert_string_equal(err.code, "TEMPLATE_RUNTIME_MISSING");
    assert_non_null(strstr(err.message, "/nonexistent/cdsh-runtime/node_modules/lodash/lodash.min.js"));
    assert_non_null(strstr(err.message, "scripts/bootstrap.sh"));
    cdsh_tavern_template_set_runtime_dir(NULL);
    expect("<%= 1 %>", "1");
}


/* A new worker has loaded no library: the first template that uses one is
 * run again once it is loaded, even when it caught the access, and its
 * result is the one a warm worker gives. Before any library is used,
 * nothing of the library realm reaches a template (escapeFn, the one
 * function ejs's code gets, is the evaluation's own). */
static void libraries_load_on_first_use(void **state)
{
    (void)state;
    cdsh_tavern_template_worker_stop();
    expect("<%= escapeFn.constructor === Function %>|<%- escapeFn('<a>') %>", "true|&lt;a&gt;");
    const char *caught = "<% let got = 'none'; try { got = typeof _.chunk } catch (e) { got = 'caught' } "
                         "%><%= got %>|<%= [showdown, faker, jsonrepair, ejs].map(x => typeof x) %>";
    cdsh_tavern_template_worker_stop();
    expect(caught, "function|object,object,function,object");
    expect(caught, "function|object,object,function,object");
    /* every library at once, in a new worker */
    cdsh_tavern_template_worker_stop();
    char *a = render_ok("<%= _.kebabCase('Ann Lee') %>|<%- showdown.makeHtml('*x*') %>|"
                        "<%= JSON.parse(jsonrepair('{a: 1}')).a %>|<%= faker.person.firstName() %>",
                        false, NULL);
    char *b = render_ok("<%= _.kebabCase('Ann Lee') %>|<%- showdown.makeHtml('*x*') %>|"
                        "<%= JSON.parse(jsonrepair('{a: 1}')).a %>|<%= faker.person.firstName() %>",
                        false, NULL);
    assert_string_equal(a, b);
    assert_true(!strncmp(a, "ann-lee|<p><em>x</em></p>|1|", 28));
    free(a);
    free(b);
    /* A template that forges the worker's "load a library" reply ends
     * with an error, not a loop. */
    cdsh_error err = {0};
    assert_string_equal(
        render_err("<% JSON.stringify = () => '{\"ok\":false,\"need\":\"lodash\"}' %>", NULL, &err),
        "TEMPLATE_RUNTIME");
    expect("<%= 'after' %>", "after");
}

/* The library realm's intrinsics that only a call reaches (the iterator
 * of an array lodash returns, a generator made with lodash's Function)
 * are frozen too: what a template does to them is gone next time. */
static void library_iterators_and_generators_are_frozen(void **state)
{
    (void)state;
    cdsh_tavern_template_worker_stop();
    expect("<% try { Object.getPrototypeOf(_.map([1], x => x).values()).next = () => ({done: true}) } catch (e) {} "
           "try { Object.getPrototypeOf(Object.getPrototypeOf(_.map([1], x => x).values())).evil = 1 } catch (e) {} "
           "try { const G = _.constructor('return function* () {}')(); "
           "Object.getPrototypeOf(G.prototype).next = () => ({done: true, value: 'x'}) } catch (e) {} "
           "try { Object.getPrototypeOf(_.constructor('return new Map().entries()')()).next = null } catch (e) {} %>"
           "<%= Array.from(_.map([1, 2], x => x)).length %>",
           "2");
    expect("<%= Array.from(_.map([1, 2], x => x)).length %>|"
           "<%= typeof Object.getPrototypeOf(_.map([1], x => x).values()).evil %>|"
           "<%= [..._.constructor('return (function* () { yield 1; yield 2; })()')()].length %>|"
           "<%= _.toArray(new Map([[1, 2]])).length %>|"
           "<%= Array.from(_.constructor('return new Map([[1, 2]]).entries()')()).length %>",
           "2|undefined|2|1|1");
}

/* ejs's generated code is kept per template text in the library realm:
 * the same text after a template polluted its own realm's Map and String,
 * distinct texts, and more texts than the cache holds all render as if
 * compiled afresh. */
static void compiled_templates_cache_is_per_text_and_bounded(void **state)
{
    (void)state;
    const char *polluter = "<% Map.prototype.get = () => 'x'; Map.prototype.has = () => true; "
                           "String.prototype.replace = () => 'y'; String.prototype.split = () => []; "
                           "%>ok <%= 1 + 1 %>";
    expect(polluter, "ok 2");
    expect(polluter, "ok 2");
    expect("ok <%= 1 + 2 %>", "ok 3");
    expect("ok <%= 1 + 1 %>", "ok 2");
    char src[64], want[16];
    for (int i = 0; i < 300; i++) {
        snprintf(src, sizeof src, "<%%= %d * 2 %%>-<%%- '<%d>' %%>", i, i);
        snprintf(want, sizeof want, "%d-<%d>", i * 2, i);
        expect(src, want);
    }
    expect("<%= 0 * 2 %>-<%- '<0>' %>", "0-<0>");
    expect(polluter, "ok 2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tags_escape_raw_comment_and_literals),
        cmocka_unit_test(unclosed_tags_are_syntax_errors_with_their_line),
        cmocka_unit_test(variables_worldinfo_and_macros),
        cmocka_unit_test(preview_returns_no_variables),
        cmocka_unit_test(clock_and_random_are_frozen_per_execution),
        cmocka_unit_test(sandbox_has_no_file_system_network_or_modules),
        cmocka_unit_test(infinite_loop_times_out),
        cmocka_unit_test(huge_output_and_memory_bomb_fail_cleanly),
        cmocka_unit_test(javascript_errors_are_reported),
        cmocka_unit_test(modern_javascript_syntax_works),
        cmocka_unit_test(the_libraries_are_there),
        cmocka_unit_test(errors_name_the_template_line_column_and_expression),
        cmocka_unit_test(hostile_templates_end_with_their_codes),
        cmocka_unit_test(prototype_pollution_does_not_cross_evaluations),
        cmocka_unit_test(missing_runtime_names_the_file),
        cmocka_unit_test(libraries_load_on_first_use),
        cmocka_unit_test(library_iterators_and_generators_are_frozen),
        cmocka_unit_test(compiled_templates_cache_is_per_text_and_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
