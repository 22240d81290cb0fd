/* model_env.c — the fake model as the environment's model endpoint. */
#include "support/model_env.h"

#include <stdlib.h>

void cdsh_test_model_env_start(cdsh_test_fake_model *f, const char *script)
{
    cdsh_test_fake_model_start(f, script, NULL);
    setenv("CDSH_BASE_URL", f->url, 1);
    setenv("CDSH_MODEL", "fake", 1);
}

void cdsh_test_model_env_stop(cdsh_test_fake_model *f)
{
    cdsh_test_fake_model_stop(f);
    unsetenv("CDSH_BASE_URL");
}

json_t *cdsh_test_model_env_bodies(const cdsh_test_fake_model *f)
{
    json_t *recs = cdsh_test_fake_model_requests(f);
    json_t *out = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(recs, i, r)
        json_array_append(out, json_object_get(r, "body"));
    json_decref(recs);
    return out;
}
