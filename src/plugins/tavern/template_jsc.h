/* template_jsc.h — JavaScriptCore, loaded when the first template worker
 * starts rather than linked into cdsh. Mapping libjavascriptcoregtk (with
 * ICU, GLib and libstdc++ behind it) costs every process about half its
 * start-up CPU and ~8 MB of resident memory, and only a process that renders
 * card templates needs it. The host side loads the library before it forks
 * the worker, so the worker inherits it already relocated; the worker calls
 * JSC only through the table below. */
#ifndef CDSH_TAVERN_TEMPLATE_JSC_H
#define CDSH_TAVERN_TEMPLATE_JSC_H

#include <JavaScriptCore/JavaScript.h>
#include <stdbool.h>

#include "base/err.h"

/* Exported by libjavascriptcoregtk-4.1 (and stable since 2013) but declared
 * only in JSC's private header JSContextRefPrivate.h, which Debian's -dev
 * package does not install; its prototype, copied from that header: */
typedef bool (*cdsh_jsc_should_terminate)(JSContextRef ctx, void *context);
JS_EXPORT void JSContextGroupSetExecutionTimeLimit(JSContextGroupRef group, double limit,
                                                   cdsh_jsc_should_terminate callback,
                                                   void *context);

/* Every JSC function the worker calls. */
#define CDSH_JSC_FUNCTIONS(X)                                                                   \
    X(JSContextGetGlobalObject)                                                                 \
    X(JSContextGetGroup)                                                                        \
    X(JSContextGroupCreate)                                                                     \
    X(JSContextGroupSetExecutionTimeLimit)                                                      \
    X(JSEvaluateScript)                                                                         \
    X(JSGlobalContextCreateInGroup)                                                             \
    X(JSGlobalContextRelease)                                                                   \
    X(JSObjectCallAsFunction)                                                                   \
    X(JSObjectGetProperty)                                                                      \
    X(JSObjectMake)                                                                             \
    X(JSObjectSetProperty)                                                                      \
    X(JSStringCreateWithUTF8CString)                                                            \
    X(JSStringGetMaximumUTF8CStringSize)                                                        \
    X(JSStringGetUTF8CString)                                                                   \
    X(JSStringRelease)                                                                          \
    X(JSValueIsObject)                                                                          \
    X(JSValueIsString)                                                                          \
    X(JSValueMakeString)                                                                        \
    X(JSValueProtect)                                                                           \
    X(JSValueToObject)                                                                          \
    X(JSValueToStringCopy)

typedef struct cdsh_tavern_jsc {
#define CDSH_JSC_FIELD(name) __typeof__(name) *name;
    CDSH_JSC_FUNCTIONS(CDSH_JSC_FIELD)
#undef CDSH_JSC_FIELD
} cdsh_tavern_jsc;

/* Loads the library and resolves the table, once per process (thread-safe;
 * later calls return the first result). Fails with TEMPLATE_ENGINE_MISSING
 * naming the library and the package to install. */
int cdsh_tavern_jsc_load(cdsh_error *err);

/* The table; only valid after cdsh_tavern_jsc_load succeeded. */
const cdsh_tavern_jsc *cdsh_tavern_jsc_get(void);

#endif
