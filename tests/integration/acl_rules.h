/* SPDX-License-Identifier: MIT */
/* The lock user's ACL rules for the integration tests: exactly what `elkd --print-acl`
 * prints for a key prefix (docs/redis-acl.md), not +@all, so that a command the engine
 * needs and the rule lacks fails the tests that run as that user. */
#ifndef ELK_TEST_ACL_RULES_H
#define ELK_TEST_ACL_RULES_H

#include <stddef.h>

#include "fleet.h"

/* The lock user of the tests that run as one, and its password. */
#define IT_USER "elk"
#define IT_PASSWORD "elk-it-secret"

/* The rules (after the password) of the ACL line for user and key prefix, NULL-terminated;
 * valid until the next call (static storage of this file). */
const char *const *elk_it_least_privilege_rules(const char *prefix, const char *user);

/* Fleet options for count servers whose lock user is IT_USER with the rules above for the
 * key prefix "it:" (the rest: elk_tf_options_defaults). */
void elk_it_least_privilege_fleet(elk_tf_options_t *o, size_t count);

#endif
