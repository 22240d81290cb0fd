/* card_frame.h — interactive card HTML as a standalone document for the
 * sandboxed frame (seed boundary 8): detection, unfencing and the
 * swipeGreeting-only bridge script. The CSP that confines it is the web
 * server's (CDSH_WEB_FRAME_CSP); this module never decides permissions.
 * Pure functions; thread-safe. */
#ifndef CDSH_TAVERN_CARD_FRAME_H
#define CDSH_TAVERN_CARD_FRAME_H

#include <stdbool.h>

/* The bridge injected into every card document: window.SillyTavern with one
 * method, swipeGreeting(i), which posts {type:"tavern:swipeGreeting", index}
 * to the parent window. The page accepts nothing else, and only from the
 * frame it created (web/tavern/frame.js). */
#define CDSH_TAVERN_CARD_BRIDGE                                                                    \
    "<script>window.SillyTavern={swipeGreeting:function(i){"                                       \
    "parent.postMessage({type:'tavern:swipeGreeting',index:Number(i)},'*');}};</script>"

/* True when text is an interactive card document: it starts with
 * <!doctype html> or <html>, or holds one in a ```html fence (the same test
 * as render.js's isCardHtml). */
bool cdsh_tavern_card_is_html(const char *text);

/* Owned document for the frame: the HTML taken out of its fence, with the
 * bridge as the first thing in <head> (a head is added when missing); NULL
 * when text is not card HTML or on ENOMEM. */
char *cdsh_tavern_card_document_dup(const char *text);

#endif
