/* fs.h — filesystem helpers: atomic writes, bounded reads, advisory lock
 * files, mkdir -p, lexical path join/normalise, containment checks that
 * resolve symlinks, tree removal and sorted listings. Every error message
 * names the path involved. All functions are thread-safe (no shared state). */
#ifndef CDSH_BASE_FS_H
#define CDSH_BASE_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cancel.h"
#include "base/err.h"

/* Pass as `mode` to cdsh_fs_write_atomic to keep the existing file's
 * permission bits (a new file then gets 0600: cdsh state is private). */
#define CDSH_FS_MODE_KEEP (-1)

/* Replaces path with exactly len bytes of data, atomically: a temporary file
 * is created next to it (O_EXCL), written, fsynced, renamed over path, and the
 * directory is fsynced. mode >= 0 sets the permission bits exactly (umask is
 * not applied); CDSH_FS_MODE_KEEP preserves them. On any failure the old file
 * is untouched and the temporary file is removed. The target must be a
 * regular file or missing: a symlink, directory, FIFO, device or socket at
 * path is refused with CDSH_EINVAL "NOT_REGULAR_FILE" (the message names
 * what is there) and left alone — checked before writing and again just
 * before the rename. Errors: CDSH_EINVAL, CDSH_ENOTFOUND (directory
 * missing), CDSH_EIO (anything else). */
int cdsh_fs_write_atomic(const char *path, const void *data, size_t len, int mode, cdsh_error *err);

/* Reads the whole file into *out (owned, NUL-terminated; the NUL is not
 * counted in *len, which may be NULL). More than max_bytes bytes fails with
 * CDSH_ETOOBIG; pass SIZE_MAX for no limit. CDSH_ENOTFOUND if it does not
 * exist, CDSH_EIO otherwise (a directory, unreadable). *out is NULL on error. */
int cdsh_fs_read_file(const char *path, size_t max_bytes, char **out, size_t *len, cdsh_error *err);

/* Advisory lock on a lock file (flock(2) on its own open file description, so
 * it excludes other processes and other threads alike). The file is created
 * 0600 if missing (a symlink there is refused). It may be removed, but only
 * by cdsh_fs_lock_remove while held exclusively: a locker that acquires a
 * file that was unlinked meanwhile notices (the path no longer names it) and
 * locks the new file instead, so removal never lets two holders in. */
typedef struct cdsh_fs_lock cdsh_fs_lock;

typedef enum cdsh_fs_lock_kind {
    CDSH_FS_LOCK_SHARED = 1,
    CDSH_FS_LOCK_EXCLUSIVE = 2,
} cdsh_fs_lock_kind;

/* Acquires the lock, waiting up to timeout_ms (0: try once; negative:
 * forever) and observing cancel (may be NULL). Errors: CDSH_ETIMEDOUT (code
 * "LOCK_TIMEOUT", the message names the lock file), CDSH_ECANCELED (with the
 * token's reason), CDSH_EINVAL, CDSH_ENOTFOUND (directory missing), CDSH_EIO. */
int cdsh_fs_lock_open(const char *path, cdsh_fs_lock_kind kind, int64_t timeout_ms,
                      cdsh_cancel *cancel, cdsh_fs_lock **out, cdsh_error *err);

/* Releases the lock and frees the handle. NULL-safe. */
void cdsh_fs_lock_close(cdsh_fs_lock *lock);

/* Removes the lock file (hold the lock exclusively), then releases and
 * frees as cdsh_fs_lock_close. A file already gone is fine. NULL-safe. */
int cdsh_fs_lock_remove(cdsh_fs_lock *lock, cdsh_error *err);

/* Creates path and any missing parents with mode (filtered by the umask, as
 * mkdir(2) does). Existing directories (or symlinks to them) are fine; an
 * existing non-directory in the way fails with CDSH_EEXIST naming it. */
int cdsh_fs_mkdir_p(const char *path, int mode, cdsh_error *err);

/* Lexical normalisation (no filesystem access): collapses repeated slashes,
 * drops "." segments and trailing slashes, and resolves ".." against the
 * previous segment. Absolute paths keep one leading "/" and never go above
 * it ("/../a" is "/a"); relative paths keep leading ".." segments ("../a").
 * An empty result is "." (relative) or "/". Owned; NULL on ENOMEM or NULL. */
char *cdsh_fs_path_normalize_dup(const char *path);

/* Joins base and rel and normalises the result. If rel is absolute it wins
 * (as in most languages' join) and an empty base adds nothing; callers
 * confining paths must use cdsh_fs_path_is_inside. Owned; NULL on ENOMEM or a NULL argument. */
char *cdsh_fs_path_join_dup(const char *base, const char *rel);

/* True only if path stays inside root once ".." and symlinks are resolved.
 * A relative path is taken relative to root. Components that do not exist
 * yet are resolved lexically after the deepest existing ancestor (realpath),
 * so files about to be created can be checked; dangling symlinks are followed
 * to where they point. root itself counts as inside (true). Fails closed:
 * false when root does not exist, on symlink loops, permission errors or
 * ENOMEM. The answer can be invalidated by later changes to the tree. */
bool cdsh_fs_path_is_inside(const char *root, const char *path);

/* Removes path and everything below it without following symlinks (a
 * symlink is removed, never its target). A missing path is success. */
int cdsh_fs_remove_tree(const char *path, cdsh_error *err);

/* Lists the names in directory path (without "." and ".."), sorted bytewise.
 * *names is an owned NULL-terminated array (free with cdsh_fs_list_free);
 * *count may be NULL. CDSH_ENOTFOUND if missing, CDSH_EIO if not a directory. */
int cdsh_fs_list_dir(const char *path, char ***names, size_t *count, cdsh_error *err);

/* Frees an array returned by cdsh_fs_list_dir. NULL-safe. */
void cdsh_fs_list_free(char **names);

#endif
