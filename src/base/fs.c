/* fs.c — atomic writes, bounded reads, lock files, mkdir -p, path
 * normalisation and containment, tree removal and listings. Only the local
 * filesystem through POSIX calls; no caching, no global state. */
#include "base/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/random.h"

static int errno_rc(int e)
{
    switch (e) {
    case ENOENT: return CDSH_ENOTFOUND;
    case ENOMEM: return CDSH_ENOMEM;
    case EEXIST: return CDSH_EEXIST;
    default: return CDSH_EIO;
    }
}

static int sys_error(cdsh_error *err, int e, const char *what, const char *path)
{
    return cdsh_error_set(err, errno_rc(e), e == ENOENT ? "NOT_FOUND" : "IO_ERROR", "%s %s: %s",
                          what, path, strerror(e));
}

static char *dir_of_dup(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISLNK(m))
        return "a symbolic link";
    if (S_ISFIFO(m))
        return "a FIFO (named pipe)";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

/* The target must be missing or a regular file: renaming over anything else
 * would replace a device, a FIFO, a link or a directory entry. */
static int check_target(const char *path, cdsh_error *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : sys_error(err, errno, "cannot write", path);
    if (S_ISREG(st.st_mode))
        return 0;
    if (S_ISLNK(st.st_mode)) {
        char to[PATH_MAX];
        ssize_t n = readlink(path, to, sizeof to - 1);
        to[n > 0 ? n : 0] = '\0';
        return cdsh_error_set(err, CDSH_EINVAL, "NOT_REGULAR_FILE",
                              "cannot write %s: it is a symbolic link (to %s); cdsh replaces only "
                              "regular files — write to the real path instead",
                              path, n > 0 ? to : "?");
    }
    return cdsh_error_set(err, CDSH_EINVAL, "NOT_REGULAR_FILE",
                          "cannot write %s: it is %s, not a regular file; cdsh replaces only "
                          "regular files",
                          path, kind_of(st.st_mode));
}

int cdsh_fs_write_atomic(const char *path, const void *data, size_t len, int mode, cdsh_error *err)
{
    if (!path || !*path || (!data && len > 0))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "atomic write needs a non-empty path and data");
    size_t plen = strlen(path);
    if (path[plen - 1] == '/')
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "cannot write %s: the path names a directory (ends with '/')", path);

    int rc = 0, fd = -1, dfd = -1;
    char *dir = NULL, *tmp = NULL;
    char hex[17];
    struct stat st;

    if ((rc = check_target(path, err)) != 0)
        return rc;
    mode_t final_mode = 0600;
    if (mode >= 0)
        final_mode = (mode_t)mode & 07777;
    else if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
        final_mode = st.st_mode & 07777;

    dir = dir_of_dup(path);
    if (!dir || cdsh_random_hex(hex, sizeof hex, 8) != 0) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot write %s: out of memory", path);
        goto cleanup;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t tlen = strlen(dir) + strlen(base) + 32;
    tmp = malloc(tlen);
    if (!tmp) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot write %s: out of memory", path);
        goto cleanup;
    }
    snprintf(tmp, tlen, "%s/.%s.tmp-%s", dir, base, hex);

    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        int e = errno;
        rc = cdsh_error_set(err, errno_rc(e), e == ENOENT ? "NOT_FOUND" : "IO_ERROR",
                            "cannot write %s: cannot create temporary file in %s: %s", path, dir,
                            strerror(e));
        goto cleanup;
    }
    /* fchmod rather than the open mode, so the umask does not change it. */
    if (fchmod(fd, final_mode) != 0 || write_all(fd, data, len) != 0 || fsync(fd) != 0) {
        int e = errno;
        rc = cdsh_error_set(err, CDSH_EIO, "IO_ERROR", "cannot write %s: writing %s failed: %s",
                            path, tmp, strerror(e));
        goto cleanup;
    }
    if (close(fd) != 0) {
        fd = -1;
        int e = errno;
        rc = cdsh_error_set(err, CDSH_EIO, "IO_ERROR", "cannot write %s: closing %s failed: %s",
                            path, tmp, strerror(e));
        goto cleanup;
    }
    fd = -1;
    /* Checked again: the target may have changed while the data was written. */
    if ((rc = check_target(path, err)) != 0)
        goto cleanup;
    if (rename(tmp, path) != 0) {
        int e = errno;
        rc = cdsh_error_set(err, CDSH_EIO, "IO_ERROR", "cannot write %s: rename from %s failed: %s",
                            path, tmp, strerror(e));
        goto cleanup;
    }
    free(tmp);
    tmp = NULL; /* renamed: nothing left to remove */
    /* The rename is durable only once the directory entry is on disk. */
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) != 0) {
        int e = errno;
        /* EINVAL: the filesystem cannot sync directories; the data is written. */
        if (e != EINVAL)
            rc = cdsh_error_set(err, CDSH_EIO, "IO_ERROR",
                                "wrote %s but syncing directory %s failed: %s", path, dir,
                                strerror(e));
    }

