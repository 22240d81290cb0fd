/* test_env_policy.c — the one child-environment policy: the names and values
 * it keeps from children (the leaks issue 23 measured: GITHUB_PAT,
 * DATABASE_URL, *_AUTH, *CREDENTIALS), what it must let through (PATH,
 * GIT_AUTHOR_NAME, SSH_AUTH_SOCK), and building a child's environment with
 * the configuration's explicit names and values on top. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/env_policy.h"

static void expect(const char *entry, cdsh_env_verdict want)
{
    cdsh_env_verdict got = cdsh_env_policy_judge(entry);
    if (got != want)
        fail_msg("%s: got %s, want %s", entry, cdsh_env_policy_verdict_name(got),
                 cdsh_env_policy_verdict_name(want));
}

static void secret_names_are_kept_from_children(void **state)
{
    (void)state;
    const char *names[] = {
        "GITHUB_PAT=x",        "GH_PAT=x",         "NPM_CONFIG__AUTH=x", "DOCKER_AUTH_CONFIG=x",
        "X_AUTH=x",            "Authorization=x",  "OAUTH_CLIENT=x",     "AWS_CREDENTIALS=x",
        "GOOGLE_APPLICATION_CREDENTIALS=/k.json",  "AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=x",
        "AWS_SESSION_TOKEN=x", "AZURE_CLIENT_SECRET=x", "OPENAI_API_KEY=x", "ANTHROPIC_API_KEY=x",
        "HF_TOKEN=x",          "VAULT_TOKEN=x",    "PGPASSWORD=x",       "MYSQL_PWD=x",
        "REDIS_PASS=x",        "DB_PW=x",          "SENTRY_DSN=x",       "GPG_PASSPHRASE=x",
        "SESSION_COOKIE=x",    "API_JWT=x",        "my_bearer=x",        "DATABASE_URL=postgres://h/db",
        "database_url=x",      "monkey=x",         "TOKENIZERS_PARALLELISM=false",
        "Key",                 "db_password",      "GIT_CONFIG_KEY_0=x",
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        expect(names[i], CDSH_ENV_SECRET_NAME);
    assert_true(cdsh_env_policy_name_is_secret("GITHUB_PAT"));
    assert_true(cdsh_env_policy_name_is_secret("X_AUTH=value-ignored"));
    assert_false(cdsh_env_policy_name_is_secret("HTTP_PROXY=http://u:p@h"));
    assert_false(cdsh_env_policy_name_is_secret(NULL));
}

static void cdsh_and_dsh_settings_stay_behind(void **state)
{
    (void)state;
    expect("CDSH_HOME=/h", CDSH_ENV_OWN);
    expect("cdsh_web_token=x", CDSH_ENV_OWN);
    expect("DSH_HOME=/h", CDSH_ENV_OWN);
    expect("XDSH_X=1", CDSH_ENV_PASS); /* a prefix, not a substring */
}

static void values_with_credentials_stay_behind(void **state)
{
    (void)state;
    const char *values[] = {
        "HTTP_PROXY=http://user:pw@proxy:3128",
        "PIP_INDEX_URL=https://__token__:pypi-AgEI@pypi.example/simple",
        "REPO=https://x-access-token@github.com/o/r.git",
        "MIRRORS=http://a.example/ https://u:p@b.example/x",
        "LIST=a,redis://:pw@cache:6379/0",
        "OPENAI=sk-proj-0123456789abcdefABCDEF",
        "GH=ghp_0123456789abcdefghijABCDEFGHIJ012345",
        "FINE=github_pat_11AAAAAAA0123456789_abcdefghij",
        "SLACK=xoxb-1234567890-abcdefghij",
        "AWSID=AKIAIOSFODNN7EXAMPLE0",
        "GOOGLE=AIzaSyA-0123456789abcdefghijklmnop",
        "HF=hf_0123456789abcdefghijklmn",
        "J=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
        "PEM=-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----",
    };
    for (size_t i = 0; i < sizeof values / sizeof *values; i++)
        expect(values[i], CDSH_ENV_SECRET_VALUE);
}

