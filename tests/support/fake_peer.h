/* fake_peer.h — starting the scripted fake model (tests/peers/fake_model)
 * for tests that run turns: script in a temp dir, the ready line parsed,
 * requests recorded, CDSH_BASE_URL/CDSH_MODEL pointed at it. Unlike
 * testkit.c this uses base/process. */
#ifndef CDSH_TEST_FAKE_PEER_H
#define CDSH_TEST_FAKE_PEER_H

#include <jansson.h>

typedef struct cdsh_process cdsh_process;

typedef struct cdsh_test_fake {
    cdsh_process *proc; /* stdin is a pipe: closing it makes the fake exit */
    char url[128];
    char dir[64];
    char record[128];
} cdsh_test_fake;

/* Starts the fake with `script` (JSON text) and sets CDSH_BASE_URL to it and
 * CDSH_MODEL to "fake". Asserts on failure. */
void cdsh_test_fake_start(cdsh_test_fake *f, const char *script);

/* Stops it, removes its files and unsets CDSH_BASE_URL. */
void cdsh_test_fake_stop(cdsh_test_fake *f);

/* The recorded request bodies in order (owned array). */
json_t *cdsh_test_fake_bodies(cdsh_test_fake *f);

#endif
