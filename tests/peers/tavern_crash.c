/* tavern_crash.c — peer for the tavern crash test: loops over floor writes
 * (session s-p), write-then-undo floors (session s-u) and branch
 * publication from s-p until it is killed. Expects CDSH_HOME with a card
 * bound to both sessions (the test prepares it) and a seed as argv[1] that
 * picks the sequence of operations. After each completed operation it writes
 * one byte to stdout — 'p' floor committed, 'u' floor undone, 'b' branch
 * published, '.' refused as busy — so the test can kill it after a counted
 * number of operations, whatever the machine's speed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/random.h"
#include "plugins/tavern/binding.h"
#include "plugins/tavern/branch.h"
#include "plugins/tavern/story.h"

static int64_t next_turn(cdsh_tavern_story *s, const char *session)
{
    json_t *floors = NULL;
    int64_t max = 0;
    if (cdsh_tavern_story_floors(s, &floors, NULL) == 0) {
        size_t i;
        json_t *f;
        json_array_foreach(floors, i, f) {
            const char *owner = json_string_value(json_object_get(f, "session"));
            int64_t t = json_integer_value(json_object_get(f, "turn"));
            if (owner && strcmp(owner, session) == 0 && t > max)
                max = t;
        }
    }
    json_decref(floors);
    return max + 1;
}

/* A floor of four logged writes; commit unless told to leave it open. */
static int write_floor(cdsh_tavern_story *s, const char *session, bool commit)
{
    int64_t turn = next_turn(s, session);
    char *floor = cdsh_tavern_floor_name_dup(session, turn);
    int rc = cdsh_tavern_story_floor_begin(s, session, turn, NULL);
    for (int i = 0; i < 4 && rc == 0; i++) {
        char key[96];
        snprintf(key, sizeof key, "k-%s-%d", floor, i);
        json_t *v = json_pack("{s:s,s:i}", "floor", floor, "i", i);
        rc = cdsh_tavern_story_put(s, floor, CDSH_TAVERN_KIND_DOC, key, v, NULL, NULL);
        json_decref(v);
    }
    /* one key rewritten by every floor: a chain of before/after */
    json_t *v = json_pack("{s:s}", "last", floor);
    if (rc == 0)
        rc = cdsh_tavern_story_put(s, floor, CDSH_TAVERN_KIND_DOC, "shared", v, NULL, NULL);
    json_decref(v);
    if (rc == 0 && commit)
        rc = cdsh_tavern_story_floor_commit(s, floor, NULL);
    if (rc == 0 && !commit) {
        const char *names[] = {floor};
        rc = cdsh_tavern_story_undo(s, names, 1, NULL, NULL);
    }
    free(floor);
    return rc;
}

static int create_child(void *ud, char **child, cdsh_error *err)
{
    (void)ud, (void)err;
    *child = cdsh_random_id_dup("s-c");
    return *child ? 0 : CDSH_ENOMEM;
}

/* splitmix64, as tests/support/seed.c (the peer does not link the support
 * library). */
static uint64_t next_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void report(char c)
{
    while (write(1, &c, 1) < 0 && errno == EINTR)
        ;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    char *end = NULL;
    uint64_t rng = strtoull(argv[1], &end, 10);
    if (*end)
        return 2;
    cdsh_tavern_store *store = NULL;
    cdsh_tavern_bindings *b = NULL;
    cdsh_home *home = cdsh_home_from_env(); /* the parent test's home */
    if (cdsh_tavern_store_open(home, NULL, &store, NULL) < 0 ||
        cdsh_tavern_bindings_open(store, &b, NULL) < 0)
        return 2;
    cdsh_tavern_branch_host host = {create_child, NULL, NULL};
    for (unsigned op = 0;; op++) {
        unsigned r = (unsigned)(next_rand(&rng) % 5);
        cdsh_tavern_story *s = NULL;
        char done;
        int rc;
        if (r == 0) {
            json_t *child = NULL;
            rc = cdsh_tavern_branch(b, "s-p", 2, 1, &host, NULL, NULL, &child, NULL);
            json_decref(child);
            done = 'b';
        } else {
            const char *session = r % 2 ? "s-p" : "s-u";
            done = r % 2 ? 'p' : 'u';
            rc = cdsh_tavern_binding_open_story(b, session, &s, NULL);
            if (rc == 0)
                rc = write_floor(s, session, strcmp(session, "s-p") == 0);
            cdsh_tavern_story_free(s);
        }
        if (rc < 0 && rc != CDSH_EBUSY)
            return 3;
        report(rc == 0 ? done : '.');
    }
}
