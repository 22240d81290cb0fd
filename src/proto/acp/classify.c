/* classify.c — maps a failed turn's error to a class by the agent's own
 * words first, then by what failed in cdsh. It never rewrites the message. */
#include "proto/acp/classify.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "base/err.h"

static bool has_word(const char *text, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = text; *p; p++) {
        if (strncasecmp(p, needle, n) != 0)
            continue;
        bool left = p == text || !isalnum((unsigned char)p[-1]);
        bool right = !isalnum((unsigned char)p[n]);
        if (left && right)
            return true;
    }
    return false;
}

static bool has_sub(const char *text, const char *needle)
{
    return strcasestr(text, needle) != NULL;
}

static bool any_sub(const char *text, const char *const *needles)
{
    for (; *needles; needles++)
        if (has_sub(text, *needles))
            return true;
    return false;
}

const char *cdsh_acp_classify_error(int rc, const char *err_code, const char *message)
{
    static const char *const funds[] = {"insufficient funds",
                                        "insufficient account funds",
                                        "insufficient_quota",
                                        "insufficient balance",
                                        "insufficient_balance",
                                        "quota exceeded",
                                        "余额不足",
                                        "payment required",
                                        NULL};
    static const char *const rate[] = {"rate limit", "rate_limit", "ratelimit", "too many requests",
                                       NULL};
    static const char *const auth[] = {"unauthor",
                                       "not logged in",
                                       "authentication",
                                       "invalid api key",
                                       "invalid_api_key",
                                       "api key",
                                       NULL};
    const char *m = message ? message : "";
    if (any_sub(m, funds) || has_word(m, "402"))
        return "INSUFFICIENT_FUNDS";
    if (any_sub(m, rate) || has_word(m, "429"))
        return "RATE_LIMITED";
    if (any_sub(m, auth) || has_word(m, "401") || has_word(m, "403") || has_word(m, "-32000"))
        return "UNAUTHORIZED";
    if (rc == CDSH_ETIMEDOUT || has_sub(m, "timed out") || has_sub(m, "timeout"))
        return "TIMEOUT";
    if (rc == CDSH_ECLOSED ||
        (rc == CDSH_EPROTO && err_code && strcmp(err_code, "BAD_RESPONSE") == 0) ||
        has_word(m, "-32700") || has_word(m, "-32600") || has_word(m, "-32602"))
        return "PROTOCOL";
    return "UNKNOWN";
}
