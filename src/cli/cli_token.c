/* cli_token.c — tokens from a file, stdin or the environment, and scrubbing
 * a token given on the command line out of argv (cli_token.h). */
#include "cli/cli_token.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"

#define TOKEN_MAX 4096

char *cdsh_cli_token_take_arg(char *optarg)
{
    if (!optarg)
        return NULL;
    char *copy = strdup(optarg);
    /* The argument strings are the kernel's copy of the command line:
     * overwriting them changes what /proc/PID/cmdline (and ps) show. */
    size_t n = strlen(optarg);
    memset(optarg, '*', n > 3 ? 3 : n);
    if (n > 3)
        memset(optarg + 3, '\0', n - 3);
    return copy;
}

static char *read_stdin_line(void)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0) {
        free(line);
        return strdup("");
    }
    return line;
}

/* Reads a token from path ("-": stdin): the first line without its line
 * ending; 1..4096 bytes, no NUL or control characters. Owned, or NULL with
 * a message printed to stderr prefixed with `who` ("cdsh web"). */
static char *cdsh_cli_token_read_file(const char *who, const char *path)
{
    char *text = NULL;
    if (strcmp(path, "-") == 0) {
        text = read_stdin_line();
    } else {
        cdsh_error err = {0};
        if (cdsh_fs_read_file(path, TOKEN_MAX + 2, &text, NULL, &err) != 0) {
            fprintf(stderr, "%s: cannot read the token file: %s\n", who, err.message);
            return NULL;
        }
    }
    if (!text) {
        fprintf(stderr, "%s: out of memory\n", who);
        return NULL;
    }
    text[strcspn(text, "\r\n")] = '\0';
    size_t n = strlen(text);
    bool clean = n > 0 && n <= TOKEN_MAX;
    for (size_t i = 0; clean && i < n; i++)
        clean = (unsigned char)text[i] >= 0x20 && text[i] != 0x7f;
    if (!clean) {
        fprintf(stderr,
                "%s: the token in %s must be one line of 1 to %d printable characters\n", who,
                strcmp(path, "-") == 0 ? "stdin" : path, TOKEN_MAX);
        free(text);
        return NULL;
    }
    return text;
}

char *cdsh_cli_token_resolve(const char *who, char *arg_value, const char *file,
                             const char *env_name, int *failed)
{
    *failed = 0;
    if (arg_value && file) {
        fprintf(stderr, "%s: give --token or --token-file, not both\n", who);
        free(arg_value);
        *failed = 1;
        return NULL;
    }
    if (arg_value)
        return arg_value;
    if (file) {
        char *t = cdsh_cli_token_read_file(who, file);
        *failed = t == NULL;
        return t;
    }
    const char *env = env_name ? getenv(env_name) : NULL;
    if (env && *env) {
        char *t = strdup(env);
        *failed = t == NULL;
        return t;
    }
    return NULL;
}
