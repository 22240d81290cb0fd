/* model_config.h — where the model lives and how to reach it: base URL, API
 * key, model name and the client's timeouts/retry limits, resolved from an
 * explicit per-session layer, a per-profile layer, the environment and the
 * DeepSeek defaults (in that order). It does no I/O beyond getenv. */
#ifndef CDSH_AGENT_MODEL_CONFIG_H
#define CDSH_AGENT_MODEL_CONFIG_H

#include <stdbool.h>

#include "base/err.h"

#define CDSH_MODEL_DEFAULT_BASE_URL "https://api.deepseek.com"
#define CDSH_MODEL_DEFAULT_MODEL "deepseek-chat"

/* One configuration layer. Strings are owned (NULL = not set here); a
 * number 0 means "not set here" (so "no retries" is max_retries = -1). Fill
 * a layer with cdsh_model_config_set_* or directly with malloc'd strings. */
typedef struct cdsh_model_config {
    char *base_url; /* e.g. "https://api.deepseek.com" or "http://127.0.0.1:8080/v1" */
    char *api_key;
    char *model;
    int connect_timeout_ms; /* TCP+TLS connect; default 10000 */
    int idle_timeout_ms;    /* no byte received for this long => error; default 60000 */
    int max_retries;        /* extra attempts after the first; default 3; -1 = none */
    int retry_base_ms;      /* first backoff step; default 500 */
    int retry_max_ms;       /* cap on one wait, Retry-After included; default 20000 */
    int max_reply_bytes;     /* one reply's body, all of it; more => REPLY_TOO_LARGE; 8 MiB */
    int max_tool_calls;      /* tool calls in one reply; more => TOO_MANY_TOOL_CALLS; 64 */
} cdsh_model_config;

/* Zeroes a layer ("nothing set"). */
void cdsh_model_config_init(cdsh_model_config *cfg);
/* Frees the strings and zeroes the layer. NULL-safe. */
void cdsh_model_config_deinit(cdsh_model_config *cfg);
/* Deep copy of src into dst (dst is overwritten, not deinit'ed first). */
int cdsh_model_config_copy(cdsh_model_config *dst, const cdsh_model_config *src);

/* Replace one string field with a copy of value (NULL clears it). */
int cdsh_model_config_set_base_url(cdsh_model_config *cfg, const char *value);
/* keep-public: the pair of set_base_url; the model-client tests layer keys with it. */
int cdsh_model_config_set_api_key(cdsh_model_config *cfg, const char *value);
int cdsh_model_config_set_model(cdsh_model_config *cfg, const char *value);

/* Resolves the effective configuration into out (initialised here; the
 * caller deinits it). Each field comes from the first layer that sets it:
 * session, then profile (either may be NULL), then the environment, then the
 * defaults:
 *   base_url  CDSH_BASE_URL, else https://api.deepseek.com
 *   model     CDSH_MODEL, else deepseek-chat
 *   api_key   CDSH_API_KEY; else DEEPSEEK_API_KEY, but only when the resolved
 *             base URL's host is api.deepseek.com (a DeepSeek key is never
 *             sent to another provider).
 * Empty strings count as unset. A base URL must be http:// or https:// with a
 * host (CDSH_EINVAL, "INVALID_CONFIG"). No key is needed when the host is a
 * loopback address (127.0.0.0/8, ::1, localhost) — local servers such as
 * llama.cpp or Ollama usually take none, and then no Authorization header is
 * sent; any other host without a key is CDSH_EPERM, "MISSING_CREDENTIAL".
 * Thread-safe as long as nobody calls setenv concurrently. */
int cdsh_model_config_resolve(const cdsh_model_config *session, const cdsh_model_config *profile,
                              cdsh_model_config *out, cdsh_error *err);

/* True when url's host is a loopback address or "localhost". */
bool cdsh_model_config_is_local(const char *url);

#endif
