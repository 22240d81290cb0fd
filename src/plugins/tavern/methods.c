/* methods.c — the tavern's operations table (host/ops.h): one row per RPC
 * method of the /tavern channel (what the role-play panel calls) and per
 * model tool (tavern_*), naming its argument schema, handler and result
 * shape. Adding a method is adding a row here and writing its handler; the
 * channel, the tools and the method list the panel loads ($ops) are built
 * from these rows. The handlers are service*.c's. */
#include <stdlib.h>
#include <string.h>

#include "host/dispatch.h"
#include "plugins/tavern/plugin.h"
#include "plugins/tavern/rpc.h"
#include "plugins/tavern/service_priv.h"

/* Every tool value is an object: a result or an expected refusal {ok:false, code, message}. */
#define TOOL_RESULT "{\"type\":\"object\"}"

/* An RPC method: payload fields (documentation; the handler validates them,
 * answering bad-request) and the shape of its value. */
#define METHOD(name_, args_, result_)                                                              \
    {                                                                                              \
        .name = #name_, .args_schema = args_, .result_schema = result_,                            \
        .handler = cdsh__tavern_op_##name_, .surfaces = CDSH_OP_RPC                                \
    }

/* The page shows memory_search's hits as a search card (host-contracts §1
 * presentResult): the memory's file as the title, its body as the snippet. */
static json_t *present_memory_hits(const json_t *args, const json_t *result)
{
    const json_t *v = json_object_get(result, "value");
    if (!json_is_true(json_object_get(v, "ok")))
        return NULL;
    json_t *hits = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(v, "results"), i, r) {
        const char *id = json_string_value(json_object_get(r, "id"));
        const char *path = json_string_value(json_object_get(r, "path"));
        const char *body = json_string_value(json_object_get(r, "body"));
        json_array_append_new(hits, json_pack("{s:s, s:s, s:s}", "title",
                                              path ? path
                                              : id ? id
                                                   : "",
                                              "snippet", body ? body : "", "ref", id ? id : ""));
    }
    const char *q = json_string_value(json_object_get(args, "query"));
    return json_pack("{s:s, s:s, s:o}", "card", "search", "query", q ? q : "", "results", hits);
}

