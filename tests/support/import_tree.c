/* import_tree.c — see import_tree.h. */
#include "support/testkit.h"

#include "support/import_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"

void cdsh_test_import_tree_open(cdsh_test_import_tree *t)
{
    memset(t, 0, sizeof *t);
    t->home = cdsh_test_home_new();
    t->real_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("HOME", t->home, 1);
    unsetenv("CLAUDE_CONFIG_DIR");
    unsetenv("CODEX_HOME");
}

void cdsh_test_import_tree_close(cdsh_test_import_tree *t)
{
    if (t->real_home)
        setenv("HOME", t->real_home, 1);
    free(t->real_home);
    cdsh_test_home_free(t->home);
    memset(t, 0, sizeof *t);
}

const char *cdsh_test_import_tree_path(cdsh_test_import_tree *t, const char *rel)
{
    snprintf(t->path, sizeof t->path, "%s/%s", t->home, rel);
    return t->path;
}

void cdsh_test_import_tree_put(cdsh_test_import_tree *t, const char *rel, const char *text)
{
    char *dir = strdup(cdsh_test_import_tree_path(t, rel));
    assert_non_null(dir);
    *strrchr(dir, '/') = '\0';
    assert_int_equal(cdsh_fs_mkdir_p(dir, 0700, NULL), 0);
    free(dir);
    cdsh_test_write_file(cdsh_test_import_tree_path(t, rel), text);
}
