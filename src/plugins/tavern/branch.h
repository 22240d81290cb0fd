/* branch.h — seed boundary 2: a branch (regenerate, roll back, edit a user
 * or assistant message, greeting swipe) is prepared in a draft copied from
 * the source story under its write lock, rolled back inside the draft,
 * published atomically (rename), and only then is the child session created
 * and bound. The source story is never rolled back. Creating the host
 * session is the caller's (service.c) through the callbacks below.
 * Thread-safety: as binding.h. */
#ifndef CDSH_TAVERN_BRANCH_H
#define CDSH_TAVERN_BRANCH_H

#include <jansson.h>
#include <stdint.h>

#include "base/err.h"
#include "plugins/tavern/binding.h"

typedef struct cdsh_tavern_branch_host {
    /* Creates the child session; *child_id owned. Called after publication. */
    int (*create_child)(void *ud, char **child_id, cdsh_error *err);
    /* Removes a child created for a branch that then failed. May be NULL. */
    void (*discard_child)(void *ud, const char *child_id);
    void *ud;
} cdsh_tavern_branch_host;

/* Branches source_session's story: floors of the source (and its lineage)
 * with turn >= undo_from_turn are undone in the draft (undo_from_turn <= 0:
 * none); the child's lineage gets {sessionId: source, throughTurn}. extra
 * (may be NULL) runs on the draft after the undo (e.g. greeting index). On
 * success *child_binding (owned) is the child's binding. On failure nothing
 * is left: no story, no binding, the child discarded; the source is
 * untouched. Fault point "publish-rename" fails the rename. */
typedef int (*cdsh_tavern_branch_extra_fn)(void *ud, cdsh_tavern_story *draft, cdsh_error *err);
int cdsh_tavern_branch(cdsh_tavern_bindings *b, const char *source_session, int64_t undo_from_turn,
                       int64_t through_turn, const cdsh_tavern_branch_host *host,
                       cdsh_tavern_branch_extra_fn extra, void *extra_ud, json_t **child_binding,
                       cdsh_error *err);

#endif
