/* mcp.c — MCP protocol core: revisions, message classification, tool and
 * result checks, DSH's public tool names and child environment, the text
 * projection of content blocks. No I/O and no threads here. */
#include "proto/mcp/mcp.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env_policy.h"
#include "base/hash.h"
#include "base/json.h"
#include "base/strbuf.h"
#include "base/utf8.h"

extern char **environ;

const char *const cdsh_mcp_legacy_versions[] = {
    CDSH_MCP_V2024_11_05, CDSH_MCP_V2025_03_26, CDSH_MCP_V2025_06_18, CDSH_MCP_V2025_11_25, NULL,
};

bool cdsh_mcp_version_is_modern(const char *version)
{
    return version && strcmp(version, CDSH_MCP_V2026_07_28) == 0;
}

static bool legacy_known(const char *version)
{
    if (!version)
        return false;
    for (size_t i = 0; cdsh_mcp_legacy_versions[i]; i++)
        if (strcmp(cdsh_mcp_legacy_versions[i], version) == 0)
            return true;
    return false;
}

bool cdsh_mcp_version_known(const char *version)
{
    return legacy_known(version) || cdsh_mcp_version_is_modern(version);
}

const char *cdsh_mcp_negotiate(const char *requested)
{
    for (size_t i = 0; requested && cdsh_mcp_legacy_versions[i]; i++)
        if (strcmp(cdsh_mcp_legacy_versions[i], requested) == 0)
            return cdsh_mcp_legacy_versions[i];
    return CDSH_MCP_LATEST_LEGACY;
}

/* ---- messages -------------------------------------------------------------- */

static int bad_msg(cdsh_error *err, const char *what)
{
    return cdsh_error_set(err, CDSH_EINVAL, "INVALID_MESSAGE", "invalid JSON-RPC message: %s",
                          what);
}

static bool id_ok(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id);
}

int cdsh_mcp_msg_classify(const json_t *msg, cdsh_mcp_msg *out, cdsh_error *err)
{
    if (!out)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT",
                              "cdsh_mcp_msg_classify: out is NULL");
    memset(out, 0, sizeof *out);
    if (json_is_array(msg))
        return cdsh_error_set(err, CDSH_EUNSUPPORTED, "BATCH",
                              "JSON-RPC batches are not supported (removed in MCP 2025-06-18)");
    if (!json_is_object(msg))
        return bad_msg(err, "not a JSON object");
    const char *v = json_string_value(json_object_get(msg, "jsonrpc"));
    if (!v || strcmp(v, "2.0") != 0)
        return bad_msg(err, "\"jsonrpc\" must be \"2.0\"");
    json_t *id = json_object_get(msg, "id");
    json_t *method = json_object_get(msg, "method");
    json_t *params = json_object_get(msg, "params");
    json_t *result = json_object_get(msg, "result");
    json_t *error = json_object_get(msg, "error");
    if (method) {
        if (!json_is_string(method) || json_string_length(method) == 0)
            return bad_msg(err, "\"method\" must be a non-empty string");
        if (result || error)
            return bad_msg(err, "a request cannot carry \"result\" or \"error\"");
        if (params && !json_is_object(params) && !json_is_array(params))
            return bad_msg(err, "\"params\" must be an object or an array");
        if (id && !id_ok(id))
            return bad_msg(err, "\"id\" must be a string or an integer");
        out->kind = id ? CDSH_MCP_MSG_REQUEST : CDSH_MCP_MSG_NOTIFICATION;
        out->id = id;
        out->method = json_string_value(method);
        out->params = params;
        return 0;
    }
    if (!id)
        return bad_msg(err, "neither \"method\" nor \"id\"");
    if ((result != NULL) == (error != NULL))
        return bad_msg(err, "a response needs exactly one of \"result\" and \"error\"");
    if (result) {
        if (!id_ok(id))
            return bad_msg(err, "\"id\" must be a string or an integer");
        out->kind = CDSH_MCP_MSG_RESULT;
        out->id = id;
        out->result = result;
        return 0;
    }
    if (!id_ok(id) && !json_is_null(id))
        return bad_msg(err, "\"id\" must be a string, an integer or null");
    if (!json_is_object(error) || !json_is_integer(json_object_get(error, "code")) ||
        !json_is_string(json_object_get(error, "message")))
        return bad_msg(err,
                       "\"error\" must be an object with an integer code and a string message");
    out->kind = CDSH_MCP_MSG_ERROR;
    out->id = id;
    out->error_code = json_integer_value(json_object_get(error, "code"));
    out->error_message = json_string_value(json_object_get(error, "message"));
    return 0;
}

