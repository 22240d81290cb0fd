/* model_env.h — the scripted fake model (support/fake_model.h) as the
 * process's model endpoint: CDSH_BASE_URL and CDSH_MODEL point at it while
 * it runs, as front ends and the agent loop read them. */
#ifndef CDSH_TEST_MODEL_ENV_H
#define CDSH_TEST_MODEL_ENV_H

#include "support/fake_model.h"

/* Starts the fake with `script` and sets CDSH_BASE_URL and CDSH_MODEL=fake. */
void cdsh_test_model_env_start(cdsh_test_fake_model *f, const char *script);

/* Stops it (asserting a clean exit) and unsets CDSH_BASE_URL. */
void cdsh_test_model_env_stop(cdsh_test_fake_model *f);

/* The bodies of the recorded requests, in order (owned array). */
json_t *cdsh_test_model_env_bodies(const cdsh_test_fake_model *f);

#endif
