/* dir_snapshot.h — a recursive listing of path:size:mtime (nanoseconds) for
 * the tests that prove a command wrote nothing. Header-only. */
#ifndef CDSH_TESTS_DIR_SNAPSHOT_H
#define CDSH_TESTS_DIR_SNAPSHOT_H

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"

/* Appends one line per entry below dir (sorted, recursive) to out. */
static void dir_snapshot(const char *dir, char *out, size_t cap)
{
    char **names = NULL;
    if (cdsh_fs_list_dir(dir, &names, NULL, NULL) != 0)
        return;
    for (char **n = names; *n; n++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, *n);
        struct stat st;
        if (lstat(path, &st) != 0)
            continue;
        size_t used = strlen(out);
        snprintf(out + used, cap - used, "%s%s:%lld:%lld.%09ld\n", path,
                 S_ISDIR(st.st_mode) ? "/" : "", (long long)st.st_size,
                 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        if (S_ISDIR(st.st_mode))
            dir_snapshot(path, out, cap);
    }
    cdsh_fs_list_free(names);
}

#endif
