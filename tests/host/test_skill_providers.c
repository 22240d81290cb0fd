/* test_skill_providers.c — DSH's skill providers on cdsh's registry: the
 * reserved and duplicate provider names, the merge by rank (runtime 250,
 * bundled 600, lower wins), then provider order, then the provider's own
 * order, with the loser's warning; snapshot's `complete`; the bounded,
 * cwd-keyed catalog cache and its invalidation; loading a definition
 * through its provider (checked, name drift invalidates); cancellation;
 * disposal (free_ud once, change events), also with a plugin's unload. */
#include "support/testkit.h"

#include <stdlib.h>
#include <string.h>

#include "host/host.h"
#include "host/skills.h"

typedef struct fake {
    const char *name;
    json_t *cands;     /* returned by list (copied) */
    bool incomplete;   /* list's *complete = false */
    const char *fail;  /* list fails with this message */
    json_t *def;       /* returned by get (copied); NULL: build from the candidate */
    bool get_null;     /* get answers "no longer loadable" */
    int lists, gets, freed;
    char last_cwd[64];
} fake;

static int fake_list(void *ud, const cdsh_skill_lookup *opts, json_t **out, bool *complete,
                     cdsh_error *err)
{
    fake *f = ud;
    f->lists++;
    snprintf(f->last_cwd, sizeof f->last_cwd, "%s", opts->cwd ? opts->cwd : "(none)");
    if (f->fail)
        return cdsh_error_set(err, CDSH_EIO, "BOOM", "%s", f->fail);
    *out = json_deep_copy(f->cands);
    *complete = !f->incomplete;
    return 0;
}

static int fake_get(void *ud, const json_t *cand, const cdsh_skill_lookup *opts, json_t **def,
                    cdsh_error *err)
{
    (void)opts, (void)err;
    fake *f = ud;
    f->gets++;
    if (f->get_null)
        *def = NULL;
    else if (f->def)
        *def = json_deep_copy(f->def);
    else
        *def = json_pack("{s:O, s:O, s:s}", "name", json_object_get(cand, "name"), "description",
                         json_object_get(cand, "description"), "content",
                         json_string_value(json_object_get(cand, "locator")));
    return 0;
}

static void fake_free(void *ud)
{
    ((fake *)ud)->freed++;
}

static cdsh_skill_provider provider(fake *f)
{
    return (cdsh_skill_provider){.name = f->name, .list = fake_list, .get = fake_get, .ud = f,
                                 .free_ud = fake_free};
}

static json_t *cand(const char *name, const char *source, double rank, const char *body)
{
    return json_pack("{s:s, s:s, s:s, s:f, s:s}", "name", name, "description", "does things",
                     "source", source, "rank", rank, "locator", body);
}

typedef struct fixture {
    cdsh_events *bus;
    cdsh_skills *skills;
    json_t *warnings; /* messages */
    int changes;
    cdsh_disposer_t l1, l2;
} fixture;

static void on_warning(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)name, (void)scope;
    json_array_append(((fixture *)arg)->warnings, json_object_get(payload, "message"));
}

