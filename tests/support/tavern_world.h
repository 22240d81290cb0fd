/* tavern_world.h — a host with the tavern plugin (branches on), a session
 * store and an agent in a "role-play" scope, for tests that play tavern turns
 * through the real agent loop; plus RPC, turn and import-and-bind helpers. */
#ifndef CDSH_TEST_TAVERN_WORLD_H
#define CDSH_TEST_TAVERN_WORLD_H

#include <jansson.h>
#include <stddef.h>

#include "agent/agent.h"
#include "agent/session_store.h"
#include "host/host.h"
#include "plugins/tavern/store.h"

/* The SillyTavern V2 sample card (with its embedded lorebook "Eldoria"). */
#define CDSH_TEST_TAVERN_SAMPLE_V2 CDSH_TEST_DATA("tavern-samples/st-card-v2-seraphina.json")

/* Imports the sample card into a store opened by the test (its embedded book
 * imported too) and returns the card id (owned); asserts on failure. For
 * tests below the host: stories, bindings, crash and process tests. */
char *cdsh_test_tavern_import_sample(cdsh_tavern_store *store);

typedef struct cdsh_test_tavern_world {
    cdsh_host *host;
    cdsh_session_store *store;
    cdsh_agent *agent;
    cdsh_scope *scope;
} cdsh_test_tavern_world;

/* Opens everything (asserts); the base prompt is "You are the narrator.". */
void cdsh_test_tavern_world_open(cdsh_test_tavern_world *w);
void cdsh_test_tavern_world_close(cdsh_test_tavern_world *w);

/* Calls /tavern `method` (payload taken) and returns its value (owned);
 * fails the test on an error reply. */
json_t *cdsh_test_tavern_rpc(cdsh_test_tavern_world *w, const char *method, json_t *payload_take);

/* Runs one turn and asserts it ended "done". */
void cdsh_test_tavern_turn(cdsh_test_tavern_world *w, const char *sid, const char *text);

/* Imports the sample card (book choice `book`) and binds a new session titled
 * `title` to it; *card (may be NULL) gets the card id. Returns the session id
 * (owned). */
char *cdsh_test_tavern_bound_session(cdsh_test_tavern_world *w, const char *book, const char *title,
                                     char **card);
/* The same for a card given as file bytes (JSON or PNG). */
char *cdsh_test_tavern_bound_session_bytes(cdsh_test_tavern_world *w, const char *bytes, size_t len,
                                           const char *book, const char *title, char **card);

#endif
