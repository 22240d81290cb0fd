/* fsconfine.c — confined, race-free file reads and writes beneath the
 * session directory for the ACP fs callbacks (see fsconfine.h). */
#include "proto/acp/fsconfine.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static atomic_int force_walk;

void cdsh_acp_fs_force_walk(int on)
{
    atomic_store(&force_walk, on);
}

/* The error for a failed open/openat of rel (errno e). */
static int open_fail(int e, const char *rel, cdsh_error *err)
{
    switch (e) {
    case ENOENT:
    case ENOTDIR:
        return cdsh_error_set(err, CDSH_ENOTFOUND, "NOT_FOUND",
                              "Resource not found: %.400s does not exist", rel);
    case ELOOP:
    case EXDEV:
        return cdsh_error_set(err, CDSH_EPERM, "OUTSIDE",
                              "Permission denied: %.400s goes through a symbolic link (cdsh "
                              "follows none inside the session directory)",
                              rel);
    case EISDIR:
        return cdsh_error_set(err, CDSH_EINVAL, "NOT_A_FILE",
                              "Invalid params: %.400s is not a regular file", rel);
    default:
        return cdsh_error_set(err, CDSH_EIO, "IO_ERROR", "cannot open %.400s: %s", rel,
                              strerror(e));
    }
}

/* Opens the directory at the first n bytes of rel beneath dirfd, one
 * component at a time with O_NOFOLLOW (creating missing ones when create).
 * Returns the fd or -errno. */
static int walk_dirs(int dirfd, const char *rel, size_t n, bool create)
{
    int fd = dup(dirfd);
    if (fd < 0)
        return -errno;
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && rel[j] != '/')
            j++;
        if (j == i) { /* "//" */
            i++;
            continue;
        }
        char comp[256];
        size_t cl = j - i;
        if (cl >= sizeof comp) {
            close(fd);
            return -ENAMETOOLONG;
        }
        memcpy(comp, rel + i, cl);
        comp[cl] = '\0';
        if (strcmp(comp, "..") == 0) {
            close(fd);
            return -EXDEV;
        }
        int next = -1;
        if (strcmp(comp, ".") != 0) {
            next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (next < 0 && errno == ENOENT && create) {
                if (mkdirat(fd, comp, 0777) < 0 && errno != EEXIST) {
                    int e = errno;
                    close(fd);
                    return -e;
                }
                next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            }
            if (next < 0) {
                /* O_DIRECTORY|O_NOFOLLOW on a symlink fails with ENOTDIR on
                 * some kernels: tell a link from a missing directory. */
                int e = errno;
                struct stat st;
                if (e == ENOTDIR && fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    S_ISLNK(st.st_mode))
                    e = ELOOP;
                close(fd);
                return -e;
            }
            close(fd);
            fd = next;
        }
        i = j + 1;
    }
    return fd;
}

/* Opens rel beneath dirfd for reading without following any link. */
static int open_beneath(int dirfd, const char *rel)
{
    int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    if (!atomic_load(&force_walk)) {
        struct open_how how = {.flags = (uint64_t)flags,
                               .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
                                          RESOLVE_NO_MAGICLINKS};
        long fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
        if (fd >= 0)
            return (int)fd;
        if (errno != ENOSYS && errno != EPERM) /* EPERM: seccomp without openat2 */
            return -errno;
    }
    const char *slash = strrchr(rel, '/');
    size_t dn = slash ? (size_t)(slash - rel) : 0;
    const char *base = slash ? slash + 1 : rel;
    int dfd = walk_dirs(dirfd, rel, dn, false);
    if (dfd < 0)
        return dfd;
    if (strcmp(base, "..") == 0) {
        close(dfd);
        return -EXDEV;
    }
    int fd = openat(dfd, *base ? base : ".", flags | O_NOFOLLOW);
    int e = errno;
    close(dfd);
    return fd >= 0 ? fd : -e;
}

static int open_root(const char *root, cdsh_error *err)
{
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        cdsh_error_set(err, errno == ENOENT ? CDSH_ENOTFOUND : CDSH_EIO, "NO_SESSION_DIR",
                       "the session directory %.400s cannot be opened: %s", root,
                       strerror(errno));
    return fd;
}

