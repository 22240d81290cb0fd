/* model_fix.c — the table behind model_fix.h. */
#include "agent/model_fix.h"

#include <string.h>

static const struct {
    const char *code, *en, *zh;
} FIXES[] = {
    {"MISSING_CREDENTIAL",
     "set DEEPSEEK_API_KEY (or CDSH_BASE_URL and CDSH_MODEL for another endpoint), then start again.",
     "请设置 DEEPSEEK_API_KEY（或用 CDSH_BASE_URL 与 CDSH_MODEL 指定其他服务），然后重新启动。"},
    {"INVALID_CREDENTIAL",
     "the endpoint refused the key: check DEEPSEEK_API_KEY / CDSH_API_KEY, then start again.",
     "服务拒绝了密钥：请检查 DEEPSEEK_API_KEY / CDSH_API_KEY，然后重新启动。"},
    {"QUOTA", "the account is out of credit or quota: top it up or use another endpoint.",
     "账户余额或额度已用完：请充值或换用其他服务。"},
    {"RATE_LIMIT", "too many requests: wait a moment and send again.",
     "请求过于频繁：请稍等片刻再发送。"},
    {"CONTEXT_WINDOW_EXCEEDED",
     "the conversation is too long for the model: roll back a few turns, start a branch, or "
     "lower the reply length.",
     "对话超出了模型的上下文长度：请回退几轮、开一个分支，或调低回复长度。"},
    {"TIMEOUT", "the endpoint did not answer in time: check that it is running, then send again.",
     "服务未能及时回答：请确认它在运行，然后重新发送。"},
    {"LLM_STREAM_IDLE_TIMEOUT", "the reply stopped arriving: send again, or check the endpoint.",
     "回复中途停止：请重新发送，或检查服务。"},
    {"TRANSPORT", "the endpoint cannot be reached: check CDSH_BASE_URL and the network.",
     "无法连接到服务：请检查 CDSH_BASE_URL 和网络。"},
    {"SERVER", "the endpoint had an error of its own: send again later.",
     "服务自身出错：请稍后重新发送。"},
    {"INVALID_REQUEST",
     "the endpoint refused the request: check the model name (CDSH_MODEL) and the settings.",
     "服务拒绝了请求：请检查模型名（CDSH_MODEL）和设置。"},
    {"BAD_RESPONSE",
     "the endpoint answered something that is not a chat reply: check CDSH_BASE_URL.",
     "服务返回的不是对话回复：请检查 CDSH_BASE_URL。"},
    {"EMPTY_RESPONSE", "the model sent an empty reply: send again.",
     "模型返回了空回复：请重新发送。"},
    {"REPLY_TOO_LARGE", "the reply was too large: lower the reply length.",
     "回复过大：请调低回复长度。"},
    {"INVALID_CONFIG", "the model settings are invalid: check CDSH_BASE_URL and CDSH_MODEL.",
     "模型设置无效：请检查 CDSH_BASE_URL 与 CDSH_MODEL。"},
};

const char *cdsh_model_fix_get(const char *code, const char *lang)
{
    bool zh = lang && strcmp(lang, "zh") == 0;
    for (size_t i = 0; code && i < sizeof FIXES / sizeof FIXES[0]; i++)
        if (strcmp(FIXES[i].code, code) == 0)
            return zh ? FIXES[i].zh : FIXES[i].en;
    return NULL;
}
