/* tools_priv.h — what tools.c (the registry) shares with dispatch.c (the
 * pipeline): reference-counted tool entries, hook snapshots and the registry
 * core's lifetime counters. Layer-internal (cdsh__); not a public surface. */
#ifndef CDSH_HOST_TOOLS_PRIV_H
#define CDSH_HOST_TOOLS_PRIV_H

#include <stdatomic.h>

#include "base/schema.h"
#include "host/tools.h"

/* A registered tool. Immutable after registration except `live` (guarded by
 * the registry lock); a call in flight holds a reference. */
typedef struct cdsh__tool {
    atomic_int refs;
    char *name;
    char *description;
    json_t *parameters;    /* owned */
    json_t *output_schema; /* owned */
    cdsh_schema *params;   /* compiled parameters */
    cdsh_schema *output;   /* compiled output schema */
    cdsh_tool_body_fn execute;
    cdsh_tool_render_fn render;
    cdsh_tool_meta_fn presentation_meta;
    cdsh_tool_safe_fn is_concurrency_safe;
    cdsh_tool_finalize_fn finalize_content;
    cdsh_tool_present_call_fn present_call;
    cdsh_tool_present_result_fn present_result;
    int64_t timeout_ms;
    void *ud;
    void (*free_ud)(void *);
    cdsh_tools *tools; /* the registry (not referenced) */
    cdsh_scope *scope; /* the layer it lives in (referenced; NULL = global) */
    bool live;
} cdsh__tool;

enum { CDSH__HOOK_PRE, CDSH__HOOK_POST, CDSH__HOOK_AROUND, CDSH__HOOK_GUARD, CDSH__HOOK_KINDS };

typedef struct cdsh__hook {
    atomic_int refs;
    int kind;
    cdsh_scope *scope; /* filter; NULL = every call */
    union {
        cdsh_tools_pre_fn pre;
        cdsh_tools_post_fn post;
        cdsh_tools_around_fn around;
        cdsh_tools_guard_fn guard;
    } fn;
    void *ud;
    void (*free_ud)(void *);
    cdsh_tools *tools;
} cdsh__hook;

/* An immutable snapshot of every hook, rebuilt on each (un)registration. */
typedef struct cdsh__hookset {
    atomic_int refs;
    size_t n[CDSH__HOOK_KINDS];
    cdsh__hook **list[CDSH__HOOK_KINDS];
} cdsh__hookset;

/* What a call takes from the registry in one read-locked step. */
typedef struct cdsh__snapshot {
    cdsh__tool *tool;     /* referenced; NULL when not visible */
    cdsh__hookset *hooks; /* referenced; never NULL */
    bool has_approval;
    cdsh_approval_service approval;
    unsigned max_depth;
    int64_t grace_ms;
} cdsh__snapshot;

void cdsh__tool_ref(cdsh__tool *tool);
void cdsh__tool_unref(cdsh__tool *tool);
void cdsh__hookset_unref(cdsh__hookset *hooks);

/* Fills snap for a call of `name` as `scope` sees it. Returns CDSH_ECLOSED
 * once the registry is closed. */
int cdsh__tools_snapshot(cdsh_tools *tools, const cdsh_scope *scope, const char *name,
                         cdsh__snapshot *snap);
void cdsh__snapshot_release(cdsh__snapshot *snap);

/* Resolves `name` for `scope` (referenced tool or NULL). */
cdsh__tool *cdsh__tools_resolve(cdsh_tools *tools, const cdsh_scope *scope, const char *name);

/* Keeps the registry core alive for a body detached by a timeout. */
void cdsh__tools_hold(cdsh_tools *tools);
void cdsh__tools_release(cdsh_tools *tools);

/* Emits on the registry's bus unless it is closed; payload borrowed. Returns
 * false (and emits nothing) when there is no bus, no listener, or it is closed. */
bool cdsh__tools_has_listeners(cdsh_tools *tools);
void cdsh__tools_emit(cdsh_tools *tools, const char *name, const cdsh_scope *scope, bool filtered,
                      const json_t *payload);

#endif
