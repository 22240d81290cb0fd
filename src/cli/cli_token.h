/* cli_token.h — access tokens for the command line without putting them in
 * argv (where `ps` and /proc/PID/cmdline show them to every local user):
 * `--token-file FILE` (`-`: the first line of stdin), an environment
 * variable, or — still accepted — `--token T`, whose bytes are overwritten
 * in place as soon as it is read. docs/web.md, docs/mcp.md. */
#ifndef CDSH_CLI_TOKEN_H
#define CDSH_CLI_TOKEN_H

/* Overwrites a secret option argument in argv's own memory (so the kernel's
 * copy of the command line shows "***" instead) and returns an owned copy
 * of it, or NULL on ENOMEM. */
char *cdsh_cli_token_take_arg(char *optarg);

/* The token for a command: from --token (arg_value, already taken with
 * cdsh_cli_token_take_arg), else --token-file, else the environment
 * variable env_name (non-empty); NULL when none is given (the caller then
 * picks its default). Giving both --token and --token-file is an error
 * (*failed set, message on stderr). Owned. */
char *cdsh_cli_token_resolve(const char *who, char *arg_value, const char *file,
                             const char *env_name, int *failed);

#endif
