/* service_wi.c — the world-info settings of a session's turn, layered as
 * SillyTavern's defaults ← the preset's context size ← the profile (tavern
 * settings "worldInfo") ← the story (doc settings/world-info.json), and the
 * RPC methods that read them and save the story's layer. */
#include <stdlib.h>
#include <string.h>

#include "plugins/tavern/service_priv.h"
#include "plugins/tavern/story.h"
#include "plugins/tavern/wi_settings.h"

/* Only the keys a story sets; the rest come from the profile. */
#define STORY_WI_DOC "settings/world-info.json"

/* The story's own layer (a new empty object when absent or unreadable). */
static json_t *story_layer(cdsh_tavern_story *story)
{
    json_t *v = NULL;
    if (!story || cdsh_tavern_story_load(story, CDSH_TAVERN_KIND_DOC, STORY_WI_DOC, &v, NULL) < 0 ||
        !json_is_object(v)) {
        json_decref(v);
        v = json_object();
    }
    return v;
}

int cdsh__tavern_wi_settings_effective(const json_t *settings, const json_t *preset,
                                       cdsh_tavern_story *story, cdsh_tavern_wi_settings *out,
                                       cdsh_error *err)
{
    cdsh_tavern_wi_settings_default(out);
    if (preset && json_is_integer(json_object_get(preset, "openai_max_context")) &&
        json_integer_value(json_object_get(preset, "openai_max_context")) > 0)
        out->max_context = (int)json_integer_value(json_object_get(preset, "openai_max_context"));
    int rc = cdsh_tavern_wi_settings_apply(out, json_object_get(settings, "worldInfo"), err);
    json_t *layer = rc == 0 ? story_layer(story) : NULL;
    if (rc == 0)
        rc = cdsh_tavern_wi_settings_apply(out, layer, err);
    json_decref(layer);
    return rc;
}

void cdsh__tavern_gen_type_set(cdsh_tavern_service *svc, const char *sid, const char *type)
{
    if (!svc || !sid || !cdsh_tavern_generation_type_valid(type))
        return;
    pthread_mutex_lock(&svc->mu);
    if (!svc->gen_types)
        svc->gen_types = json_object();
    if (svc->gen_types)
        json_object_set_new(svc->gen_types, sid, json_string(type));
    pthread_mutex_unlock(&svc->mu);
}

char *cdsh__tavern_gen_type_take_dup(cdsh_tavern_service *svc, const char *sid)
{
    if (!svc || !sid)
        return NULL;
    pthread_mutex_lock(&svc->mu);
    const char *t = json_string_value(json_object_get(svc->gen_types, sid));
    char *out = t ? strdup(t) : NULL;
    json_object_del(svc->gen_types, sid);
    pthread_mutex_unlock(&svc->mu);
    return out;
}

static int bad(cdsh_error *err, const char *what)
{
    return cdsh_error_set(err, CDSH_EINVAL, "bad-request", "field \"%s\" is missing or malformed",
                          what);
}

/* {sessionId} -> {defaults, profile, story, effective, revision}: the story
 * layer and its revision for saveStoryWorldInfoSettings. */
CDSH__TAVERN_OP(cdsh__tavern_op_getWorldInfoSettings)
{
    cdsh_tavern_service *svc = ud;
    const char *sid = json_string_value(json_object_get(call->args, "sessionId"));
    if (!sid)
        return bad(err, "sessionId");
    cdsh_tavern_story *story = NULL;
    int rc = cdsh__tavern_session_story(svc, sid, &story, err);
    if (rc < 0)
        return cdsh__tavern_kebab(rc, err);
    json_t *settings = cdsh__tavern_settings_dup(svc), *layer = story_layer(story);
    cdsh_tavern_wi_settings d, eff;
    cdsh_tavern_wi_settings_default(&d);
    rc = cdsh__tavern_wi_settings_effective(settings, NULL, story, &eff, err);
    if (rc == 0) {
        json_t *cur = NULL;
        char *canon = NULL;
        if (cdsh_tavern_story_load(story, CDSH_TAVERN_KIND_DOC, STORY_WI_DOC, &cur, NULL) == 0)
            canon = cdsh_tavern_story_canon_dup(cur);
        json_decref(cur);
        *value = json_pack("{s:o,s:O,s:O,s:o,s:s}", "defaults", cdsh_tavern_wi_settings_json(&d),
                           "profile", json_object_get(settings, "worldInfo"), "story", layer,
                           "effective", cdsh_tavern_wi_settings_json(&eff), "revision",
                           canon ? canon : "");
        free(canon);
        rc = *value ? 0 : cdsh_error_set(err, CDSH_ENOMEM, "OUT_OF_MEMORY", "out of memory");
    }
    json_decref(layer);
    json_decref(settings);
    cdsh_tavern_story_free(story);
    return rc;
}

/* {sessionId, settings, expectedRevision?} -> {saved, revision, effective}:
 * replaces the story's layer (an empty object clears it) after validating
 * it exactly as a turn reads it. */
CDSH__TAVERN_OP(cdsh__tavern_op_saveStoryWorldInfoSettings)
{
    cdsh_tavern_service *svc = ud;
    const char *sid = json_string_value(json_object_get(call->args, "sessionId"));
    json_t *layer = json_object_get(call->args, "settings");
    json_t *expect = json_object_get(call->args, "expectedRevision");
    if (!sid)
        return bad(err, "sessionId");
    if (!json_is_object(layer))
        return bad(err, "settings");
    if (expect && !json_is_string(expect))
        return bad(err, "expectedRevision");
    cdsh_tavern_wi_settings probe;
    cdsh_tavern_wi_settings_default(&probe);
    int rc = cdsh_tavern_wi_settings_apply(&probe, layer, err);
    if (rc < 0)
        return rc;
    cdsh_tavern_story *story = NULL;
    if ((rc = cdsh__tavern_session_story(svc, sid, &story, err)) < 0)
        return cdsh__tavern_kebab(rc, err);
    rc = cdsh_tavern_story_put(story, NULL, CDSH_TAVERN_KIND_DOC, STORY_WI_DOC,
                               json_object_size(layer) ? layer : NULL, json_string_value(expect),
                               err);
    json_t *settings = rc == 0 ? cdsh__tavern_settings_dup(svc) : NULL;
    cdsh_tavern_wi_settings eff;
    if (rc == 0 &&
        (rc = cdsh__tavern_wi_settings_effective(settings, NULL, story, &eff, err)) == 0) {
        char *canon = json_object_size(layer) ? cdsh_tavern_story_canon_dup(layer) : NULL;
        *value = json_pack("{s:b,s:s,s:o}", "saved", 1, "revision", canon ? canon : "", "effective",
                           cdsh_tavern_wi_settings_json(&eff));
        free(canon);
    }
    json_decref(settings);
    cdsh_tavern_story_free(story);
    return rc < 0 ? cdsh__tavern_kebab(rc, err) : 0;
}
