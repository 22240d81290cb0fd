/* branch.c — branch preparation and publication (seed boundary 2): locked
 * snapshot of the source story into a draft, undo inside the draft, fsync
 * and rename, then the caller's child session, then the binding. Decisions
 * about which turn to undo are service.c's. */
#include "plugins/tavern/branch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/random.h"

static void fsync_path(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

static json_t *child_lineage(const json_t *source, int64_t through)
{
    json_t *lin = json_array();
    const char *src = json_string_value(json_object_get(source, "sessionId"));
    size_t i;
    json_t *l;
    json_array_foreach(json_object_get(source, "walLineage"), i, l) {
        const char *ls = json_string_value(json_object_get(l, "sessionId"));
        if (ls && strcmp(ls, src) != 0)
            json_array_append(lin, l);
    }
    json_array_append_new(lin, json_pack("{s:s,s:I}", "sessionId", src, "throughTurn",
                                         (json_int_t)(through < 0 ? 0 : through)));
    return lin;
}

int cdsh_tavern_branch(cdsh_tavern_bindings *b, const char *source_session, int64_t undo_from_turn,
                       int64_t through_turn, const cdsh_tavern_branch_host *host,
                       cdsh_tavern_branch_extra_fn extra, void *extra_ud, json_t **child_binding,
                       cdsh_error *err)
{
    if (!b || !source_session || !host || !host->create_child || !child_binding)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "branch: missing argument");
    *child_binding = NULL;
    json_t *src_binding = NULL, *binding = NULL;
    cdsh_tavern_story *src = NULL, *draft = NULL;
    char *story_id = NULL, *path = NULL, *tmp = NULL, *child = NULL;
    bool published = false;
    char hex[17];
    int rc = cdsh_tavern_binding_load(b, source_session, &src_binding, err);
    if (rc < 0)
        goto cleanup;
    if ((rc = cdsh_tavern_binding_open_story(b, source_session, &src, err)) < 0)
        goto cleanup;
    story_id = cdsh_tavern_story_id_new();
    path = cdsh_tavern_story_path_dup(b, story_id);
    if (!path || cdsh_random_hex(hex, sizeof hex, 8) < 0 ||
        asprintf(&tmp, "%.*s/.preparing-%s.db", (int)(strrchr(path, '/') - path), path, hex) < 0) {
        tmp = NULL;
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto cleanup;
    }
    /* 1. consistent copy under the source's write lock */
    if ((rc = cdsh__tavern_story_snapshot(src, tmp, err)) < 0)
        goto cleanup;
    cdsh_tavern_story_free(src);
    src = NULL;
    /* 2. undo inside the draft only */
    if ((rc = cdsh_tavern_story_open(tmp, &draft, err)) < 0)
        goto cleanup;
    json_t *lineage = json_object_get(src_binding, "walLineage");
    if (undo_from_turn > 0 &&
        (rc = cdsh_tavern_story_undo_from(draft, source_session, lineage, undo_from_turn, err)) < 0)
        goto cleanup;
    if (extra && (rc = extra(extra_ud, draft, err)) < 0)
        goto cleanup;
    /* owner is set to the story id until the child exists; nobody can bind to it */
    if ((rc = cdsh__tavern_story_rebind(draft, story_id, story_id, err)) < 0)
        goto cleanup;
    cdsh_tavern_story_free(draft);
    draft = NULL;
    /* 3. publish atomically */
    fsync_path(tmp);
    if (cdsh__tavern_fault_hit("publish-rename")) {
        rc = cdsh_error_set(err, CDSH_EIO, "FAULT_INJECTED", "fault injected at publication");
        goto cleanup;
    }
    if (rename(tmp, path) != 0) {
        rc = cdsh_error_set(err, CDSH_EIO, "BRANCH_FAILED", "cannot publish the branch: %s",
                            strerror(errno));
        goto cleanup;
    }
    published = true;
    char *dir = strndup(path, (size_t)(strrchr(path, '/') - path));
    if (dir)
        fsync_path(dir);
    free(dir);
    /* 4. the child session, then ownership, then the binding */
    if ((rc = host->create_child(host->ud, &child, err)) < 0)
        goto cleanup;
    if ((rc = cdsh_tavern_story_open(path, &draft, err)) < 0 ||
        (rc = cdsh__tavern_story_rebind(draft, story_id, child, err)) < 0)
        goto cleanup;
    binding = json_deep_copy(src_binding);
    json_object_set_new(binding, "sessionId", json_string(child));
    json_object_set_new(binding, "storyId", json_string(story_id));
    json_object_set_new(binding, "walLineage", child_lineage(src_binding, through_turn));
    rc = cdsh__tavern_binding_insert(b, binding, source_session,
                                     through_turn < 0 ? 0 : through_turn + 1, err);
cleanup:
    cdsh_tavern_story_free(src);
    cdsh_tavern_story_free(draft);
    if (tmp)
        unlink(tmp);
    if (rc < 0) {
        if (published)
            unlink(path);
        if (child && host->discard_child)
            host->discard_child(host->ud, child);
        json_decref(binding);
    } else {
        *child_binding = binding;
    }
    json_decref(src_binding);
    free(story_id);
    free(path);
    free(tmp);
    free(child);
    return rc;
}