int cdsh_mcp_msg_parse(const char *text, size_t len, json_t **json, cdsh_mcp_msg *out,
                       cdsh_error *err)
{
    if (!text || !json || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_ARGUMENT",
                              "cdsh_mcp_msg_parse: NULL argument");
    *json = NULL;
    cdsh_error perr = {0};
    json_t *v = cdsh_json_parse(text, len, CDSH_MCP_MAX_MESSAGE, &perr);
    if (!v) {
        if (perr.rc == CDSH_ETOOBIG)
            return cdsh_error_set(err, CDSH_ETOOBIG, "MESSAGE_TOO_BIG", "%s", perr.message);
        return cdsh_error_set(err, CDSH_EINVAL, "PARSE_ERROR", "%s", perr.message);
    }
    int rc = cdsh_mcp_msg_classify(v, out, err);
    if (rc != 0) {
        json_decref(v);
        memset(out, 0, sizeof *out);
        return rc;
    }
    *json = v;
    return 0;
}

/* ---- tools ----------------------------------------------------------------- */

int cdsh_mcp_tool_check(const json_t *tool, cdsh_error *err)
{
    if (!json_is_object(tool))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_TOOL", "a listed tool is not a JSON object");
    const char *name = json_string_value(json_object_get(tool, "name"));
    if (!name || !*name)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_TOOL", "a listed tool has no name");
    size_t n = strlen(name);
    if (n > 128)
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_TOOL",
                              "tool name is %zu bytes long (at most 128)", n);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return cdsh_error_set(err, CDSH_EINVAL, "BAD_TOOL",
                                  "tool name contains a control character");
    if (!json_is_object(json_object_get(tool, "inputSchema")))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_TOOL",
                              "tool \"%.128s\" has no inputSchema object", name);
    json_t *d = json_object_get(tool, "description");
    if (d && !json_is_string(d) && !json_is_null(d))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_TOOL",
                              "tool \"%.128s\" description must be a string", name);
    json_t *o = json_object_get(tool, "outputSchema");
    if (o && !json_is_object(o))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_TOOL",
                              "tool \"%.128s\" outputSchema must be an object", name);
    json_t *a = json_object_get(tool, "annotations");
    if (a && !json_is_object(a) && !json_is_null(a))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_TOOL",
                              "tool \"%.128s\" annotations must be an object", name);
    return 0;
}

bool cdsh_mcp_tool_requires_task(const json_t *tool)
{
    const char *ts =
        json_string_value(json_object_get(json_object_get(tool, "execution"), "taskSupport"));
    return ts && strcmp(ts, "required") == 0;
}

int cdsh_mcp_call_result_check(const json_t *result, bool *legacy, cdsh_error *err)
{
    if (legacy)
        *legacy = false;
    if (!json_is_object(result))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_RESULT", "tools/call result is not an object");
    json_t *ie = json_object_get(result, "isError");
    if (ie && !json_is_boolean(ie))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_RESULT", "isError must be a boolean");
    json_t *content = json_object_get(result, "content");
    if (!content) {
        if (legacy)
            *legacy = true;
        return 0;
    }
    if (!json_is_array(content))
        return cdsh_error_set(err, CDSH_EINVAL, "BAD_RESULT", "content must be an array");
    size_t i;
    json_t *b;
    json_array_foreach(content, i, b) {
        if (!json_is_object(b) || !json_is_string(json_object_get(b, "type")))
            return cdsh_error_set(err, CDSH_EINVAL, "BAD_RESULT",
                                  "content[%zu] is not an object with a string type", i);
    }
    return 0;
}

json_t *cdsh_mcp_text_result_new(const char *text, const json_t *structured, bool is_error)
{
    json_t *r = json_pack("{s:[{s:s,s:s}]}", "content", "type", "text", "text", text ? text : "");
    if (!r)
        return NULL;
    if (structured && json_object_set_new(r, "structuredContent", json_deep_copy(structured))) {
        json_decref(r);
        return NULL;
    }
    if (is_error && json_object_set_new(r, "isError", json_true())) {
        json_decref(r);
        return NULL;
    }
    return r;
}

