/* model_config.c — layering of model endpoint settings (session > profile >
 * environment > DeepSeek defaults) and the rule for when a key is required.
 * Reading profiles or session files is the callers' job. */
#include "agent/model_config.h"

#include <arpa/inet.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum {
    DEFAULT_CONNECT_TIMEOUT_MS = 10000,
    DEFAULT_IDLE_TIMEOUT_MS = 60000,
    DEFAULT_MAX_RETRIES = 3,
    DEFAULT_RETRY_BASE_MS = 500,
    DEFAULT_RETRY_MAX_MS = 20000,
};

void cdsh_model_config_init(cdsh_model_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
}

void cdsh_model_config_deinit(cdsh_model_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->base_url);
    if (cfg->api_key) /* Do not leave the key lying in freed memory. */
        explicit_bzero(cfg->api_key, strlen(cfg->api_key));
    free(cfg->api_key);
    free(cfg->model);
    memset(cfg, 0, sizeof *cfg);
}

static int set_str(char **field, const char *value)
{
    char *copy = NULL;
    if (value && !(copy = strdup(value)))
        return CDSH_ENOMEM;
    if (*field)
        explicit_bzero(*field, strlen(*field));
    free(*field);
    *field = copy;
    return 0;
}

int cdsh_model_config_set_base_url(cdsh_model_config *cfg, const char *value)
{
    return set_str(&cfg->base_url, value);
}

int cdsh_model_config_set_api_key(cdsh_model_config *cfg, const char *value)
{
    return set_str(&cfg->api_key, value);
}

int cdsh_model_config_set_model(cdsh_model_config *cfg, const char *value)
{
    return set_str(&cfg->model, value);
}

int cdsh_model_config_copy(cdsh_model_config *dst, const cdsh_model_config *src)
{
    *dst = *src;
    dst->base_url = dst->api_key = dst->model = NULL;
    if (set_str(&dst->base_url, src->base_url) || set_str(&dst->api_key, src->api_key) ||
        set_str(&dst->model, src->model)) {
        cdsh_model_config_deinit(dst);
        return CDSH_ENOMEM;
    }
    return 0;
}

static const char *nonempty(const char *s)
{
    return s && *s ? s : NULL;
}

static const char *pick_str(const char *session, const char *profile, const char *env)
{
    if (nonempty(session))
        return session;
    if (nonempty(profile))
        return profile;
    return nonempty(env);
}

static int pick_int(int session, int profile, int dflt)
{
    return session ? session : profile ? profile : dflt;
}

/* Copies the host part of an http(s) URL into host (lower-case, brackets of
 * an IPv6 literal removed). Returns false when url is not http(s) or has no
 * host. */
static bool url_host(const char *url, char *host, size_t cap)
{
    const char *p;
    if (strncasecmp(url, "http://", 7) == 0)
        p = url + 7;
    else if (strncasecmp(url, "https://", 8) == 0)
        p = url + 8;
    else
        return false;
    const char *at = NULL;
    for (const char *q = p; *q && *q != '/' && *q != '?' && *q != '#'; q++)
        if (*q == '@')
            at = q;
    if (at)
        p = at + 1;
    size_t n = 0;
    if (*p == '[') {
        p++;
        while (p[n] && p[n] != ']')
            n++;
        if (p[n] != ']')
            return false;
    } else {
        while (p[n] && p[n] != ':' && p[n] != '/' && p[n] != '?' && p[n] != '#')
            n++;
    }
    if (n == 0 || n >= cap)
        return false;
    for (size_t i = 0; i < n; i++)
        host[i] = (char)((p[i] >= 'A' && p[i] <= 'Z') ? p[i] + 32 : p[i]);
    host[n] = '\0';
    return true;
}

bool cdsh_model_config_is_local(const char *url)
{
    char host[256];
    if (!url || !url_host(url, host, sizeof host))
        return false;
    if (strcmp(host, "localhost") == 0 || strcmp(host, "::1") == 0)
        return true;
    /* 127.0.0.0/8 as a dotted literal only: "127.0.0.1.example.com" is a name. */
    struct in_addr a;
    return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

static bool is_deepseek(const char *url)
{
    char host[256];
    return url_host(url, host, sizeof host) && strcmp(host, "api.deepseek.com") == 0;
}

int cdsh_model_config_resolve(const cdsh_model_config *session, const cdsh_model_config *profile,
                              cdsh_model_config *out, cdsh_error *err)
{
    cdsh_model_config_init(out);
    const char *base = pick_str(session ? session->base_url : NULL,
                                profile ? profile->base_url : NULL, getenv("CDSH_BASE_URL"));
    if (!base)
        base = CDSH_MODEL_DEFAULT_BASE_URL;
    const char *model = pick_str(session ? session->model : NULL, profile ? profile->model : NULL,
                                 getenv("CDSH_MODEL"));
    if (!model)
        model = CDSH_MODEL_DEFAULT_MODEL;
    const char *key = pick_str(session ? session->api_key : NULL, profile ? profile->api_key : NULL,
                               getenv("CDSH_API_KEY"));
    if (!key && is_deepseek(base))
        key = nonempty(getenv("DEEPSEEK_API_KEY"));

    char host[256];
    if (!url_host(base, host, sizeof host))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_CONFIG",
                              "model base URL \"%s\" is not an http:// or https:// URL with a host",
                              base);
    if (!key && !cdsh_model_config_is_local(base))
        return cdsh_error_set(err, CDSH_EPERM, "MISSING_CREDENTIAL",
                              "no API key for %s: set DEEPSEEK_API_KEY (DeepSeek) or CDSH_API_KEY, "
                              "or an api key in the profile",
                              host);

    if (set_str(&out->base_url, base) || set_str(&out->model, model) ||
        set_str(&out->api_key, key)) {
        cdsh_model_config_deinit(out);
        return cdsh_error_set(err, CDSH_ENOMEM, "ENOMEM", "out of memory");
    }
#define PICK(field, dflt) pick_int(session ? session->field : 0, profile ? profile->field : 0, dflt)
    out->connect_timeout_ms = PICK(connect_timeout_ms, DEFAULT_CONNECT_TIMEOUT_MS);
    out->idle_timeout_ms = PICK(idle_timeout_ms, DEFAULT_IDLE_TIMEOUT_MS);
    out->max_retries = PICK(max_retries, DEFAULT_MAX_RETRIES);
    if (out->max_retries < 0)
        out->max_retries = 0;
    out->retry_base_ms = PICK(retry_base_ms, DEFAULT_RETRY_BASE_MS);
    out->retry_max_ms = PICK(retry_max_ms, DEFAULT_RETRY_MAX_MS);
    out->max_reply_bytes = PICK(max_reply_bytes, 0); /* 0: the client's default */
    out->max_tool_calls = PICK(max_tool_calls, 0);
#undef PICK
    return 0;
}
