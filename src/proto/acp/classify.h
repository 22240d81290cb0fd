/* classify.h — the class of a failed ACP turn (digest §10, seed §8.4): a
 * billing or auth failure reported by the agent must never look like a
 * broken protocol. Pure functions; thread-safe. */
#ifndef CDSH_PROTO_ACP_CLASSIFY_H
#define CDSH_PROTO_ACP_CLASSIFY_H

/* Returns one of "INSUFFICIENT_FUNDS", "RATE_LIMITED", "UNAUTHORIZED",
 * "TIMEOUT", "PROTOCOL", "UNKNOWN" (static strings). The agent's text is
 * matched first, in that order (first match wins); then rc decides: a
 * CDSH_ETIMEDOUT is TIMEOUT; CDSH_EPROTO with err_code "BAD_RESPONSE",
 * CDSH_ECLOSED, or a JSON-RPC framing code (-32700, -32600, -32602) in the
 * message is PROTOCOL; anything else UNKNOWN. message and err_code may be
 * NULL. Status numbers (402, 429, 401, 403) match only as whole numbers. */
const char *cdsh_acp_classify_error(int rc, const char *err_code, const char *message);

#endif