char *cdsh_mcp_content_text_dup(const json_t *content, const char *tool)
{
    cdsh_strbuf sb;
    cdsh_strbuf_init(&sb);
    size_t i, parts = 0;
    json_t *b;
    if (json_is_array(content)) {
        json_array_foreach(content, i, b) {
            if (parts++)
                cdsh_strbuf_append_char(&sb, '\n');
            const char *type = json_string_value(json_object_get(b, "type"));
            if (!json_is_object(b)) {
                cdsh_strbuf_append_str(&sb, "[MCP content block is not an object]");
            } else if (!type) {
                cdsh_strbuf_append_str(&sb, "[unsupported MCP content type: (none)]");
            } else if (strcmp(type, "text") == 0) {
                cdsh_strbuf_append_str(&sb, json_string_value(json_object_get(b, "text")));
            } else if (strcmp(type, "resource_link") == 0) {
                const char *nm = json_string_value(json_object_get(b, "name"));
                const char *uri = json_string_value(json_object_get(b, "uri"));
                if (nm && uri)
                    cdsh_strbuf_appendf(&sb, "Resource link: %s (%s)", nm, uri);
                else
                    cdsh_strbuf_append_str(&sb, "[resource link is missing its name or URI]");
            } else if (strcmp(type, "image") == 0 || strcmp(type, "audio") == 0) {
                const char *mime = json_string_value(json_object_get(b, "mimeType"));
                cdsh_strbuf_appendf(&sb,
                                    "[%s unavailable: %s; raw %s data remains available to "
                                    "programmatic callers]",
                                    type, mime ? mime : "unknown type", type);
            } else if (strcmp(type, "resource") == 0) {
                json_t *res = json_object_get(b, "resource");
                const char *text = json_string_value(json_object_get(res, "text"));
                const char *uri = json_string_value(json_object_get(res, "uri"));
                if (text)
                    cdsh_strbuf_appendf(&sb, "Resource %s:\n%s", uri ? uri : "(no uri)", text);
                else
                    cdsh_strbuf_appendf(&sb,
                                        "[embedded resource unsupported: %s; raw data remains "
                                        "available to programmatic callers]",
                                        uri ? uri : "(no uri)");
            } else {
                cdsh_strbuf_appendf(&sb, "[unsupported MCP content type: %s]", type);
            }
        }
    }
    if (parts == 0)
        cdsh_strbuf_appendf(&sb, "(%s returned no model-visible content)", tool ? tool : "tool");
    return cdsh_strbuf_take(&sb, NULL);
}

/* ---- DSH names and environment ---------------------------------------------- */

static bool name_char_ok(unsigned char c)
{
    return isalnum(c) || c == '_' || c == '-';
}

/* Appends s with DSH's replacement (one '_' per UTF-16 code unit). Returns
 * true if anything was replaced. Stops appending past `cap` bytes but keeps
 * scanning so the verdict is right. */
static bool append_normalised(char *out, size_t *len, size_t cap, const char *s)
{
    bool changed = false;
    size_t n = strlen(s), i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t units = 1, adv = 1;
        if (c < 0x80) {
            if (name_char_ok(c)) {
                if (*len < cap)
                    out[(*len)++] = (char)c;
                i++;
                continue;
            }
        } else {
            uint32_t cp;
            size_t l;
            if (cdsh_utf8_decode(s + i, n - i, &cp, &l) == 0 && l > 0) {
                adv = l;
                units = cp > 0xFFFF ? 2 : 1;
            }
        }
        changed = true;
        for (size_t u = 0; u < units; u++)
            if (*len < cap)
                out[(*len)++] = '_';
        i += adv;
    }
    return changed;
}

