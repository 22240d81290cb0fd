/* cmd_skills.c — `cdsh skills list` and `cdsh skills show NAME`: the skills
 * the model can load, as the plugins a profile enables register them. */
#include "cli/cmd_skills.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/cli.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: cdsh skills list [--agent A] [--profile NAME] [--json]\n"
                 "       cdsh skills show NAME [--agent A] [--profile NAME] [--json]\n"
                 "\n"
                 "list prints every skill the model may load (name, description, when to use);\n"
                 "show prints one skill's body exactly as the model receives it.\n"
                 "\n"
                 "Options:\n"
                 "  --agent A       the skills agent scope A sees\n"
                 "  --profile NAME  profile in $CDSH_HOME/profiles (default \"default\")\n"
                 "  --json          list: [{name, description, whenToUse?, invocation, source,\n"
                 "                  provider, resourceBase?}]; show: the same plus content,\n"
                 "                  path? and metadata?\n"
                 "  -h, --help      show this help\n");
}

int cdsh_cmd_skills(int argc, char **argv)
{
    static const char *const actions[] = {"list", "show", NULL};
    cdsh_cli_opts o;
    int action = 0, rc = cdsh_cli_action("skills", argc, argv, actions, usage, &action);
    bool show = action == 1;
    if (rc < 0)
        rc = cdsh_cli_parse_opts("skills", argc, argv, 1, show ? 1 : 0, usage, &o);
    if (rc >= 0)
        return rc;
    if (show && o.nargs != 1) {
        fprintf(stderr, "cdsh skills: show needs a skill name\n");
        return 2;
    }
    cdsh_host *host = NULL;
    cdsh_profile *profile = NULL;
    if (cdsh_cli_host_open("skills", o.profile, &host, &profile))
        return 1;
    cdsh_scope *scope = o.agent ? cdsh_scope_new(o.agent, NULL) : NULL;
    cdsh_skills *skills = cdsh_host_skills(host);
    rc = 0;
    if (show) {
        json_t *sk = cdsh_skills_info_dup(skills, scope, o.args[0]);
        char *body = cdsh_skills_render_dup(skills, scope, o.args[0]);
        if (!sk) {
            fprintf(stderr, "cdsh skills: unknown skill \"%s\" (see `cdsh skills list`)\n",
                    o.args[0]);
            rc = 1;
        } else if (o.json) {
            cdsh_cli_print_json(stdout, sk);
        } else {
            printf("%s\n", body);
        }
        free(body);
        json_decref(sk);
    } else {
        json_t *list = cdsh_skills_list(skills, scope);
        if (o.json) {
            cdsh_cli_print_json(stdout, list);
        } else if (json_array_size(list) == 0) {
            printf("no skills (the enabled plugins register none)\n");
        } else {
            size_t i;
            json_t *s;
            json_array_foreach(list, i, s) {
                char buf[128];
                const char *when = json_string_value(json_object_get(s, "whenToUse"));
                printf("%s  %s%s%s  [%s]\n", json_string_value(json_object_get(s, "name")),
                       cdsh_cli_summary(json_string_value(json_object_get(s, "description")), buf,
                                        sizeof buf, 72),
                       when ? " — when: " : "", when ? when : "",
                       json_string_value(json_object_get(s, "source")));
            }
        }
        json_decref(list);
    }
    cdsh_scope_unref(scope);
    cdsh_host_free(host);
    cdsh_profile_free(profile);
    return rc;
}
