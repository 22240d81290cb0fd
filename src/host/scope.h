/* scope.h — agent scopes: a string id and an optional parent, forming the
 * chain (preset → agent) along which tool/command/skill registrations are
 * inherited and events are admitted. NULL stands for the global scope
 * everywhere in the host. Scopes are immutable and reference-counted;
 * thread-safe. */
#ifndef CDSH_HOST_SCOPE_H
#define CDSH_HOST_SCOPE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct cdsh_scope cdsh_scope;

/* New scope with refcount 1; takes a reference on parent (may be NULL).
 * NULL on ENOMEM or an empty id. */
cdsh_scope *cdsh_scope_new(const char *id, cdsh_scope *parent);

cdsh_scope *cdsh_scope_ref(cdsh_scope *scope); /* NULL-safe; returns scope */
void cdsh_scope_unref(cdsh_scope *scope);      /* NULL-safe */

const char *cdsh_scope_id(const cdsh_scope *scope);     /* "" for NULL (global) */
cdsh_scope *cdsh_scope_parent(const cdsh_scope *scope); /* borrowed; NULL at the top */

/* Number of scopes on the chain from scope up to its root (0 for NULL). */
size_t cdsh_scope_depth(const cdsh_scope *scope);

/* True if `ancestor` is `scope` itself or one of its ancestors. The global
 * scope (NULL) is an ancestor of every scope. */
bool cdsh_scope_contains(const cdsh_scope *ancestor, const cdsh_scope *scope);

#endif