int cdsh_acp_fs_read_beneath(const char *root, const char *rel, size_t max_bytes, char **out,
                             size_t *len, cdsh_error *err)
{
    *out = NULL;
    *len = 0;
    int rfd = open_root(root, err);
    if (rfd < 0)
        return err ? err->rc : CDSH_EIO;
    int fd = open_beneath(rfd, *rel ? rel : ".");
    close(rfd);
    if (fd < 0)
        return open_fail(-fd, rel, err);
    int rc = 0;
    char *buf = NULL;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        rc = cdsh_error_set(err, CDSH_EINVAL, "NOT_A_FILE",
                            "Invalid params: %.400s is not a regular file", *rel ? rel : ".");
        goto done;
    }
    if ((uint64_t)st.st_size > max_bytes) {
        rc = cdsh_error_set(err, CDSH_ETOOBIG, "TOO_BIG",
                            "%.400s is %lld bytes, over the %zu-byte limit", rel,
                            (long long)st.st_size, max_bytes);
        goto done;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    buf = malloc(cap + 1);
    if (!buf) {
        rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
        goto done;
    }
    for (;;) {
        if (n == cap) { /* the file grew while read */
            if (cap > max_bytes) {
                rc = cdsh_error_set(err, CDSH_ETOOBIG, "TOO_BIG",
                                    "%.400s is over the %zu-byte limit", rel, max_bytes);
                goto done;
            }
            char *nb = realloc(buf, cap * 2 + 2);
            if (!nb) {
                rc = cdsh_error_set(err, CDSH_ENOMEM, "NO_MEMORY", "out of memory");
                goto done;
            }
            buf = nb;
            cap = cap * 2 + 1;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = cdsh_error_set(err, CDSH_EIO, "IO_ERROR", "cannot read %.400s: %s", rel,
                                strerror(errno));
            goto done;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n > max_bytes) {
        rc = cdsh_error_set(err, CDSH_ETOOBIG, "TOO_BIG", "%.400s is over the %zu-byte limit",
                            rel, max_bytes);
        goto done;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    buf = NULL;
done:
    free(buf);
    close(fd);
    return rc;
}

/* A fresh temporary name for base in its directory. */
static void temp_name(char *out, size_t cap, const char *base)
{
    unsigned char r[6] = {0};
    if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        uint64_t x = (uint64_t)getpid() * 2654435761u ^ (uint64_t)(uintptr_t)out;
        memcpy(r, &x, sizeof r);
    }
    snprintf(out, cap, ".%.180s.cdsh-%02x%02x%02x%02x%02x%02x", base, r[0], r[1], r[2], r[3],
             r[4], r[5]);
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int cdsh_acp_fs_write_beneath(const char *root, const char *rel, const char *data, size_t len,
                              cdsh_error *err)
{
    const char *slash = strrchr(rel, '/');
    const char *base = slash ? slash + 1 : rel;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return cdsh_error_set(err, CDSH_EINVAL, "NOT_A_FILE",
                              "Invalid params: %.400s is a directory, not a file",
                              *rel ? rel : ".");
    if (strlen(base) > 200)
        return cdsh_error_set(err, CDSH_EINVAL, "NAME_TOO_LONG",
                              "Invalid params: the file name in %.400s is too long", rel);
    int rfd = open_root(root, err);
    if (rfd < 0)
        return err ? err->rc : CDSH_EIO;
    int dfd = walk_dirs(rfd, rel, slash ? (size_t)(slash - rel) : 0, true);
    close(rfd);
    if (dfd < 0)
        return open_fail(-dfd, rel, err);
    int rc = 0, fd = -1;
    char tmp[256] = "";
    mode_t mode = 0666;
    bool keep_mode = false;
    struct stat st;
    if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode)) {
            rc = open_fail(ELOOP, rel, err);
            goto done;
        }
        if (!S_ISREG(st.st_mode)) {
            rc = cdsh_error_set(err, CDSH_EINVAL, "NOT_A_FILE",
                                "Invalid params: %.400s is not a regular file", rel);
            goto done;
        }
        mode = st.st_mode & 07777;
        keep_mode = true;
    }
    for (int tries = 0; fd < 0 && tries < 16; tries++) {
        temp_name(tmp, sizeof tmp, base);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        rc = cdsh_error_set(err, CDSH_EIO, "IO_ERROR", "cannot create a temporary file for %.400s: %s",
                            rel, strerror(errno));
        tmp[0] = '\0';
        goto done;
    }
    if ((keep_mode && fchmod(fd, mode) < 0) || write_all(fd, data, len) < 0 || fsync(fd) < 0) {
        rc = cdsh_error_set(err, CDSH_EIO, "IO_ERROR", "cannot write %.400s: %s", rel,
                            strerror(errno));
        goto done;
    }
    close(fd);
    fd = -1;
    /* rename replaces the directory entry itself: whatever base became in
     * the meantime (even a symlink), nothing outside is written. */
    if (renameat(dfd, tmp, dfd, base) < 0) {
        int e = errno;
        rc = e == EISDIR ? cdsh_error_set(err, CDSH_EINVAL, "NOT_A_FILE",
                                          "Invalid params: %.400s is not a regular file", rel)
                         : cdsh_error_set(err, CDSH_EIO, "IO_ERROR", "cannot replace %.400s: %s",
                                          rel, strerror(e));
        goto done;
    }
    tmp[0] = '\0';
done:
    if (fd >= 0)
        close(fd);
    if (tmp[0])
        unlinkat(dfd, tmp, 0);
    close(dfd);
    return rc;
}