int cdsh_mcp_public_tool_name(const char *server, const char *raw,
                              char out[CDSH_MCP_PUBLIC_NAME_MAX + 1])
{
    if (!server || !raw || !out)
        return CDSH_EINVAL;
    char buf[CDSH_MCP_PUBLIC_NAME_MAX + 8];
    size_t len = 0, cap = sizeof buf - 1;
    bool changed = false;
    memcpy(buf, "mcp__", 5);
    len = 5;
    changed |= append_normalised(buf, &len, cap, server);
    if (len < cap)
        buf[len++] = '_';
    if (len < cap)
        buf[len++] = '_';
    changed |= append_normalised(buf, &len, cap, raw);
    size_t total = 5 + 2 + strlen(server) + strlen(raw); /* lower bound on joined length */
    bool too_long = len > CDSH_MCP_PUBLIC_NAME_MAX || total > CDSH_MCP_PUBLIC_NAME_MAX;
    if (!changed && !too_long) {
        memcpy(out, buf, len);
        out[len] = '\0';
        return 0;
    }
    size_t sl = strlen(server), rl = strlen(raw);
    char *input = malloc(sl + rl + 1);
    if (!input)
        return CDSH_ENOMEM;
    memcpy(input, server, sl);
    input[sl] = '\0';
    memcpy(input + sl + 1, raw, rl);
    char hex[CDSH_SHA256_HEX_LEN + 1];
    int rc = cdsh_hash_sha256_hex(input, sl + rl + 1, hex);
    free(input);
    if (rc != 0)
        return rc;
    size_t keep = len < 51 ? len : 51;
    memcpy(out, buf, keep);
    out[keep] = '_';
    memcpy(out + keep + 1, hex, 12);
    out[keep + 13] = '\0';
    return 0;
}

/* One policy for every child (base/env_policy.h); an entry "NAME=value" is
 * judged by its value too. */
bool cdsh_mcp_env_name_scrubbed(const char *name)
{
    return name && cdsh_env_policy_judge(name) != CDSH_ENV_PASS;
}

void cdsh_mcp_env_free(char **env)
{
    if (!env)
        return;
    for (size_t i = 0; env[i]; i++)
        free(env[i]);
    free(env);
}

/* Index of the entry named like `entry` (up to '='), or -1. */
static long env_find(char **env, size_t n, const char *name, size_t nlen)
{
    for (size_t i = 0; i < n; i++)
        if (strncmp(env[i], name, nlen) == 0 && env[i][nlen] == '=')
            return (long)i;
    return -1;
}

char **cdsh_mcp_child_env_new(const char *const *parent, const json_t *server_env, cdsh_error *err)
{
    if (!parent)
        parent = (const char *const *)environ;
    size_t np = 0;
    while (parent && parent[np])
        np++;
    size_t ns = json_is_object(server_env) ? json_object_size(server_env) : 0;
    char **env = calloc(np + ns + 1, sizeof *env);
    if (!env) {
        cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < np; i++) {
        if (!strchr(parent[i], '=') || cdsh_mcp_env_name_scrubbed(parent[i]))
            continue;
        if (!(env[n++] = strdup(parent[i])))
            goto nomem;
    }
    const char *key;
    json_t *val;
    if (ns) {
        json_object_foreach((json_t *)server_env, key, val) {
            if (!json_is_string(val) || !*key || strchr(key, '=')) {
                cdsh_error_set(err, CDSH_EINVAL, "BAD_ENV",
                               "server env \"%.100s\" must be a string value with a name "
                               "without '='",
                               key);
                cdsh_mcp_env_free(env);
                return NULL;
            }
            size_t kl = strlen(key);
            char *entry = malloc(kl + json_string_length(val) + 2);
            if (!entry)
                goto nomem;
            sprintf(entry, "%s=%s", key, json_string_value(val));
            long at = env_find(env, n, key, kl);
            if (at >= 0) {
                free(env[at]);
                env[at] = entry;
            } else {
                env[n++] = entry;
            }
        }
    }
    return env;
nomem:
    cdsh_mcp_env_free(env);
    cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
    return NULL;
}

json_t *cdsh_mcp_progress_params_new(const json_t *token, double progress, double total,
                                     const char *message)
{
    json_t *p = json_object();
    if (!p)
        return NULL;
    int bad = json_object_set_new(p, "progressToken", token ? json_deep_copy(token) : json_null());
    bad |= json_object_set_new(p, "progress", json_real(progress));
    if (total >= 0)
        bad |= json_object_set_new(p, "total", json_real(total));
    if (message)
        bad |= json_object_set_new(p, "message", json_string(message));
    if (bad) {
        json_decref(p);
        return NULL;
    }
    return p;
}
