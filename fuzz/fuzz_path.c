/* fuzz_path.c — invariants of lexical path normalisation and join: results
 * have no "//", no "." segment (unless the whole path is "."), no ".." after
 * a normal segment (none at all when absolute), and normalising is idempotent.
 * Input: "<path>\0<rel>" (rel optional) feeds normalize(path) and join. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"

static void check_normal(const char *p)
{
    if (!p)
        abort();
    size_t n = strlen(p);
    if (n == 0 || strstr(p, "//") || strstr(p, "/./"))
        abort();
    if (strcmp(p, "/") != 0 && p[n - 1] == '/')
        abort();
    bool abs = p[0] == '/';
    bool seen_normal = false;
    const char *s = abs ? p + 1 : p;
    while (*s) {
        size_t sl = strcspn(s, "/");
        bool dot = sl == 1 && s[0] == '.';
        bool dotdot = sl == 2 && s[0] == '.' && s[1] == '.';
        if (dot && strcmp(p, ".") != 0)
            abort();
        if (dotdot && (abs || seen_normal))
            abort();
        if (!dot && !dotdot)
            seen_normal = true;
        s += sl;
        if (*s == '/')
            s++;
    }
    char *again = cdsh_fs_path_normalize_dup(p);
    if (!again || strcmp(again, p) != 0)
        abort();
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 2);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    buf[size + 1] = '\0';
    const char *path = buf;
    const char *rel = buf + strlen(buf) + 1; /* empty when there is no NUL */

    char *norm = cdsh_fs_path_normalize_dup(path);
    check_normal(norm);
    if ((path[0] == '/') != (norm[0] == '/'))
        abort();

    char *joined = cdsh_fs_path_join_dup(path, rel);
    check_normal(joined);
    /* Joining onto an already normalised base gives the same answer. */
    char *joined2 = cdsh_fs_path_join_dup(norm, rel);
    if (!joined2 || strcmp(joined, joined2) != 0)
        abort();

    free(joined2);
    free(joined);
    free(norm);
    free(buf);
    return 0;
}
