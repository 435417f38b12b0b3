/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* strtok_r */
#include "acl_rules.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elkfw/acl.h"
#include "elkfw/conf.h"

static char acl_text[600];
static const char *acl_rules[40];

const char *const *elk_it_least_privilege_rules(const char *prefix, const char *user)
{
    elkfw_conf_t *conf = calloc(1, sizeof *conf);
    size_t n = 0;
    bool after_password = false;
    char *save = NULL, *tok;
    if (conf == NULL) {
        abort();
    }
    elkfw_conf_defaults(conf);
    snprintf(conf->key_prefix, sizeof conf->key_prefix, "%s", prefix);
    elkfw_acl_line(conf, user, acl_text, sizeof acl_text);
    free(conf);
    /* "ACL SETUSER elk reset on >PASSWORD <rules...>": the rules, after the password */
    for (tok = strtok_r(acl_text, " ", &save); tok != NULL; tok = strtok_r(NULL, " ", &save)) {
        if (after_password && n + 1 < sizeof acl_rules / sizeof acl_rules[0]) {
            acl_rules[n++] = tok;
        }
        after_password = after_password || strcmp(tok, ">PASSWORD") == 0;
    }
    acl_rules[n] = NULL;
    return acl_rules;
}

void elk_it_least_privilege_fleet(elk_tf_options_t *o, size_t count)
{
    elk_tf_options_defaults(o);
    o->count = count;
    o->acl_user = IT_USER;
    o->acl_password = IT_PASSWORD;
    o->acl_rules = elk_it_least_privilege_rules("it:", IT_USER);
}
