/* SPDX-License-Identifier: MIT */
/*
 * The least-privilege Redis ACL rule for elkd's lock user (docs/redis-acl.md).
 */
#ifndef ELKFW_ACL_H
#define ELKFW_ACL_H

#include <stddef.h>

#include "elkfw/conf.h"

/* Write into out (cap bytes, NUL-terminated, cut if short) the line
 *   ACL SETUSER <user> reset on >PASSWORD -@all +<each command elkd sends> ~<prefix>* &<prefix>*
 * for c's key_prefix; user NULL or "" means "elk". PASSWORD is a placeholder: elkd never
 * prints a secret. Returns the length the whole line needs (as snprintf). */
int elkfw_acl_line(const elkfw_conf_t *c, const char *user, char *out, size_t cap);

#endif /* ELKFW_ACL_H */
