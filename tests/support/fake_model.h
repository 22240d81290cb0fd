/* fake_model.h — starts the scripted fake model endpoint (tests/peers/fake_model.c)
 * as a child for one test, and reads back the requests it recorded. The child
 * exits when its stdin closes, so a failed test never leaks it. */
#ifndef CDSH_TEST_FAKE_MODEL_H
#define CDSH_TEST_FAKE_MODEL_H

#include <jansson.h>
#include <stddef.h>

typedef struct cdsh_process cdsh_process;

typedef struct cdsh_test_fake_model {
    cdsh_process *proc;
    char url[128];    /* base URL to give the model client, e.g. http://127.0.0.1:PORT */
    char dir[64];     /* temporary directory holding the script and the recording */
    char script[128]; /* script path */
    char record[128]; /* JSON-lines file of the requests received */
} cdsh_test_fake_model;

/* Writes `script` (see docs/fake-model.md) to a temp file and starts the fake
 * with it; extra_args is a NULL-terminated list appended to its argv (may be
 * NULL). Asserts on failure. */
void cdsh_test_fake_model_start(cdsh_test_fake_model *f, const char *script,
                                const char *const *extra_args);

/* Closes the fake's stdin, waits for a clean exit (asserted) and removes its files. */
void cdsh_test_fake_model_stop(cdsh_test_fake_model *f);

/* The recorded request bodies, in order (owned array). */
json_t *cdsh_test_fake_model_requests(const cdsh_test_fake_model *f);

/* Number of requests recorded so far. */
size_t cdsh_test_fake_model_count(const cdsh_test_fake_model *f);

#endif