cleanup:
    if (fd >= 0)
        close(fd);
    if (dfd >= 0)
        close(dfd);
    if (tmp)
        unlink(tmp); /* only reached on failure before the rename */
    free(tmp);
    free(dir);
    return rc;
}

int cdsh_fs_read_file(const char *path, size_t max_bytes, char **out, size_t *len, cdsh_error *err)
{
    if (out)
        *out = NULL;
    if (len)
        *len = 0;
    if (!path || !out)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "read_file needs a path and out");

    int rc = 0;
    char *buf = NULL;
    size_t used = 0, cap = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sys_error(err, errno, "cannot read", path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = sys_error(err, errno, "cannot read", path);
        goto cleanup;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = cdsh_error_set(err, CDSH_EIO, "IO_ERROR", "cannot read %s: it is a directory", path);
        goto cleanup;
    }
    /* st_size is only a hint (pipes and /proc report 0); read until EOF. */
    cap = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
    if (cap > max_bytes && max_bytes < SIZE_MAX)
        cap = max_bytes + 1;
    if (cap < 2)
        cap = 2; /* room to read at least one byte: a 0-byte read looks like EOF */
    buf = malloc(cap);
    for (;;) {
        if (buf && used + 1 >= cap) {
            char *grown = realloc(buf, cap * 2);
            if (!grown)
                free(buf);
            buf = grown;
            cap *= 2;
        }
        if (!buf) {
            rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot read %s: out of memory",
                                path);
            goto cleanup;
        }
        ssize_t n = read(fd, buf + used, cap - used - 1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = sys_error(err, errno, "cannot read", path);
            goto cleanup;
        }
        if (n == 0)
            break;
        used += (size_t)n;
        if (used > max_bytes) {
            rc = cdsh_error_set(err, CDSH_ETOOBIG, "TOO_BIG",
                                "cannot read %s: larger than the limit of %zu bytes", path,
                                max_bytes);
            goto cleanup;
        }
    }
    buf[used] = '\0';
    *out = buf;
    buf = NULL;
    if (len)
        *len = used;

cleanup:
    free(buf);
    close(fd);
    return rc;
}

struct cdsh_fs_lock {
    int fd;
    char *path;
};

/* After flock: does path still name the file we locked? A remover unlinks
 * the file while holding it exclusively, so a locker that opened it before
 * the unlink holds a lock on a file nobody else can reach, and must retry. */
