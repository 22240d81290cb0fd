/* cmdir.h — the scan's command IR as C structs in an arena: a scan of a
 * large commands folder builds and judges one struct per file (no JSON
 * object per command), and the documented JSON IR (commands.h) is made
 * from a struct only when someone asks for it (the report, registration).
 * Layer-internal. One list is used by one thread at a time. */
#ifndef CDSH_MCPIMPORT_CMDIR_H
#define CDSH_MCPIMPORT_CMDIR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* A bump allocator: blocks freed all at once. */
typedef struct cdsh__mcpimport_arena {
    struct cdsh__mcpimport_block *head;
} cdsh__mcpimport_arena;

/* n bytes aligned for any object, NULL on ENOMEM. */
void *cdsh__mcpimport_arena_alloc(cdsh__mcpimport_arena *a, size_t n);
/* A copy of s with a NUL; NULL on ENOMEM (or when s is NULL). */
char *cdsh__mcpimport_arena_strdup(cdsh__mcpimport_arena *a, const char *s);

/* Frees every block (the arena is empty again). */
void cdsh__mcpimport_arena_deinit(cdsh__mcpimport_arena *a);

/* A list of strings (in the arena). */
typedef struct cdsh__mcpimport_strv {
    const char **v;
    size_t n;
} cdsh__mcpimport_strv;

typedef struct cdsh__mcpimport_reason {
    const char *level, *code, *message;
} cdsh__mcpimport_reason;

/* One command; the fields of the JSON IR (commands.h) in its key order.
 * hint and model may be NULL (JSON null); unsupported holds (feature, text)
 * pairs (n is twice their number). */
typedef struct cdsh__mcpimport_cmd {
    const char *name, *original, *description, *hint, *prompt;
    cdsh__mcpimport_strv arguments;
    const char *style;
    cdsh__mcpimport_strv named, allowed;
    const char *model;
    bool dmi;
    const char *source, *file;
    json_t *provenance; /* a reference */
    cdsh__mcpimport_strv warnings, unsupported, info;
    /* set by judging (preflight.c); verdict NULL: not judged */
    cdsh__mcpimport_reason *reasons;
    size_t n_reasons, cap_reasons;
    const char *verdict;
    json_t *json; /* the JSON IR once made (owned), else NULL */
} cdsh__mcpimport_cmd;

/* The commands of a scan, in discovery order. */
typedef struct cdsh__mcpimport_cmds {
    cdsh__mcpimport_arena arena;
    cdsh__mcpimport_cmd **v;
    size_t n, cap;
    json_t *json;       /* the JSON array once made (owned), else NULL */
    json_t *scratch[4]; /* arrays commands.c builds every command in */
} cdsh__mcpimport_cmds;

void cdsh__mcpimport_cmds_init(cdsh__mcpimport_cmds *l);
void cdsh__mcpimport_cmds_deinit(cdsh__mcpimport_cmds *l);
/* Appends c (allocated in l's arena); false on ENOMEM. */
bool cdsh__mcpimport_cmds_push(cdsh__mcpimport_cmds *l, cdsh__mcpimport_cmd *c);

/* The strings of the JSON array arr copied into the arena; false on ENOMEM. */
bool cdsh__mcpimport_strv_from_json(cdsh__mcpimport_arena *a, const json_t *arr,
                                    cdsh__mcpimport_strv *out);

/* How cdsh__mcpimport_cmd_json_mapped makes the JSON of a command: str(ud,
 * s) a new JSON string for each string s of the IR (NULL on ENOMEM), value(ud,
 * v) a new reference standing for the provenance object v. With shared and
 * share (both or neither), equal arrays are one array: shared(ud, key) the
 * array remembered under key (a new reference) or NULL, share(ud, key, a)
 * remembers a (key is the array's content; copy it). */
typedef struct cdsh__mcpimport_jmap {
    json_t *(*str)(void *ud, const char *s);
    json_t *(*value)(void *ud, const json_t *v);
    json_t *(*shared)(void *ud, const char *key);
    void (*share)(void *ud, const char *key, json_t *array);
    void *ud;
} cdsh__mcpimport_jmap;

/* The JSON IR of c with every string made by m (the report makes its
 * redacted copy this way, without the plain IR). Owned, not kept in c;
 * NULL on ENOMEM. */
json_t *cdsh__mcpimport_cmd_json_mapped(const cdsh__mcpimport_cmd *c,
                                        const cdsh__mcpimport_jmap *m);
/* The JSON IR of c (borrowed from c; made once). NULL on ENOMEM. */
json_t *cdsh__mcpimport_cmd_json(cdsh__mcpimport_cmd *c);
/* c's reasons as JSON [{level, code, message}] (owned), NULL on ENOMEM. */
json_t *cdsh__mcpimport_cmd_reasons_json(const cdsh__mcpimport_cmd *c);
/* The JSON array of every command's IR (borrowed from l; made once and
 * kept, so made after judging). NULL on ENOMEM. */
json_t *cdsh__mcpimport_cmds_json(cdsh__mcpimport_cmds *l);
/* The first command named `name`, or NULL. */
cdsh__mcpimport_cmd *cdsh__mcpimport_cmds_find(const cdsh__mcpimport_cmds *l, const char *name);

/* A name index for judging: open addressing, FNV-1a; values borrowed. */
typedef struct cdsh__mcpimport_index {
    const char **keys;
    void **vals;
    size_t n, cap;
} cdsh__mcpimport_index;
/* The value stored under key, or NULL after storing val there (the first
 * wins); also NULL on ENOMEM (then nothing is stored). */
void *cdsh__mcpimport_index_first(cdsh__mcpimport_index *ix, const char *key, void *val);
/* The value stored under key, or NULL. */
void *cdsh__mcpimport_index_get(const cdsh__mcpimport_index *ix, const char *key);
void cdsh__mcpimport_index_deinit(cdsh__mcpimport_index *ix);

#endif