static void ordinary_variables_pass(void **state)
{
    (void)state;
    const char *plain[] = {
        "PATH=/usr/bin:/bin",
        "HOME=/root",
        "PWD=/work",
        "OLDPWD=/",
        "LANG=C.UTF-8",
        "TERM=xterm",
        "K_E_Y=1",
        "PATH=/token/key",
        "LD_LIBRARY_PATH=/lib",
        "GIT_AUTHOR_NAME=Ada",
        "GIT_AUTHOR_EMAIL=ada@example.org",
        "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1",
        "XAUTHORITY=/run/user/0/xauth",
        "HTTP_PROXY=http://proxy:3128",
        "NO_PROXY=localhost,127.0.0.1",
        "GIT_REMOTE=git@github.com:o/r.git",
        "EMAIL=ada@example.org",
        "URL=https://example.org/a@b", /* '@' in the path, not userinfo */
        "NOTE=see sk-",                /* a prefix alone is no key */
        "SPACE_NAME=sk-a",
        "EMPTY=",
        "BYPASS_CACHE=1",
        "=weird",
    };
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        expect(plain[i], CDSH_ENV_PASS);
    expect(NULL, CDSH_ENV_PASS);
}

static bool has(char **env, const char *entry)
{
    for (size_t i = 0; env[i]; i++)
        if (strcmp(env[i], entry) == 0)
            return true;
    return false;
}

static bool names(char **env, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; env[i]; i++)
        if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
            return true;
    return false;
}

static void child_env_keeps_named_and_set_entries(void **state)
{
    (void)state;
    const char *parent[] = {"PATH=/bin",   "GITHUB_PAT=p", "DATABASE_URL=postgres://u:p@h/d",
                            "CDSH_HOME=/h", "LANG=C",       "KEEP=old",
                            "noequals",     "NEEDED_TOKEN=t", NULL};
    const char *allow[] = {"NEEDED_TOKEN", NULL};
    const char *set[] = {"KEEP=new", "GITHUB_PAT=from-config", "EXTRA=1", "EXTRA=2", NULL};
    cdsh_error err = {0};
    char **env = cdsh_env_policy_child_env_new(parent, allow, set, &err);
    assert_non_null(env);
    assert_true(has(env, "PATH=/bin"));
    assert_true(has(env, "LANG=C"));
    assert_true(has(env, "NEEDED_TOKEN=t"));
    assert_true(has(env, "KEEP=new"));
    assert_false(has(env, "KEEP=old"));
    assert_true(has(env, "GITHUB_PAT=from-config"));
    assert_false(has(env, "GITHUB_PAT=p"));
    assert_true(has(env, "EXTRA=2"));
    assert_false(has(env, "EXTRA=1"));
    assert_false(names(env, "DATABASE_URL"));
    assert_false(names(env, "CDSH_HOME"));
    assert_false(has(env, "noequals"));
    size_t n = 0;
    while (env[n])
        n++;
    assert_int_equal(n, 6);
    cdsh_env_policy_env_free(env);

    const char *bad[] = {"NOEQUALS", NULL};
    assert_null(cdsh_env_policy_child_env_new(parent, NULL, bad, &err));
    assert_int_equal(err.rc, CDSH_EINVAL);
    assert_string_equal(err.code, "BAD_ENV");
    const char *noname[] = {"=x", NULL};
    assert_null(cdsh_env_policy_child_env_new(parent, NULL, noname, &err));
    assert_string_equal(err.code, "BAD_ENV");
}

static void child_env_defaults_to_environ(void **state)
{
    (void)state;
    setenv("T23_PLAIN", "1", 1);
    setenv("T23_PAT", "leak", 1);
    char **env = cdsh_env_policy_child_env_new(NULL, NULL, NULL, NULL);
    assert_non_null(env);
    assert_true(has(env, "T23_PLAIN=1"));
    assert_false(names(env, "T23_PAT"));
    cdsh_env_policy_env_free(env);
    unsetenv("T23_PLAIN");
    unsetenv("T23_PAT");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(secret_names_are_kept_from_children),
        cmocka_unit_test(cdsh_and_dsh_settings_stay_behind),
        cmocka_unit_test(values_with_credentials_stay_behind),
        cmocka_unit_test(ordinary_variables_pass),
        cmocka_unit_test(child_env_keeps_named_and_set_entries),
        cmocka_unit_test(child_env_defaults_to_environ),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