static bool still_linked(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && a.st_nlink > 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cdsh_fs_lock_open(const char *path, cdsh_fs_lock_kind kind, int64_t timeout_ms,
                      cdsh_cancel *cancel, cdsh_fs_lock **out, cdsh_error *err)
{
    if (out)
        *out = NULL;
    if (!path || !*path || !out || (kind != CDSH_FS_LOCK_SHARED && kind != CDSH_FS_LOCK_EXCLUSIVE))
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "lock_open needs a path, out and a shared or exclusive kind");
    const char *kind_name = kind == CDSH_FS_LOCK_SHARED ? "shared" : "exclusive";
    int op = (kind == CDSH_FS_LOCK_SHARED ? LOCK_SH : LOCK_EX) | LOCK_NB;
    int rc = 0;
    cdsh_fs_lock *lock = NULL;

    int64_t start = now_ms();
reopen:;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0600);
    if (fd < 0) {
        int e = errno;
        return cdsh_error_set(err, errno_rc(e), e == ENOENT ? "NOT_FOUND" : "IO_ERROR",
                              "cannot open lock file %s: %s", path, strerror(e));
    }
    int64_t sleep_ms = 1;
    for (;;) {
        if (cdsh_cancel_is_fired(cancel)) {
            rc = cdsh_error_set(err, CDSH_ECANCELED, "CANCELLED",
                                "waiting for a %s lock on %s was cancelled: %s", kind_name, path,
                                cdsh_cancel_reason(cancel));
            goto cleanup;
        }
        if (flock(fd, op) == 0) {
            if (still_linked(fd, path))
                break;
            close(fd); /* removed while we waited: lock the file that is there now */
            goto reopen;
        }
        if (errno == EINTR)
            continue;
        if (errno != EWOULDBLOCK) {
            rc = sys_error(err, errno, "cannot lock", path);
            goto cleanup;
        }
        int64_t waited = now_ms() - start;
        if (timeout_ms >= 0 && waited >= timeout_ms) {
            rc = cdsh_error_set(err, CDSH_ETIMEDOUT, "LOCK_TIMEOUT",
                                "timed out after %lld ms waiting for a %s lock on %s "
                                "(another process or thread holds it)",
                                (long long)timeout_ms, kind_name, path);
            goto cleanup;
        }
        int64_t nap = sleep_ms;
        if (timeout_ms >= 0 && nap > timeout_ms - waited)
            nap = timeout_ms - waited;
        /* Doubles as a sleep that wakes early when the token fires. */
        cdsh_cancel_wait(cancel, nap);
        if (sleep_ms < 25)
            sleep_ms *= 2;
    }
    lock = malloc(sizeof *lock);
    if (!lock) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot lock %s: out of memory", path);
        goto cleanup;
    }
    lock->fd = fd;
    lock->path = strdup(path);
    if (!lock->path) {
        free(lock);
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot lock %s: out of memory", path);
        goto cleanup;
    }
    *out = lock;
    return 0;

cleanup:
    close(fd); /* closing the only descriptor also drops a lock taken above */
    return rc;
}

void cdsh_fs_lock_close(cdsh_fs_lock *lock)
{
    if (!lock)
        return;
    flock(lock->fd, LOCK_UN);
    close(lock->fd);
    free(lock->path);
    free(lock);
}

int cdsh_fs_lock_remove(cdsh_fs_lock *lock, cdsh_error *err)
{
    if (!lock)
        return 0;
    int rc = 0;
    /* Unlink before unlocking: a waiter wakes on a file that is gone and retries. */
    if (unlink(lock->path) != 0 && errno != ENOENT)
        rc = sys_error(err, errno, "cannot remove lock file", lock->path);
    cdsh_fs_lock_close(lock);
    return rc;
}

int cdsh_fs_mkdir_p(const char *path, int mode, cdsh_error *err)
{
    if (!path || !*path || mode < 0 || mode > 07777)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "mkdir_p needs a non-empty path and a mode from 0 to 07777");
    char *buf = strdup(path);
    if (!buf)
        return cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot create %s: out of memory",
                              path);
    int rc = 0;
    size_t n = strlen(buf);
    /* Walk prefixes ending at each '/' and finally the whole path. */
    for (size_t i = 1; i <= n; i++) {
        if (i < n && buf[i] != '/')
            continue;
        if (i < n && buf[i - 1] == '/')
            continue; /* repeated slash */
        char saved = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, (mode_t)mode) != 0) {
            int e = errno;
            struct stat st;
            if (e == EEXIST || e == EISDIR || (e == EACCES && stat(buf, &st) == 0)) {
                if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
                    rc = cdsh_error_set(err, CDSH_EEXIST, "NOT_A_DIRECTORY",
                                        "cannot create directory %s: %s exists and is not a "
                                        "directory",
                                        path, buf);
                    goto cleanup;
                }
            } else if (e == ENOTDIR) {
                rc = cdsh_error_set(err, CDSH_EEXIST, "NOT_A_DIRECTORY",
                                    "cannot create directory %s: a component of %s is not a "
                                    "directory",
                                    path, buf);
                goto cleanup;
            } else {
                rc = cdsh_error_set(err, errno_rc(e), "IO_ERROR",
                                    "cannot create directory %s: mkdir %s failed: %s", path, buf,
                                    strerror(e));
                goto cleanup;
            }
        }
        buf[i] = saved;
    }

cleanup:
    free(buf);
    return rc;
}