static const cdsh_op ROWS[] = {
    METHOD(listCharacters, "{\"type\":\"object\",\"properties\":{}}", "{\"type\":\"array\"}"),
    METHOD(listArchivedCharacters, "{\"type\":\"object\",\"properties\":{}}",
           "{\"type\":\"array\"}"),
    METHOD(inspectCharacter,
           "{\"type\":\"object\",\"properties\":{\"fileBase64\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\"}"),
    METHOD(importCharacter,
           "{\"type\":\"object\",\"properties\":{\"fileBase64\":{\"type\":\"string\"},\"book\":{"
           "\"type\":\"string\"}}}",
           "{\"type\":\"object\"}"),
    METHOD(getCharacterDetail,
           "{\"type\":\"object\",\"properties\":{\"cardId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"record\":{},\"revision\":{},\"archived\":{},"
           "\"greetings\":{}},\"required\":[\"record\",\"revision\",\"archived\",\"greetings\"]}"),
    METHOD(saveCharacter,
           "{\"type\":\"object\",\"properties\":{\"cardId\":{\"type\":\"string\"},\"patch\":{"
           "\"type\":\"object\"},\"expectedRevision\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"cardId\":{},\"revision\":{}},\"required\":["
           "\"cardId\",\"revision\"]}"),
    METHOD(archiveCharacter,
           "{\"type\":\"object\",\"properties\":{\"cardId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"cardId\":{},\"archived\":{}},\"required\":["
           "\"cardId\",\"archived\"]}"),
    METHOD(restoreCharacter,
           "{\"type\":\"object\",\"properties\":{\"cardId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"cardId\":{},\"archived\":{}},\"required\":["
           "\"cardId\",\"archived\"]}"),
    METHOD(deleteCharacter,
           "{\"type\":\"object\",\"properties\":{\"cardId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"cardId\":{},\"deleted\":{}},\"required\":["
           "\"cardId\",\"deleted\"]}"),
    METHOD(exportCharacter,
           "{\"type\":\"object\",\"properties\":{\"cardId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"json\":{},\"pngBase64\":{}},\"required\":["
           "\"json\",\"pngBase64\"]}"),
    METHOD(listLorebooks, "{\"type\":\"object\",\"properties\":{}}", "{\"type\":\"array\"}"),
    METHOD(getLorebook, "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\"}"),
    METHOD(importLorebook,
           "{\"type\":\"object\",\"properties\":{\"json\":{\"type\":\"string\"},\"name\":{\"type\":"
           "\"string\"}}}",
           "{\"type\":\"object\"}"),
    METHOD(listPresets, "{\"type\":\"object\",\"properties\":{}}", "{\"type\":\"array\"}"),
    METHOD(getPreset, "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\"}"),
    METHOD(importPreset,
           "{\"type\":\"object\",\"properties\":{\"json\":{\"type\":\"string\"},\"name\":{\"type\":"
           "\"string\"}}}",
           "{\"type\":\"object\"}"),
    METHOD(listPersonas, "{\"type\":\"object\",\"properties\":{}}", "{\"type\":\"array\"}"),
    METHOD(getPersona, "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\"}"),
    METHOD(importPersona,
           "{\"type\":\"object\",\"properties\":{\"json\":{\"type\":\"string\"},\"name\":{\"type\":"
           "\"string\"}}}",
           "{\"type\":\"object\"}"),
    METHOD(saveLorebook,
           "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"},\"book\":{\"type\":"
           "\"object\"},\"expectedRevision\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"id\":{},\"revision\":{}},\"required\":[\"id\","
           "\"revision\"]}"),
    METHOD(deleteLorebook, "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"id\":{},\"deleted\":{}},\"required\":[\"id\","
           "\"deleted\"]}"),
    METHOD(getCharacterLorebook,
           "{\"type\":\"object\",\"properties\":{\"cardId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"cardId\":{},\"revision\":{}},\"required\":["
           "\"cardId\",\"revision\"]}"),
    METHOD(saveCharacterLorebook,
           "{\"type\":\"object\",\"properties\":{\"cardId\":{\"type\":\"string\"},\"book\":{"
           "\"type\":\"object\"},\"expectedRevision\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"cardId\":{},\"revision\":{}},\"required\":["
           "\"cardId\",\"revision\"]}"),
    METHOD(deleteEmbeddedLorebook,
           "{\"type\":\"object\",\"properties\":{\"cardId\":{\"type\":\"string\"},"
           "\"expectedRevision\":{\"type\":\"string\"},\"salvage\":{\"type\":\"boolean\"}}}",
           "{\"type\":\"object\",\"properties\":{\"cardId\":{},\"deleted\":{}},\"required\":["
           "\"cardId\",\"deleted\"]}"),
    METHOD(savePreset,
           "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"},\"preset\":{\"type\":"
           "\"object\"},\"expectedRevision\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"id\":{},\"revision\":{}},\"required\":[\"id\","
           "\"revision\"]}"),
    METHOD(deletePreset, "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"id\":{},\"deleted\":{}},\"required\":[\"id\","
           "\"deleted\"]}"),
    METHOD(savePersona,
           "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"},\"name\":{\"type\":"
           "\"string\"},\"description\":{\"type\":\"string\"},\"expectedRevision\":{\"type\":"
           "\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"id\":{},\"revision\":{}},\"required\":[\"id\","
           "\"revision\"]}"),
    METHOD(deletePersona, "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"id\":{},\"deleted\":{}},\"required\":[\"id\","
           "\"deleted\"]}"),
    METHOD(listRegexRules,
           "{\"type\":\"object\",\"properties\":{\"withRevision\":{\"type\":\"boolean\"}}}",
           "{\"oneOf\":[{\"type\":\"array\"},{\"type\":\"object\",\"properties\":{\"rules\":{},"
           "\"revision\":{}},\"required\":[\"rules\",\"revision\"]}]}"),
    METHOD(saveRegexRules,
           "{\"type\":\"object\",\"properties\":{\"rules\":{\"type\":\"array\"},"
           "\"expectedRevision\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"rules\":{},\"revision\":{},\"total\":{}},"
           "\"required\":[\"rules\",\"revision\",\"total\"]}"),
    METHOD(createCharacter, "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"cardId\":{},\"name\":{}},\"required\":["
           "\"cardId\",\"name\"]}"),
    METHOD(listStories, "{\"type\":\"object\",\"properties\":{\"cardId\":{\"type\":\"string\"}}}",
           "{\"type\":\"array\"}"),
    METHOD(ensureGreeting,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"index\":{},\"total\":{}},\"required\":["
           "\"index\",\"total\"]}"),
    METHOD(renderOutputText,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},\"text\":{"
           "\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"text\":{},\"depth\":{},\"failures\":{}},"
           "\"required\":[\"text\",\"depth\",\"failures\"]}"),
    METHOD(getFloorUserMessage,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},\"turn\":{"
           "\"type\":\"integer\"}}}",
           "{\"type\":\"object\",\"properties\":{\"turn\":{},\"text\":{}},\"required\":[\"turn\","
           "\"text\"]}"),
    METHOD(getFloorAssistantMessage,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},\"turn\":{"
           "\"type\":\"integer\"}}}",
           "{\"type\":\"object\",\"properties\":{\"turn\":{},\"text\":{}},\"required\":[\"turn\","
           "\"text\"]}"),
    METHOD(getSessionBinding,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"binding\":{},\"canSwipeGreeting\":{},"
           "\"conversationStarted\":{}},\"required\":[\"binding\",\"canSwipeGreeting\","
           "\"conversationStarted\"]}"),
    METHOD(setSessionBinding,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},\"cardId\":{"
           "\"type\":\"string\"},\"presetId\":{\"type\":\"string\"},\"personaId\":{\"type\":"
           "\"string\"},\"greetingIndex\":{\"type\":\"integer\"}}}",
           "{\"type\":\"object\"}"),
    METHOD(clearSessionBinding,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{},\"cleared\":{}},\"required\":["
           "\"sessionId\",\"cleared\"]}"),
    METHOD(getGreetingSwipe,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"index\":{},\"total\":{},\"text\":{}},"
           "\"required\":[\"index\",\"total\",\"text\"]}"),
    METHOD(swipeGreeting,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},\"index\":{"
           "\"type\":\"integer\"}}}",
           "{\"type\":\"object\",\"properties\":{\"index\":{},\"total\":{},\"text\":{}},"
           "\"required\":[\"index\",\"total\",\"text\"]}"),
    METHOD(frameGreeting,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"html\":{}},\"required\":[\"html\"]}"),
    METHOD(getFloorSiblings,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"swipe\":{}},\"required\":[\"swipe\"]}"),
    METHOD(regenerate,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},\"turn\":{"
           "\"type\":\"integer\"},\"generationType\":{\"type\":\"string\",\"enum\":["
           "\"regenerate\",\"swipe\"]}}}",
           "{\"type\":\"object\",\"properties\":{\"childSessionId\":{},\"title\":{},\"turn\":{}},"
           "\"required\":[\"childSessionId\",\"title\",\"turn\"]}"),
    METHOD(rollbackToFloor,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},\"turn\":{"
           "\"type\":\"integer\"}}}",
           "{\"type\":\"object\",\"properties\":{\"childSessionId\":{},\"title\":{},\"turn\":{}},"
           "\"required\":[\"childSessionId\",\"title\",\"turn\"]}"),
    METHOD(editUserMessage,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},\"turn\":{"
           "\"type\":\"integer\"},\"text\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"childSessionId\":{},\"title\":{},\"turn\":{}},"
           "\"required\":[\"childSessionId\",\"title\",\"turn\"]}"),
    METHOD(editAssistantMessage,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},\"turn\":{"
           "\"type\":\"integer\"},\"text\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"childSessionId\":{},\"title\":{},\"turn\":{}},"
           "\"required\":[\"childSessionId\",\"title\",\"turn\"]}"),
    METHOD(continueFloor,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{},\"resend\":{}},\"required\":["
           "\"sessionId\",\"resend\"]}"),
    METHOD(listFloors, "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"}}}",
           "{\"type\":\"array\"}"),
    METHOD(getMemories,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"active\":{},\"archived\":{},\"compressPending\":"
           "{}},\"required\":[\"active\",\"archived\",\"compressPending\"]}"),
    METHOD(saveMemory,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},\"id\":{"
           "\"type\":\"string\"},\"body\":{\"type\":\"string\"},\"tags\":{\"type\":\"array\"},"
           "\"keys\":{\"type\":\"array\"}}}",
           "{\"type\":\"object\"}"),
    METHOD(deleteMemory,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},\"id\":{"
           "\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"id\":{},\"deleted\":{}},\"required\":[\"id\","
           "\"deleted\"]}"),
    METHOD(compressMemories,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"scheduled\":{}},\"required\":[\"scheduled\"]}"),
    METHOD(getWorldDeltas,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},\"all\":{"
           "\"type\":\"boolean\"}}}",
           "{\"type\":\"array\"}"),
    METHOD(addWorldDelta,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},\"type\":{"
           "\"type\":\"string\"},\"content\":{\"type\":\"string\"},\"ref\":{\"type\":\"string\"},"
           "\"keys\":{\"type\":\"array\"},\"order\":{\"type\":\"number\"},\"expiresAt\":{\"type\":"
           "\"string\"}}}",
           "{\"type\":\"object\"}"),
    METHOD(revokeWorldDelta,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},\"id\":{"
           "\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"id\":{},\"revoked\":{}},\"required\":[\"id\","
           "\"revoked\"]}"),
    METHOD(getJournal, "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"value\":{},\"revision\":{}},\"required\":["
           "\"value\",\"revision\"]}"),
    METHOD(saveJournal,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},\"text\":{"
           "\"type\":\"string\"},\"expectedRevision\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"saved\":{},\"revision\":{}},\"required\":["
           "\"saved\",\"revision\"]}"),
    METHOD(getChatLorebook,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"value\":{},\"revision\":{}},\"required\":["
           "\"value\",\"revision\"]}"),
    METHOD(saveChatLorebook,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},\"book\":{"
           "\"type\":\"object\"},\"expectedRevision\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"saved\":{},\"revision\":{}},\"required\":["
           "\"saved\",\"revision\"]}"),
    METHOD(getWorldInfoSettings,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"defaults\":{},\"profile\":{},\"story\":{},"
           "\"effective\":{},\"revision\":{}},\"required\":[\"defaults\",\"profile\",\"story\","
           "\"effective\",\"revision\"]}"),
    METHOD(saveStoryWorldInfoSettings,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},"
           "\"settings\":{\"type\":\"object\"},\"expectedRevision\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"saved\":{},\"revision\":{},\"effective\":{}},"
           "\"required\":[\"saved\",\"revision\",\"effective\"]}"),
    METHOD(previewPrompt,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"},\"text\":{"
           "\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"standing\":{},\"engineTurn\":{},\"turnContext\":"
           "{},\"sampling\":{},\"note\":{}},\"required\":[\"standing\",\"engineTurn\","
           "\"turnContext\",\"sampling\",\"note\"]}"),
    METHOD(getTriggerLog,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"}}}",
           "{\"type\":\"array\"}"),
    METHOD(getSettings, "{\"type\":\"object\",\"properties\":{}}", "{\"type\":\"object\"}"),
    METHOD(updateSettings, "{\"type\":\"object\",\"properties\":{\"patch\":{\"type\":\"object\"}}}",
           "{\"type\":\"object\"}"),
    METHOD(impersonate,
           "{\"type\":\"object\",\"properties\":{\"sessionId\":{\"type\":\"string\"}}}",
           "{\"type\":\"object\",\"properties\":{\"text\":{}},\"required\":[\"text\"]}"),

    /* ---- the seven model tools (liketavern §9) ---- */
    {.name = "memory_search",
     .description = "Search this story's memories (BM25 with time decay). Use only when a needed "
                    "fact may have "
                    "been forgotten. Args: query, topK (default from settings, max 20).",
     .args_schema =
         "{\"type\":\"object\",\"properties\":{\"query\":{\"type\":\"string\"},\"topK\":{\"type\":"
         "\"integer\"}},\"required\":[\"query\"]}",
     .result_schema = TOOL_RESULT,
     .handler = cdsh__tavern_op_memory_search,
     .surfaces = CDSH_OP_TOOL,
     .flags = CDSH_OP_READ,
     .present_result = present_memory_hits},
    {.name = "memory_write",
     .description =
         "Save a lasting fact of this story as a memory (checked against similar memories first; "
         "on similar-found use tavern_memory_update). Args: body (<= 200 characters), tags, keys.",
     .args_schema =
         "{\"type\":\"object\",\"properties\":{\"body\":{\"type\":\"string\"},\"tags\":{\"type\":"
         "\"array\",\"items\":{\"type\":\"string\"}},\"keys\":{\"type\":\"array\",\"items\":{"
         "\"type\":"
         "\"string\"}}},\"required\":[\"body\"]}",
     .result_schema = TOOL_RESULT,
     .handler = cdsh__tavern_op_memory_write,
     .surfaces = CDSH_OP_TOOL},
    {.name = "memory_update",
     .description = "Update a memory by id: new body and/or tags/keys merged in.",
     .args_schema =
         "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"},\"body\":{\"type\":"
         "\"string\"},\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"keys\":{"
         "\"type\":"
         "\"array\",\"items\":{\"type\":\"string\"}}},\"required\":[\"id\"]}",
     .result_schema = TOOL_RESULT,
     .handler = cdsh__tavern_op_memory_update,
     .surfaces = CDSH_OP_TOOL},
    {.name = "lore_read",
     .description =
         "Read lorebook entries bound to this story: no args = catalog; uid = one entry; query = "
         "ranked matches. source: global, character, chat, delta.",
     .args_schema =
         "{\"type\":\"object\",\"properties\":{\"uid\":{\"type\":\"string\"},\"query\":{\"type\":"
         "\"string\"},\"source\":{\"type\":\"string\"},\"topK\":{\"type\":\"integer\"}}}",
     .result_schema = TOOL_RESULT,
     .handler = cdsh__tavern_op_lore_read,
     .surfaces = CDSH_OP_TOOL,
     .flags = CDSH_OP_READ},
    {.name = "worldstate_update",
     .description = "Record a change of the world state: type add/update/invalidate, content, ref "
                    "(required for "
                    "update/invalidate), keys, expiresAt (ISO date in the future).",
     .args_schema =
         "{\"type\":\"object\",\"properties\":{\"type\":{\"type\":\"string\",\"enum\":[\"add\","
         "\"update\",\"invalidate\"]},\"content\":{\"type\":\"string\"},\"ref\":{\"type\":"
         "\"string\"},"
         "\"keys\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"expiresAt\":{\"type\":"
         "\"string\"}},\"required\":[\"type\",\"content\"]}",
     .result_schema = TOOL_RESULT,
     .handler = cdsh__tavern_op_worldstate_update,
     .surfaces = CDSH_OP_TOOL},
    {.name = "asset_list",
     .description =
         "List the readable story and card assets, the memory count and the preset catalog.",
     .args_schema = "{\"type\":\"object\",\"properties\":{}}",
     .result_schema = TOOL_RESULT,
     .handler = cdsh__tavern_op_asset_list,
     .surfaces = CDSH_OP_TOOL,
     .flags = CDSH_OP_READ},
    {.name = "asset_read",
     .description = "Read one readable asset by path, or the preset catalog / one preset entry.",
     .args_schema =
         "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"preset\":{\"type\":"
         "\"string\"},\"presetIdentifier\":{\"type\":\"string\"}}}",
     .result_schema = TOOL_RESULT,
     .handler = cdsh__tavern_op_asset_read,
     .surfaces = CDSH_OP_TOOL,
     .flags = CDSH_OP_READ},
};

