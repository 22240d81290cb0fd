/* toolresult.c — tool results: constructors, reference counting, the §9
 * JSON projection. The pipeline that fills and freezes them is dispatch.c. */
#include "host/toolresult.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/toolresult_priv.h"

typedef struct result_box {
    cdsh_toolresult pub;
    struct cdsh__toolresult_priv priv;
} result_box;

char *cdsh__vformat_dup(const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *out = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (out)
        vsnprintf(out, (size_t)n + 1, fmt, again);
    va_end(again);
    return out;
}

cdsh_toolresult *cdsh__toolresult_alloc(void)
{
    result_box *box = calloc(1, sizeof *box);
    if (!box)
        return NULL;
    atomic_init(&box->priv.refs, 1);
    box->pub.priv = &box->priv;
    return &box->pub;
}

json_t *cdsh_toolresult_text_content(const char *text)
{
    json_t *block = json_pack("{s:s, s:s}", "type", "text", "text", text ? text : "");
    json_t *arr = block ? json_array() : NULL;
    if (!arr || json_array_append_new(arr, block) != 0) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

cdsh_toolresult *cdsh_toolresult_new_value_steal(json_t *value)
{
    cdsh_toolresult *res = cdsh__toolresult_alloc();
    if (!res) {
        json_decref(value);
        return NULL;
    }
    res->value = value ? value : json_null();
    return res;
}

cdsh_toolresult *cdsh_toolresult_new_error(const char *name, const char *code, const char *message)
{
    if (!message)
        message = "tool failed";
    cdsh_toolresult *res = cdsh__toolresult_alloc();
    if (!res)
        return NULL;
    res->is_error = true;
    res->error_message = strdup(message);
    size_t n = strlen(message) + sizeof "Error: ";
    char *text = malloc(n);
    if (text)
        snprintf(text, n, "Error: %s", message);
    res->content = text ? cdsh_toolresult_text_content(text) : NULL;
    free(text);
    if (name && code) {
        res->error_name = strdup(name);
        res->error_code = strdup(code);
    }
    if (!res->error_message || !res->content ||
        (name && code && (!res->error_name || !res->error_code))) {
        cdsh_toolresult_free(res);
        return NULL;
    }
    return res;
}

cdsh_toolresult *cdsh_toolresult_new_errorf(const char *name, const char *code, const char *fmt,
                                            ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = cdsh__vformat_dup(fmt, ap);
    va_end(ap);
    if (!msg)
        return NULL;
    cdsh_toolresult *res = cdsh_toolresult_new_error(name, code, msg);
    free(msg);
    return res;
}

cdsh_toolresult *cdsh_toolresult_ref(cdsh_toolresult *res)
{
    if (res)
        atomic_fetch_add(&res->priv->refs, 1);
    return res;
}

void cdsh_toolresult_free(cdsh_toolresult *res)
{
    if (!res || atomic_fetch_sub(&res->priv->refs, 1) != 1)
        return;
    json_decref(res->value);
    json_decref(res->content);
    json_decref(res->meta);
    json_decref(res->additional_contexts);
    free(res->error_message);
    free(res->error_name);
    free(res->error_code);
    free((result_box *)res);
}

bool cdsh_toolresult_is_frozen(const cdsh_toolresult *res)
{
    return res && res->priv->frozen;
}

json_t *cdsh_toolresult_to_json(const cdsh_toolresult *res)
{
    if (!res)
        return NULL;
    json_t *out = json_object();
    if (!out)
        return NULL;
    int bad = json_object_set_new(out, "isError", json_boolean(res->is_error));
    if (res->is_error) {
        json_t *error = json_pack("{s:s}", "message", res->error_message ? res->error_message : "");
        if (error && res->error_name && res->error_code)
            bad |= json_object_set_new(
                error, "info",
                json_pack("{s:s, s:s}", "name", res->error_name, "code", res->error_code));
        bad |= json_object_set_new(out, "error", error);
    } else {
        bad |= json_object_set(out, "value", res->value ? res->value : json_null());
    }
    bad |= res->content ? json_object_set(out, "content", res->content)
                        : json_object_set_new(out, "content", json_array());
    if (res->meta)
        bad |= json_object_set(out, "meta", res->meta);
    if (res->additional_contexts && json_array_size(res->additional_contexts))
        bad |= json_object_set(out, "additionalContexts", res->additional_contexts);
    if (!res->is_error && res->concludes_turn)
        bad |= json_object_set_new(out, "concludesTurn", json_true());
    if (bad) {
        json_decref(out);
        return NULL;
    }
    return out;
}

char *cdsh_toolresult_text_dup(const cdsh_toolresult *res)
{
    size_t len = 0;
    size_t idx;
    json_t *block;
    if (res && res->content) {
        json_array_foreach(res->content, idx, block) {
            const char *text = json_string_value(json_object_get(block, "text"));
            if (text && json_is_string(json_object_get(block, "type")) &&
                strcmp(json_string_value(json_object_get(block, "type")), "text") == 0)
                len += strlen(text) + 1;
        }
    }
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    size_t at = 0;
    if (res && res->content) {
        json_array_foreach(res->content, idx, block) {
            const char *type = json_string_value(json_object_get(block, "type"));
            const char *text = json_string_value(json_object_get(block, "text"));
            if (!type || !text || strcmp(type, "text") != 0)
                continue;
            if (at)
                out[at++] = '\n';
            size_t n = strlen(text);
            memcpy(out + at, text, n);
            at += n;
        }
    }
    out[at] = '\0';
    return out;
}
