/* cmd_config.c — `cdsh config`: every built-in plugin's settings with their
 * defaults and current values (list), one value (get), and edits of a
 * profile (set, unset, enable, disable). Values are validated against the
 * plugin's schema before the profile is written. No plugin is loaded here. */
#include "cli/cmd_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/cli.h"
#include "host/config.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: cdsh config list [--json]\n"
            "       cdsh config get PLUGIN[.KEY] [--json]\n"
            "       cdsh config set PLUGIN.KEY VALUE\n"
            "       cdsh config unset PLUGIN.KEY\n"
            "       cdsh config enable PLUGIN | disable PLUGIN\n"
            "       (every action also takes --profile NAME)\n"
            "\n"
            "Settings live in profiles, $CDSH_HOME/profiles/<name>.yaml (default \"default\").\n"
            "list prints every setting of every built-in plugin with its type, default and\n"
            "current value; set checks VALUE against the plugin's schema before saving\n"
            "(strings are taken literally, other types are read as JSON: 4, true, [\"a\"]).\n"
            "\n"
            "Options:\n"
            "  --profile NAME  the profile to read or edit\n"
            "  --json          list: {profile, path, plugins:[{name, description, enabled,\n"
            "                  fields:[{key, type, default?, current?, description?, enum?,\n"
            "                  minimum?, maximum?}], error?}]}; get: the value as JSON\n"
            "  -h, --help      show this help\n");
}

static json_t *schema_of(const cdsh_plugin_def *def)
{
    return def->config_schema ? json_loads(def->config_schema, 0, NULL)
                              : json_pack("{s:s}", "type", "object");
}

/* Resolved config of def under profile; NULL with err when invalid. */
static json_t *current_config(const cdsh_plugin_def *def, const cdsh_profile *profile,
                              cdsh_error *err)
{
    json_t *schema = schema_of(def), *out = NULL;
    if (schema)
        cdsh_config_resolve(schema, cdsh_profile_config(profile, def->name), &out, NULL, err);
    json_decref(schema);
    return out;
}

static const char *known_plugins(char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const cdsh_plugin_def *const *d = cdsh_cli_host_plugins(); *d && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? ", " : "", (*d)->name);
    return buf;
}

/* Splits "plugin.key"; *def NULL (reported) when the plugin is unknown. */
static const cdsh_plugin_def *plugin_of(const char *arg, char *name, size_t size, const char **key)
{
    size_t n = strcspn(arg, ".");
    snprintf(name, size, "%.*s", (int)n, arg);
    *key = arg[n] ? arg + n + 1 : NULL;
    const cdsh_plugin_def *def = cdsh_cli_host_plugin_find(name);
    if (!def) {
        char list[512];
        fprintf(stderr, "cdsh config: unknown plugin \"%s\"; plugins: %s\n", name,
                known_plugins(list, sizeof list));
    }
    return def;
}

static void print_value(const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    fputs(s ? s : "?", stdout);
    free(s);
}

static int do_list(const cdsh_profile *profile, int json)
{
    json_t *plugins = json_array();
    for (const cdsh_plugin_def *const *d = cdsh_cli_host_plugins(); *d; d++) {
        cdsh_error err = {0};
        json_t *schema = schema_of(*d);
        json_t *current = current_config(*d, profile, &err);
        json_t *fields = cdsh_config_fields(schema);
        size_t i;
        json_t *f;
        json_array_foreach(fields, i, f) {
            const char *key = json_string_value(json_object_get(f, "key"));
            json_t *cur = current
                              ? cdsh_config_path_get(current, key)
                              : cdsh_config_path_get(cdsh_profile_config(profile, (*d)->name), key);
            if (cur)
                json_object_set(f, "current", cur);
        }
        json_t *p = json_pack("{s:s, s:s, s:b, s:o}", "name", (*d)->name, "description",
                              (*d)->description ? (*d)->description : "", "enabled",
                              cdsh_host_plugin_enabled(*d, profile), "fields", fields);
        if (!current)
            json_object_set_new(p, "error", json_string(err.message));
        json_array_append_new(plugins, p);
        json_decref(current);
        json_decref(schema);
    }
    if (json) {
        json_t *doc = json_pack("{s:s, s:s, s:O}", "profile", cdsh_profile_name(profile), "path",
                                cdsh_profile_path(profile), "plugins", plugins);
        cdsh_cli_print_json(stdout, doc);
        json_decref(doc);
        json_decref(plugins);
        return 0;
    }
    printf("profile %s (%s)\n", cdsh_profile_name(profile), cdsh_profile_path(profile));
    size_t i, j;
    json_t *p, *f;
    json_array_foreach(plugins, i, p) {
        printf("\n%s (%s) — %s\n", json_string_value(json_object_get(p, "name")),
               json_is_true(json_object_get(p, "enabled")) ? "enabled" : "disabled",
               json_string_value(json_object_get(p, "description")));
        if (json_object_get(p, "error"))
            printf("  ! %s\n", json_string_value(json_object_get(p, "error")));
        json_t *fields = json_object_get(p, "fields");
        if (json_array_size(fields) == 0)
            printf("  (no settings)\n");
        json_array_foreach(fields, j, f) {
            printf("  %s  %s  default ", json_string_value(json_object_get(f, "key")),
                   json_string_value(json_object_get(f, "type")));
            json_t *dflt = json_object_get(f, "default"), *cur = json_object_get(f, "current");
            if (dflt)
                print_value(dflt);
            else
                fputs("(none)", stdout);
            fputs("  current ", stdout);
            if (cur)
                print_value(cur);
            else
                fputs("(unset)", stdout);
            const char *desc = json_string_value(json_object_get(f, "description"));
            if (desc)
                printf("  %s", desc);
            putchar('\n');
        }
    }
    json_decref(plugins);
    return 0;
}