/* Method failures carry kebab-case codes; tools run in the agent's open turn
 * and defer their same-turn write notice into the model's context. */
static int invoke(void *ud, const cdsh_op_call *call, json_t **value, cdsh_error *err)
{
    if (call->surface != CDSH_OP_TOOL)
        return cdsh__tavern_kebab(call->op->handler(ud, call, value, err), err);
    char *notice = NULL;
    int rc = cdsh__tavern_tool_run(ud, call, value, &notice, err);
    if (rc >= 0 && notice && call->exec)
        cdsh_dispatch_defer_context(call->exec, notice);
    free(notice);
    return rc;
}

/* Tool results reach the model as pretty JSON (budgets are counted on it). */
static json_t *render(void *ud, const json_t *args, const json_t *value, cdsh_error *err)
{
    (void)ud, (void)args, (void)err;
    char *text = json_dumps(value, JSON_INDENT(2));
    json_t *out = json_pack("[{s:s,s:s}]", "type", "text", "text", text ? text : "null");
    free(text);
    return out;
}

const cdsh_ops_table cdsh__tavern_ops_table = {
    .plugin = CDSH_TAVERN_PLUGIN,
    .ops = ROWS,
    .n_ops = sizeof ROWS / sizeof *ROWS,
    .invoke = invoke,
    .tool_prefix = "tavern_",
    .tool_error = "TavernError",
    .render = render,
    .rpc_channel = CDSH_TAVERN_RPC_CHANNEL,
    .unknown_code = "unknown-method",
    .unknown_format = "no tavern method \"%s\"",
};