static void on_change(void *arg, const char *name, const cdsh_scope *scope, const json_t *payload)
{
    (void)name, (void)scope, (void)payload;
    ((fixture *)arg)->changes++;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->bus = cdsh_events_new();
    f->skills = cdsh_skills_new(f->bus);
    f->warnings = json_array();
    cdsh_events_on(f->bus, "log/warning", NULL, on_warning, f, &f->l1, NULL);
    cdsh_events_on(f->bus, "skills/change", NULL, on_change, f, &f->l2, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    cdsh_disposer_run(&f->l1);
    cdsh_disposer_run(&f->l2);
    cdsh_skills_free(f->skills);
    cdsh_events_free(f->bus);
    json_decref(f->warnings);
    free(f);
    return 0;
}

static const char *warning(fixture *f, size_t i)
{
    return json_string_value(json_array_get(f->warnings, i));
}

/* "name@provider/source" of each summary, in order. */
static char *names(const json_t *list)
{
    char buf[1024] = "";
    size_t i;
    json_t *s;
    json_array_foreach(list, i, s) {
        char one[128];
        snprintf(one, sizeof one, "%s%s@%s/%s", i ? " " : "",
                 json_string_value(json_object_get(s, "name")),
                 json_string_value(json_object_get(s, "provider")),
                 json_string_value(json_object_get(s, "source")));
        strncat(buf, one, sizeof buf - strlen(buf) - 1);
    }
    return strdup(buf);
}

static json_t *snapshot(fixture *f, const char *cwd)
{
    cdsh_skill_lookup o = {.cwd = cwd};
    json_t *s = cdsh_skills_snapshot(f->skills, NULL, &o, NULL);
    assert_non_null(s);
    return s;
}

static void provider_names_are_checked_and_refusals_release_ud(void **state)
{
    fixture *f = *state;
    fake rt = {.name = "runtime", .cands = json_array()};
    cdsh_skill_provider p = provider(&rt);
    cdsh_disposer_t d = {0}, d2 = {0};
    cdsh_error err = {0};
    assert_int_equal(cdsh_skills_register_provider(f->skills, &p, &d, &err), CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_SKILL_PROVIDER");
    assert_string_equal(err.message, "\"runtime\" is reserved for runtime skill registrations");
    assert_int_equal(rt.freed, 1);
    assert_null(d.fn);

    fake a = {.name = "local", .cands = json_array()}, b = {.name = "local", .cands = json_array()};
    p = provider(&a);
    assert_int_equal(cdsh_skills_register_provider(f->skills, &p, &d, NULL), 0);
    p = provider(&b);
    assert_int_equal(cdsh_skills_register_provider(f->skills, &p, &d2, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "a skill provider named \"local\" is already registered");
    assert_int_equal(b.freed, 1);
    assert_int_equal(a.freed, 0);
    p = (cdsh_skill_provider){.name = "half", .list = fake_list, .ud = &b, .free_ud = fake_free};
    assert_int_equal(cdsh_skills_register_provider(f->skills, &p, &d2, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "a skill provider needs a name, list and get");
    assert_int_equal(b.freed, 2);
    cdsh_disposer_run(&d);
    assert_int_equal(a.freed, 1);
    /* the name is free again once disposed */
    a.freed = 0;
    p = provider(&a);
    assert_int_equal(cdsh_skills_register_provider(f->skills, &p, &d, NULL), 0);
    cdsh_disposer_run(&d);
    assert_int_equal(a.freed, 1);
    json_decref(rt.cands), json_decref(a.cands), json_decref(b.cands);
}

/* alpha: runtime (250) loses to b's rank 100; beta: a and b both rank 600,
 * a was registered first; gamma: b lists it twice, its first entry wins. */
static void rank_then_provider_order_then_local_order_decide(void **state)
{
    fixture *f = *state;
    cdsh_skill_def rt = {.name = "alpha", .description = "runtime alpha", .content = "R"};
    cdsh_disposer_t dr, da, db;
    assert_int_equal(cdsh_skills_register(f->skills, NULL, &rt, &dr, NULL), 0);
    fake a = {.name = "a", .cands = json_pack("[o, o]", cand("beta", "bundled", 600, "A-beta"),
                                              cand("alpha", "bundled", 600, "A-alpha"))};
    fake b = {.name = "b",
              .cands = json_pack("[o, o, o, o]", cand("gamma", "custom", 300, "B-gamma1"),
                                 cand("beta", "user-dsh", 600, "B-beta"),
                                 cand("alpha", "project-dsh", 100, "B-alpha"),
                                 cand("gamma", "custom", 300, "B-gamma2"))};
    cdsh_skill_provider p = provider(&a);
    assert_int_equal(cdsh_skills_register_provider(f->skills, &p, &da, NULL), 0);
    p = provider(&b);
    assert_int_equal(cdsh_skills_register_provider(f->skills, &p, &db, NULL), 0);
    json_array_clear(f->warnings);

    json_t *snap = snapshot(f, NULL);
    assert_true(json_is_true(json_object_get(snap, "complete")));
    char *n = names(json_object_get(snap, "skills"));
    assert_string_equal(n, "alpha@b/project-dsh beta@a/bundled gamma@b/custom");
    free(n);
    /* losers in merge order: rank, then provider order (runtime first), then local */
    assert_int_equal(json_array_size(f->warnings), 4);
    assert_string_equal(warning(f, 0), "skill \"alpha\" from runtime ignored because a "
                                       "higher-priority skill already exists");
    assert_string_equal(warning(f, 1), "skill \"gamma\" from custom ignored because a "
                                       "higher-priority skill already exists");
    assert_string_equal(warning(f, 2), "skill \"alpha\" from bundled ignored because a "
                                       "higher-priority skill already exists");
    assert_string_equal(warning(f, 3), "skill \"beta\" from user-dsh ignored because a "
                                       "higher-priority skill already exists");
    json_decref(snap);
    /* the winners' bodies come from their providers */
    json_t *def = cdsh_skills_info_dup(f->skills, NULL, "alpha");
    assert_string_equal(json_string_value(json_object_get(def, "content")), "B-alpha");
    assert_string_equal(json_string_value(json_object_get(def, "provider")), "b");
    assert_string_equal(json_string_value(json_object_get(def, "source")), "project-dsh");
    json_decref(def);
    def = cdsh_skills_info_dup(f->skills, NULL, "gamma");
    assert_string_equal(json_string_value(json_object_get(def, "content")), "B-gamma1");
    json_decref(def);
    /* a cached catalog does not warn again */
    json_array_clear(f->warnings);
    json_decref(snapshot(f, NULL));
    assert_int_equal(json_array_size(f->warnings), 0);
    /* b gone: the runtime alpha wins again, bundled beta stays */
    cdsh_disposer_run(&db);
    assert_int_equal(b.freed, 1);
    snap = snapshot(f, NULL);
    n = names(json_object_get(snap, "skills"));
    assert_string_equal(n, "alpha@runtime/runtime beta@a/bundled");
    free(n);
    json_decref(snap);
    cdsh_disposer_run(&da);
    cdsh_disposer_run(&dr);
    json_decref(a.cands), json_decref(b.cands);
}

static void snapshot_is_complete_only_when_every_provider_completed(void **state)
{
    fixture *f = *state;
    fake ok = {.name = "ok", .cands = json_pack("[o]", cand("one", "custom", 300, "1"))};
    fake partial = {.name = "partial",
                    .cands = json_pack("[o]", cand("two", "custom", 300, "2")),
                    .incomplete = true};
    fake broken = {.name = "broken", .cands = json_array(), .fail = "index unreachable"};
    cdsh_disposer_t d1, d2, d3;
    cdsh_skill_provider p = provider(&ok);
    cdsh_skills_register_provider(f->skills, &p, &d1, NULL);
    json_t *snap = snapshot(f, NULL);
    assert_true(json_is_true(json_object_get(snap, "complete")));
    json_decref(snap);

    p = provider(&partial);
    cdsh_skills_register_provider(f->skills, &p, &d2, NULL);
    snap = snapshot(f, NULL);
    assert_true(json_is_false(json_object_get(snap, "complete")));
    char *n = names(json_object_get(snap, "skills"));
    assert_string_equal(n, "one@ok/custom two@partial/custom"); /* usable, just not final */
    free(n);
    json_decref(snap);
    /* an incomplete observation is never cached */
    int before = ok.lists;
    json_decref(snapshot(f, NULL));
    assert_int_equal(ok.lists, before + 1);
    assert_int_equal(cdsh_skills_cache_size(f->skills), 0);
    cdsh_disposer_run(&d2);

    json_array_clear(f->warnings);
    p = provider(&broken);
    cdsh_skills_register_provider(f->skills, &p, &d3, NULL);
    snap = snapshot(f, NULL);
    assert_true(json_is_false(json_object_get(snap, "complete")));
    n = names(json_object_get(snap, "skills"));
    assert_string_equal(n, "one@ok/custom");
    free(n);
    assert_string_equal(warning(f, 0), "skill provider \"broken\" skipped: index unreachable");
    json_decref(snap);
    cdsh_disposer_run(&d3);
    cdsh_disposer_run(&d1);
    json_decref(ok.cands), json_decref(partial.cands), json_decref(broken.cands);
}

/* DSH's validateCandidate, one malformed candidate per row: the provider is
 * skipped with the message and the snapshot is incomplete. */
static void malformed_candidates_skip_their_provider(void **state)
{
    fixture *f = *state;
    struct {
        const char *json, *message;
    } rows[] = {
        {"{\"description\":\"d\",\"source\":\"s\",\"rank\":1}",
         "returned a non-string skill name"},
        {"{\"name\":\"Bad_Name\",\"description\":\"d\",\"source\":\"s\",\"rank\":1}",
         "returned invalid skill name \"Bad_Name\""},
        {"{\"name\":\"x\",\"description\":\"\",\"source\":\"s\",\"rank\":1}",
         "returned skill \"x\" without a description"},
        {"{\"name\":\"x\",\"description\":3,\"source\":\"s\",\"rank\":1}",
         "returned skill \"x\" with a non-string description"},
        {"{\"name\":\"x\",\"description\":\"d\",\"source\":\"s\",\"rank\":\"1\"}",
         "returned skill \"x\" with an invalid rank"},
        {"{\"name\":\"x\",\"description\":\"d\",\"rank\":1}",
         "returned skill \"x\" with a non-string source"},
        {"{\"name\":\"x\",\"description\":\"d\",\"source\":\"s\",\"rank\":1,"
         "\"provider\":\"other\"}",
         "returned skill \"x\" for provider \"other\""},
        {"{\"name\":\"x\",\"description\":\"d\",\"source\":\"s\",\"rank\":1,"
         "\"invocation\":{\"modelInvocable\":true}}",
         "returned skill \"x\" with a non-boolean invocation.userInvocable"},
        {"{\"name\":\"x\",\"description\":\"d\",\"source\":\"s\",\"rank\":1,"
         "\"invocation\":[]}",
         "returned skill \"x\" with a non-object invocation policy"},
        {"{\"name\":\"x\",\"description\":\"d\",\"source\":\"s\",\"rank\":1,"
         "\"resourceBase\":{\"kind\":\"disk\",\"path\":\"/\"}}",
         "returned skill \"x\" with a resourceBase that kind must be \"directory\", \"url\" or "
         "\"opaque\""},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        json_t *c = json_loads(rows[i].json, 0, NULL);
        assert_non_null(c);
        fake bad = {.name = "bad", .cands = json_pack("[o]", c)};
        cdsh_skill_provider p = provider(&bad);
        cdsh_disposer_t d;
        assert_int_equal(cdsh_skills_register_provider(f->skills, &p, &d, NULL), 0);
        json_array_clear(f->warnings);
        json_t *snap = snapshot(f, NULL);
        assert_true(json_is_false(json_object_get(snap, "complete")));
        assert_int_equal(json_array_size(json_object_get(snap, "skills")), 0);
        char want[300];
        snprintf(want, sizeof want, "skill provider \"bad\" skipped: skill provider \"bad\" %s",
                 rows[i].message);
        assert_string_equal(warning(f, 0), want);
        json_decref(snap);
        cdsh_disposer_run(&d);
        json_decref(bad.cands);
    }
}

/* collectCacheMaxEntries: completed catalogs per cwd, oldest evicted first. */
static void the_catalog_cache_is_keyed_by_cwd_and_bounded(void **state)
{
    fixture *f = *state;
    assert_int_equal(cdsh_skills_cache_max(f->skills), 128);
    cdsh_error err = {0};
    assert_int_equal(cdsh_skills_set_cache_max(f->skills, 0, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "skill: collectCacheMaxEntries must be an integer greater "
                                     "than or equal to 1");
    assert_int_equal(cdsh_skills_set_cache_max(f->skills, 2, NULL), 0);
    fake p1 = {.name = "p1", .cands = json_pack("[o]", cand("one", "custom", 300, "1"))};
    cdsh_skill_provider p = provider(&p1);
    cdsh_disposer_t d;
    cdsh_skills_register_provider(f->skills, &p, &d, NULL);
    json_decref(snapshot(f, "/a"));
    assert_string_equal(p1.last_cwd, "/a");
    json_decref(snapshot(f, "/b"));
    json_decref(snapshot(f, "/a")); /* hit */
    json_decref(snapshot(f, "/b")); /* hit */
    assert_int_equal(p1.lists, 2);
    assert_int_equal(cdsh_skills_cache_size(f->skills), 2);
    json_decref(snapshot(f, NULL)); /* no cwd is its own key; evicts /a */
    assert_int_equal(p1.lists, 3);
    assert_int_equal(cdsh_skills_cache_size(f->skills), 2);
    json_decref(snapshot(f, "/b")); /* still cached */
    assert_int_equal(p1.lists, 3);
    json_decref(snapshot(f, "/a")); /* evicted: listed again */
    assert_int_equal(p1.lists, 4);
    assert_int_equal(cdsh_skills_cache_size(f->skills), 2);
    /* shrinking evicts at once */
    assert_int_equal(cdsh_skills_set_cache_max(f->skills, 1, NULL), 0);
    assert_int_equal(cdsh_skills_cache_size(f->skills), 1);
    /* runtime registrations are merged live; they need no cache flush */
    cdsh_skill_def rt = {.name = "zeta", .description = "z", .content = "z"};
    cdsh_disposer_t dr;
    cdsh_skills_register(f->skills, NULL, &rt, &dr, NULL);
    json_t *snap = snapshot(f, "/a");
    char *n = names(json_object_get(snap, "skills"));
    assert_string_equal(n, "one@p1/custom zeta@runtime/runtime");
    free(n);
    json_decref(snap);
    assert_int_equal(p1.lists, 4);
    cdsh_disposer_run(&dr);
    cdsh_disposer_run(&d);
    assert_int_equal(cdsh_skills_cache_size(f->skills), 0);
    json_decref(p1.cands);
}

static void invalidation_and_provider_changes_flush_and_notify(void **state)
{
    fixture *f = *state;
    fake p1 = {.name = "p1", .cands = json_pack("[o]", cand("one", "custom", 300, "1"))};
    cdsh_skill_provider p = provider(&p1);
    cdsh_disposer_t d;
    int c0 = f->changes;
    cdsh_skills_register_provider(f->skills, &p, &d, NULL);
    assert_int_equal(f->changes, c0 + 1);
    json_decref(snapshot(f, NULL));
    assert_int_equal(p1.lists, 1);
    cdsh_skills_invalidate(f->skills, "nobody"); /* not registered: nothing */
    assert_int_equal(f->changes, c0 + 1);
    json_decref(snapshot(f, NULL));
    assert_int_equal(p1.lists, 1);
    cdsh_skills_invalidate(f->skills, "p1");
    assert_int_equal(f->changes, c0 + 2);
    json_decref(cdsh_skills_list(f->skills, NULL));
    assert_int_equal(p1.lists, 2);
    /* a second provider flushes the cache too */
    fake p2 = {.name = "p2", .cands = json_array()};
    cdsh_disposer_t d2;
    p = provider(&p2);
    cdsh_skills_register_provider(f->skills, &p, &d2, NULL);
    json_decref(snapshot(f, NULL));
    assert_int_equal(p1.lists, 3);
    cdsh_disposer_run(&d2);
    assert_int_equal(f->changes, c0 + 4);
    assert_int_equal(p2.freed, 1);
    cdsh_disposer_run(&d);
    assert_int_equal(f->changes, c0 + 5);
    assert_int_equal(p1.freed, 1);
    assert_null(cdsh_skills_info_dup(f->skills, NULL, "one"));
    json_decref(p1.cands), json_decref(p2.cands);
}

static void definitions_load_through_the_provider_and_are_checked(void **state)
{
    fixture *f = *state;
    json_t *c = cand("guide", "bundled", 600, "G");
    json_object_set_new(c, "path", json_string("/opt/skills/guide/SKILL.md"));
    json_object_set_new(c, "invocation", json_pack("{s:b, s:b}", "modelInvocable", 1,
                                                   "userInvocable", 0));
    fake pr = {.name = "bundle", .cands = json_pack("[o]", c)};
    cdsh_skill_provider p = provider(&pr);
    cdsh_disposer_t d;
    cdsh_skills_register_provider(f->skills, &p, &d, NULL);
    /* fields the definition leaves out come from the candidate */
    pr.def = json_pack("{s:s, s:s, s:s, s:{s:s}, s:{s:s, s:s}}", "name", "guide", "description",
                       "Guide", "content", "Body", "metadata", "version", "2", "resourceBase",
                       "kind", "url", "url", "https://example.invalid/guide/");
    json_t *def = NULL;
    assert_int_equal(cdsh_skills_get_dup(f->skills, NULL, "guide", NULL, &def, NULL), 0);
    assert_string_equal(json_string_value(json_object_get(def, "content")), "Body");
    assert_string_equal(json_string_value(json_object_get(def, "provider")), "bundle");
    assert_string_equal(json_string_value(json_object_get(def, "source")), "bundled");
    assert_string_equal(json_string_value(json_object_get(def, "path")),
                        "/opt/skills/guide/SKILL.md");
    assert_string_equal(json_string_value(json_object_get(json_object_get(def, "metadata"),
                                                          "version")),
                        "2");
    assert_true(json_is_true(json_object_get(def, "modelOnly")));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(def, "resourceBase"), "url")),
        "https://example.invalid/guide/");
    json_decref(def);
    /* malformed definition: an error with DSH's message */
    json_object_set_new(pr.def, "content", json_integer(1));
    cdsh_error err = {0};
    assert_int_equal(cdsh_skills_get_dup(f->skills, NULL, "guide", NULL, &def, &err),
                     CDSH_EINVAL);
    assert_string_equal(err.code, "INVALID_SKILL");
    assert_string_equal(err.message, "loaded skill \"guide\" content must be a string");
    assert_null(def);
    /* no longer loadable */
    pr.get_null = true;
    assert_int_equal(cdsh_skills_get_dup(f->skills, NULL, "guide", NULL, &def, NULL), 0);
    assert_null(def);
    /* a definition under another name: NULL, and the provider's catalog is flushed */
    pr.get_null = false;
    json_object_set_new(pr.def, "content", json_string("Body"));
    json_object_set_new(pr.def, "name", json_string("other"));
    int lists = pr.lists, changes = f->changes;
    assert_int_equal(cdsh_skills_get_dup(f->skills, NULL, "guide", NULL, &def, NULL), 0);
    assert_null(def);
    assert_int_equal(f->changes, changes + 1);
    json_decref(snapshot(f, NULL));
    assert_int_equal(pr.lists, lists + 1); /* the get's collect hit the cache; now flushed */
    /* invalid and unknown names never reach the provider */
    int gets = pr.gets;
    assert_int_equal(cdsh_skills_get_dup(f->skills, NULL, "Guide!", NULL, &def, NULL), 0);
    assert_int_equal(cdsh_skills_get_dup(f->skills, NULL, "nope", NULL, &def, NULL), 0);
    assert_null(def);
    assert_int_equal(pr.gets, gets);
    cdsh_disposer_run(&d);
    json_decref(pr.cands), json_decref(pr.def);
}

static void a_cancelled_lookup_fails_before_any_provider_runs(void **state)
{
    fixture *f = *state;
    fake pr = {.name = "p", .cands = json_pack("[o]", cand("one", "custom", 300, "1"))};
    cdsh_skill_provider p = provider(&pr);
    cdsh_disposer_t d;
    cdsh_skills_register_provider(f->skills, &p, &d, NULL);
    cdsh_cancel *c = cdsh_cancel_new(NULL);
    cdsh_cancel_fire(c, "stop");
    cdsh_skill_lookup o = {.cancel = c};
    cdsh_error err = {0};
    assert_null(cdsh_skills_snapshot(f->skills, NULL, &o, &err));
    assert_int_equal(err.rc, CDSH_ECANCELED);
    json_t *def = NULL;
    assert_int_equal(cdsh_skills_get_dup(f->skills, NULL, "one", &o, &def, NULL), CDSH_ECANCELED);
    assert_int_equal(pr.lists, 0);
    cdsh_cancel_free(c);
    cdsh_disposer_run(&d);
    json_decref(pr.cands);
}

/* ---- a provider registered by a plugin leaves with it ------------------------ */

static fake PLUGIN_FAKE;

static int provider_apply(cdsh_plugin_ctx *ctx, const json_t *config, cdsh_error *err)
{
    (void)config;
    cdsh_skill_provider p = provider(&PLUGIN_FAKE);
    cdsh_disposer_t d;
    int rc = cdsh_skills_register_provider(cdsh_host_skills(cdsh_ctx_host(ctx)), &p, &d, err);
    return rc ? rc : cdsh_ctx_adopt(ctx, d, err); /* unregistered when the plugin unloads */
}

static const cdsh_plugin_def provider_plugin = {.name = "bundle-a", .apply = provider_apply};
static const cdsh_plugin_def provider_plugin_b = {.name = "bundle-b", .apply = provider_apply};

static void a_plugins_provider_is_disposed_with_the_plugin(void **state)
{
    (void)state;
    cdsh_host *h = cdsh_host_new();
    PLUGIN_FAKE = (fake){.name = "bundled", .cands = json_pack("[o]", cand("tour", "bundled",
                                                                            CDSH_SKILLS_BUNDLED_RANK,
                                                                            "T"))};
    cdsh_plugin *pl = NULL, *pb = NULL;
    assert_int_equal(cdsh_plugin_load(h, &provider_plugin, NULL, &pl, NULL), 0);
    json_t *def = cdsh_skills_info_dup(cdsh_host_skills(h), NULL, "tour");
    assert_string_equal(json_string_value(json_object_get(def, "content")), "T");
    json_decref(def);
    /* a second plugin with a provider of the same name fails to apply */
    cdsh_error err = {0};
    assert_int_equal(cdsh_plugin_load(h, &provider_plugin_b, NULL, &pb, &err), CDSH_EINVAL);
    assert_string_equal(err.message, "plugin \"bundle-b\" failed to apply: a skill provider "
                                     "named \"bundled\" is already registered");
    assert_int_equal(PLUGIN_FAKE.freed, 1); /* the refused registration's ud */
    cdsh_plugin_unload(pl);
    assert_int_equal(PLUGIN_FAKE.freed, 2);
    assert_null(cdsh_skills_info_dup(cdsh_host_skills(h), NULL, "tour"));
    /* and the name is free for the other plugin now */
    assert_int_equal(cdsh_plugin_load(h, &provider_plugin_b, NULL, &pb, NULL), 0);
    cdsh_host_free(h);
    assert_int_equal(PLUGIN_FAKE.freed, 3);
    json_decref(PLUGIN_FAKE.cands);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(provider_names_are_checked_and_refusals_release_ud),
        T(rank_then_provider_order_then_local_order_decide),
        T(snapshot_is_complete_only_when_every_provider_completed),
        T(malformed_candidates_skip_their_provider),
        T(the_catalog_cache_is_keyed_by_cwd_and_bounded),
        T(invalidation_and_provider_changes_flush_and_notify),
        T(definitions_load_through_the_provider_and_are_checked),
        T(a_cancelled_lookup_fails_before_any_provider_runs),
        cmocka_unit_test(a_plugins_provider_is_disposed_with_the_plugin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