static int do_get(const cdsh_profile *profile, const char *arg)
{
    char name[128];
    const char *key;
    const cdsh_plugin_def *def = plugin_of(arg, name, sizeof name, &key);
    if (!def)
        return 1;
    cdsh_error err = {0};
    json_t *current = current_config(def, profile, &err);
    if (!current) {
        fprintf(stderr, "cdsh config: plugin \"%s\": %s\n", name, err.message);
        return 1;
    }
    json_t *schema = schema_of(def);
    int rc = 0;
    if (key && !cdsh_config_schema_at(schema, key)) {
        fprintf(stderr, "cdsh config: unknown config key \"%s\" for plugin \"%s\"\n", key, name);
        rc = 1;
    } else {
        json_t *v = key ? cdsh_config_path_get(current, key) : current;
        print_value(v ? v : json_null());
        putchar('\n');
    }
    json_decref(schema);
    json_decref(current);
    return rc;
}

static int do_set(cdsh_profile *profile, const char *arg, const char *text)
{
    char name[128];
    const char *key;
    const cdsh_plugin_def *def = plugin_of(arg, name, sizeof name, &key);
    if (!def)
        return 1;
    if (!key || !*key) {
        fprintf(stderr, "cdsh config: give a key: %s.KEY\n", name);
        return 2;
    }
    json_t *schema = schema_of(def), *value = NULL;
    cdsh_error err = {0};
    int rc = 0;
    if (text && cdsh_config_parse_value(schema, key, text, &value, &err) != 0) {
        fprintf(stderr, "cdsh config: plugin \"%s\": %s\n", name, err.message);
        rc = 1;
        goto done;
    }
    if (!text && !cdsh_config_schema_at(schema, key)) {
        fprintf(stderr, "cdsh config: unknown config key \"%s\" for plugin \"%s\"\n", key, name);
        rc = 1;
        goto done;
    }
    if (cdsh_profile_set_config(profile, name, key, value, &err) != 0) {
        value = NULL; /* taken */
        fprintf(stderr, "cdsh config: %s\n", err.message);
        rc = 1;
        goto done;
    }
    value = NULL;
    json_t *current = current_config(def, profile, &err);
    if (!current) {
        fprintf(stderr, "cdsh config: plugin \"%s\": %s\n", name, err.message);
        rc = 1;
        goto done;
    }
    json_decref(current);
    if (cdsh_profile_save(profile, &err) != 0) {
        fprintf(stderr, "cdsh config: %s\n", err.message);
        rc = 1;
        goto done;
    }
    if (text)
        printf("%s.%s = %s (profile %s)\n", name, key, text, cdsh_profile_name(profile));
    else
        printf("%s.%s reset to its default (profile %s)\n", name, key, cdsh_profile_name(profile));
done:
    json_decref(value);
    json_decref(schema);
    return rc;
}

static int do_enable(cdsh_profile *profile, const char *arg, bool on)
{
    char name[128];
    const char *key;
    const cdsh_plugin_def *def = plugin_of(arg, name, sizeof name, &key);
    if (!def)
        return 1;
    if (key) {
        fprintf(stderr, "cdsh config: enable/disable take a plugin name, not a key\n");
        return 2;
    }
    cdsh_error err = {0};
    if (cdsh_profile_set_enabled(profile, name, on) != 0 || cdsh_profile_save(profile, &err)) {
        fprintf(stderr, "cdsh config: %s\n", err.message[0] ? err.message : "out of memory");
        return 1;
    }
    printf("%s %s (profile %s)\n", name, on ? "enabled" : "disabled", cdsh_profile_name(profile));
    return 0;
}

int cdsh_cmd_config(int argc, char **argv)
{
    static const char *const actions[] = {"list", "get", "set", "unset", "enable", "disable", NULL};
    static const int nargs[] = {0, 1, 2, 1, 1, 1};
    cdsh_cli_opts o;
    int action = 0, rc = cdsh_cli_action("config", argc, argv, actions, usage, &action);
    int want = nargs[action];
    if (rc < 0)
        rc = cdsh_cli_parse_opts("config", argc, argv, 0, want, usage, &o);
    if (rc >= 0)
        return rc;
    if (o.nargs != want) {
        fprintf(stderr, "cdsh config: %s needs %d argument%s (try `cdsh config --help`)\n", argv[1],
                want, want == 1 ? "" : "s");
        return 2;
    }
    bool edit = action >= 2; /* set, unset, enable, disable */
    cdsh_profile *profile = NULL;
    cdsh_fs_lock *lock = NULL;
    if (cdsh_cli_profile_open("config", o.profile, edit ? &lock : NULL, &profile))
        return 1;
    switch (action) {
    case 0: rc = do_list(profile, o.json); break;
    case 1: rc = do_get(profile, o.args[0]); break;
    case 2: rc = do_set(profile, o.args[0], o.args[1]); break;
    case 3: rc = do_set(profile, o.args[0], NULL); break;
    default: rc = do_enable(profile, o.args[0], action == 4); break;
    }
    cdsh_profile_free(profile);
    cdsh_fs_lock_close(lock);
    return rc;
}