/* Normalises path into a fresh buffer; see cdsh_fs_path_normalize_dup. */
char *cdsh_fs_path_normalize_dup(const char *path)
{
    if (!path)
        return NULL;
    size_t n = strlen(path);
    char *out = malloc(n + 2);
    if (!out)
        return NULL;
    bool abs = path[0] == '/';
    size_t len = 0;             /* bytes used in out */
    size_t floor = abs ? 1 : 0; /* out[0..floor) is never popped */
    size_t dotdots = 0;         /* length of the leading "../.." run in a relative path */
    if (abs)
        out[len++] = '/';
    const char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        const char *seg = p;
        while (*p && *p != '/')
            p++;
        size_t sl = (size_t)(p - seg);
        if (sl == 1 && seg[0] == '.')
            continue;
        if (sl == 2 && seg[0] == '.' && seg[1] == '.') {
            if (len > floor && len > dotdots) {
                /* Pop the last segment (and its separating slash). */
                while (len > floor && out[len - 1] != '/')
                    len--;
                if (len > floor)
                    len--;
                continue;
            }
            if (abs)
                continue; /* never above the root */
            if (len > 0)
                out[len++] = '/';
            out[len++] = '.';
            out[len++] = '.';
            dotdots = len;
            continue;
        }
        if (len > floor)
            out[len++] = '/';
        memcpy(out + len, seg, sl);
        len += sl;
    }
    if (len == 0)
        out[len++] = '.';
    out[len] = '\0';
    return out;
}

char *cdsh_fs_path_join_dup(const char *base, const char *rel)
{
    if (!base || !rel)
        return NULL;
    if (rel[0] == '/' || base[0] == '\0')
        return cdsh_fs_path_normalize_dup(rel);
    size_t bl = strlen(base), rl = strlen(rel);
    char *joined = malloc(bl + rl + 2);
    if (!joined)
        return NULL;
    memcpy(joined, base, bl);
    joined[bl] = '/';
    memcpy(joined + bl + 1, rel, rl + 1);
    char *norm = cdsh_fs_path_normalize_dup(joined);
    free(joined);
    return norm;
}

/* A growable absolute path under resolution, always starting with '/'. */
typedef struct pathbuf {
    char *s;
    size_t len, cap;
} pathbuf;

static bool pb_append(pathbuf *pb, const char *seg, size_t sl)
{
    if (pb->len + sl + 2 > pb->cap) {
        size_t cap = pb->cap * 2 + sl + 2;
        char *grown = realloc(pb->s, cap);
        if (!grown)
            return false;
        pb->s = grown;
        pb->cap = cap;
    }
    if (pb->len > 1)
        pb->s[pb->len++] = '/';
    memcpy(pb->s + pb->len, seg, sl);
    pb->len += sl;
    pb->s[pb->len] = '\0';
    return true;
}

static void pb_pop(pathbuf *pb)
{
    while (pb->len > 1 && pb->s[pb->len - 1] != '/')
        pb->len--;
    if (pb->len > 1)
        pb->len--;
    pb->s[pb->len] = '\0';
}

/* Resolves an absolute path component by component: existing components
 * have their symlinks followed (lstat/readlink); missing ones are applied
 * lexically. Returns an owned canonical path or NULL (loops, EACCES...). */
static char *resolve_prefix_dup(const char *abs_path)
{
    pathbuf pb = {malloc(256), 1, 256};
    char *unwalked = strdup(abs_path); /* the components not walked yet */
    char *result = NULL;
    int links = 0;
    if (!pb.s || !unwalked)
        goto cleanup;
    pb.s[0] = '/';
    pb.s[1] = '\0';
    size_t pos = 0;
    while (unwalked[pos]) {
        while (unwalked[pos] == '/')
            pos++;
        if (!unwalked[pos])
            break;
        size_t start = pos;
        while (unwalked[pos] && unwalked[pos] != '/')
            pos++;
        size_t sl = pos - start;
        const char *seg = unwalked + start;
        if (sl == 1 && seg[0] == '.')
            continue;
        if (sl == 2 && seg[0] == '.' && seg[1] == '.') {
            pb_pop(&pb);
            continue;
        }
        if (!pb_append(&pb, seg, sl))
            goto cleanup;
        struct stat st;
        if (lstat(pb.s, &st) != 0) {
            /* Not there (yet): taken lexically. Every later component is
             * checked again, since a ".." can lead back to existing ones. */
            if (errno == ENOENT || errno == ENOTDIR)
                continue;
            goto cleanup; /* EACCES, ELOOP...: fail closed */
        }
        if (!S_ISLNK(st.st_mode))
            continue;
        if (++links > 40)
            goto cleanup;
        char target[PATH_MAX];
        ssize_t tl = readlink(pb.s, target, sizeof target - 1);
        if (tl <= 0)
            goto cleanup;
        target[tl] = '\0';
        pb_pop(&pb);
        if (target[0] == '/') {
            pb.len = 1;
            pb.s[1] = '\0';
        }
        /* Splice the link target in front of what is left to walk. */
        size_t rest = strlen(unwalked + pos);
        char *next = malloc((size_t)tl + rest + 2);
        if (!next)
            goto cleanup;
        memcpy(next, target, (size_t)tl);
        next[tl] = '/';
        memcpy(next + tl + 1, unwalked + pos, rest + 1);
        free(unwalked);
        unwalked = next;
        pos = 0;
    }
    result = pb.s;
    pb.s = NULL;

cleanup:
    free(pb.s);
    free(unwalked);
    return result;
}

