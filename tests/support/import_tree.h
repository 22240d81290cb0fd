/* import_tree.h — a scratch tree for the importer's tests: a temp CDSH_HOME
 * that is also $HOME (so no default ever reads the developer's ~/.claude or
 * ~/.codex), with CLAUDE_CONFIG_DIR and CODEX_HOME unset, and files written
 * by path relative to it. */
#ifndef CDSH_TEST_IMPORT_TREE_H
#define CDSH_TEST_IMPORT_TREE_H

typedef struct cdsh_test_import_tree {
    char *home;      /* the tree's root (also CDSH_HOME and HOME) */
    char *real_home; /* HOME before, restored by close */
    char path[1200];
} cdsh_test_import_tree;

void cdsh_test_import_tree_open(cdsh_test_import_tree *t);
void cdsh_test_import_tree_close(cdsh_test_import_tree *t);

/* <root>/<rel>, valid until the next call on t. */
const char *cdsh_test_import_tree_path(cdsh_test_import_tree *t, const char *rel);

/* Writes text to <root>/<rel>, making its directories. */
void cdsh_test_import_tree_put(cdsh_test_import_tree *t, const char *rel, const char *text);

#endif
