/* SPDX-License-Identifier: MIT */
/*
 * The Redis ACL rule for the lock user, built from what lib/ actually sends:
 *   connection   HELLO (RESP3), AUTH, SELECT (db), PING
 *   lock scripts EVAL, EVALSHA, SCRIPT LOAD; inside them SET, GET, INCR, PEXPIRE, DEL,
 *                PUBLISH (release channel) on keys <prefix>{<resource>}[...]
 *   waiters      SUBSCRIBE, UNSUBSCRIBE on channels <prefix>{<resource>}:released
 *   safety check INFO (inside a script; maxmemory_policy, aof_enabled)
 *   fair waiting ZADD, ZREM, ZRANK, ZRANGE, ZRANGEBYSCORE, ZREMRANGEBYSCORE, PEXPIREAT (and
 *                TIME, INCR, GET, SET) on <prefix>{<resource>}:q, :qx, :qseq (fair = on)
 * Scripts run with the caller's permissions, so the commands they call are listed too.
 * Not listed: CONFIG (appendfsync is then not checked; add +config|get to check it).
 */
#include "elkfw/acl.h"

#include <stdio.h>

#define ELKFW_ACL_COMMANDS                                                                         \
    "-@all +hello +auth +select +ping +eval +evalsha +script|load +set +get +exists +incr "        \
    "+pexpire +del +publish +time "                                                                \
    "+subscribe +unsubscribe +info "                                                               \
    "+zadd +zrem +zrank +zrange +zrangebyscore +zremrangebyscore +pexpireat"

int elkfw_acl_line(const elkfw_conf_t *c, const char *user, char *out, size_t cap)
{
    return snprintf(out, cap, "ACL SETUSER %s reset on >PASSWORD " ELKFW_ACL_COMMANDS " ~%s* &%s*",
                    user != NULL && user[0] != '\0' ? user : "elk", c->key_prefix, c->key_prefix);
}
