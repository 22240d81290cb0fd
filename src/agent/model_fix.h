/* model_fix.h — what a person can do about a model failure, by the model
 * client's error code (model_client.h), in English or Chinese: one sentence
 * for the terminal (cdsh chat/run, xiangqi's play) beside the cause (HTTP
 * status and the endpoint's message). The web page has the same sentences in
 * its dictionaries (web/i18n.js, "fix.<CODE>"). */
#ifndef CDSH_AGENT_MODEL_FIX_H
#define CDSH_AGENT_MODEL_FIX_H

#include <stdbool.h>

/* The sentence for code in lang ("zh", anything else is English), or NULL
 * when code is not a model failure (NULL-safe). Static text. */
const char *cdsh_model_fix_get(const char *code, const char *lang);

#endif