bool cdsh_fs_path_is_inside(const char *root, const char *path)
{
    if (!root || !path || !*root)
        return false;
    bool inside = false;
    char *root_real = realpath(root, NULL);
    char *full = NULL, *resolved = NULL;
    if (!root_real)
        goto cleanup;
    if (path[0] == '/') {
        full = strdup(path);
    } else {
        size_t rl = strlen(root_real), pl = strlen(path);
        full = malloc(rl + pl + 2);
        if (full) {
            memcpy(full, root_real, rl);
            full[rl] = '/';
            memcpy(full + rl + 1, path, pl + 1);
        }
    }
    if (!full)
        goto cleanup;
    resolved = resolve_prefix_dup(full);
    if (!resolved)
        goto cleanup;
    size_t rl = strlen(root_real);
    if (strcmp(root_real, "/") == 0)
        inside = true;
    else
        inside =
            strncmp(resolved, root_real, rl) == 0 && (resolved[rl] == '\0' || resolved[rl] == '/');

cleanup:
    free(root_real);
    free(full);
    free(resolved);
    return inside;
}

/* Removes `name` relative to parent_fd, emptying it first if a directory. */
static int remove_at(int parent_fd, const char *name, const char *top, cdsh_error *err)
{
    if (unlinkat(parent_fd, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return sys_error(err, errno, "cannot remove an entry below", top);
    int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return sys_error(err, errno, "cannot open a directory below", top);
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return sys_error(err, e, "cannot list a directory below", top);
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (errno = 0, e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        rc = remove_at(dirfd(d), e->d_name, top, err);
    }
    closedir(d);
    if (rc == 0 && unlinkat(parent_fd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
        rc = sys_error(err, errno, "cannot remove a directory below", top);
    return rc;
}

int cdsh_fs_remove_tree(const char *path, cdsh_error *err)
{
    if (!path || !*path)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS",
                              "remove_tree needs a non-empty path");
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : sys_error(err, errno, "cannot remove", path);
    return remove_at(AT_FDCWD, path, path, err);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void cdsh_fs_list_free(char **names)
{
    if (!names)
        return;
    for (size_t i = 0; names[i]; i++)
        free(names[i]);
    free(names);
}

int cdsh_fs_list_dir(const char *path, char ***names, size_t *count, cdsh_error *err)
{
    if (names)
        *names = NULL;
    if (count)
        *count = 0;
    if (!path || !names)
        return cdsh_error_set(err, CDSH_EINVAL, "INVALID_ARGS", "list_dir needs a path and names");
    DIR *d = opendir(path);
    if (!d)
        return sys_error(err, errno, "cannot list directory", path);
    int rc = 0;
    size_t n = 0, cap = 16;
    char **v = calloc(cap, sizeof *v);
    if (!v)
        goto nomem;
    struct dirent *e;
    while ((errno = 0, e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n + 1 >= cap) {
            char **grown = realloc(v, cap * 2 * sizeof *v);
            if (!grown)
                goto nomem;
            v = grown;
            cap *= 2;
        }
        v[n] = strdup(e->d_name);
        if (!v[n])
            goto nomem;
        v[++n] = NULL;
    }
    if (errno != 0) {
        rc = sys_error(err, errno, "cannot list directory", path);
        goto cleanup;
    }
    qsort(v, n, sizeof *v, cmp_names);
    *names = v;
    v = NULL;
    if (count)
        *count = n;
    goto cleanup;

nomem:
    rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "cannot list directory %s: out of memory",
                        path);
cleanup:
    cdsh_fs_list_free(v);
    closedir(d);
    return rc;
}
