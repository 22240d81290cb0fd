/* fsconfine.h — file access beneath a directory for the agent's fs callbacks,
 * safe against a hostile agent that swaps paths while cdsh works: every
 * component is resolved from a directory fd without following any symlink
 * (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or an O_NOFOLLOW walk where the
 * kernel has no openat2), only regular files are read (opened O_NONBLOCK, so a
 * FIFO never blocks), and writes go to a temporary file in the target's own
 * directory renamed over it under that directory's fd. */
#ifndef CDSH_PROTO_ACP_FSCONFINE_H
#define CDSH_PROTO_ACP_FSCONFINE_H

#include <stddef.h>

#include "base/err.h"

/* Reads root/rel (rel relative, already normalised: no "..", no leading '/')
 * up to max_bytes into *out (owned, NUL-terminated, the raw bytes).
 * CDSH_ENOTFOUND (NOT_FOUND) when the file or a directory on the way is
 * missing; CDSH_EPERM (OUTSIDE) when a component is a symbolic link;
 * CDSH_EINVAL (NOT_A_FILE) for anything but a regular file; CDSH_ETOOBIG
 * (TOO_BIG) above max_bytes; CDSH_EIO otherwise. */
int cdsh_acp_fs_read_beneath(const char *root, const char *rel, size_t max_bytes, char **out,
                             size_t *len, cdsh_error *err);

/* Replaces (or creates) root/rel with data atomically, creating missing
 * directories on the way (mode 0777 & ~umask); an existing file keeps its
 * permission bits. Same errors as the read (a symlink or a non-regular file
 * at rel is refused, the directory itself is NOT_A_FILE). */
int cdsh_acp_fs_write_beneath(const char *root, const char *rel, const char *data, size_t len,
                              cdsh_error *err);

/* Test hook: when set, the O_NOFOLLOW walk is used even where openat2 exists.
 * keep-public: the test hook for the O_NOFOLLOW walk. */
void cdsh_acp_fs_force_walk(int on);

#endif
