/* SPDX-License-Identifier: MIT */
/*
 * The Lua scripts the lease engine runs on every Redis node, as public constants.
 *
 * They are public because other code must agree with them byte for byte: the
 * simulated Redis in port/sim runs them natively (matched by SHA1), and an operator
 * may preload them with SCRIPT LOAD. The text is exactly what is sent with EVAL and
 * what the SHA1 (as Redis computes it for EVALSHA) covers: each script ends with a
 * single "\n". tests/unit/test_lock_scripts.c recomputes every SHA1 from the text.
 *
 * Key layout (one hash tag, so all keys of a resource land in one cluster slot):
 *   lock key      <prefix>{<resource>}
 *   fence counter <prefix>{<resource>}:fence      (never expires)
 *   channel       <prefix>{<resource>}:released   (pub/sub, not a key)
 *
 * Every script replies with an integer; no script ever returns an error on its own
 * (a Redis error reply means the server refused to run it: NOSCRIPT, OOM, READONLY...).
 * Lock values are opaque strings "<gateway id>:<32 hex digits>".
 */
#ifndef ELK_LOCK_SCRIPTS_H
#define ELK_LOCK_SCRIPTS_H

/*
 * ACQUIRE: take the lease if free; with fencing, bump the node's counter.
 *   KEYS[1] lock key          KEYS[2] fence counter key
 *   ARGV[1] lock value        ARGV[2] ttl in ms (decimal)   ARGV[3] "1" fencing on, "0" off
 * Returns: the counter after INCR (>= 1) when the lease was taken with fencing on;
 *          0 when taken with fencing off (the counter is not touched);
 *          -1 when the key exists (held by another holder, or by an older value of ours).
 * Usage: EVALSHA <sha> 2 <lock key> <fence key> <value> <ttl> <0|1>
 */
#define ELK_LOCK_SCRIPT_ACQUIRE                                                                    \
    "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"                           \
    "  if ARGV[3] == '1' then\n"                                                                   \
    "    return redis.call('INCR', KEYS[2])\n"                                                     \
    "  end\n"                                                                                      \
    "  return 0\n"                                                                                 \
    "end\n"                                                                                        \
    "return -1\n"
#define ELK_LOCK_SCRIPT_ACQUIRE_SHA1 "e989a5eba400ab808255f92d6a124c4c232cc057"

/*
 * EXTEND (renewal): compare-and-extend.
 *   KEYS[1] lock key
 *   ARGV[1] lock value        ARGV[2] new ttl in ms (decimal), counted from now on the server
 * Returns: 1 when the key held ARGV[1] and its expiry was reset to ARGV[2] ms;
 *          0 when the key is absent or holds another value (nothing changed).
 * Usage: EVALSHA <sha> 1 <lock key> <value> <ttl>
 */
#define ELK_LOCK_SCRIPT_EXTEND                                                                     \
    "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"                                              \
    "  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"                                           \
    "end\n"                                                                                        \
    "return 0\n"
#define ELK_LOCK_SCRIPT_EXTEND_SHA1 "3a32323a05c08607e6bc7842cfeea9552d0b61f5"

/*
 * RELEASE: compare-and-delete, then wake waiters.
 *   KEYS[1] lock key
 *   ARGV[1] lock value        ARGV[2] release channel name (<prefix>{<resource>}:released)
 * Returns: 1 when the key held ARGV[1]; it was deleted and ARGV[1] was PUBLISHed on ARGV[2];
 *          0 when the key is absent or holds another value (nothing deleted, nothing published).
 * Usage: EVALSHA <sha> 1 <lock key> <value> <channel>
 */
#define ELK_LOCK_SCRIPT_RELEASE                                                                    \
    "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"                                              \
    "  redis.call('DEL', KEYS[1])\n"                                                               \
    "  redis.call('PUBLISH', ARGV[2], ARGV[1])\n"                                                  \
    "  return 1\n"                                                                                 \
    "end\n"                                                                                        \
    "return 0\n"
#define ELK_LOCK_SCRIPT_RELEASE_SHA1 "30a131e10e5f46d6264cd277c30b25a24d414107"

/*
 * COMMIT (Redlock fencing, second round): raise the node's counter to the token.
 *   KEYS[1] lock key          KEYS[2] fence counter key
 *   ARGV[1] lock value        ARGV[2] token (decimal, the max over the acquire quorum)
 * Returns: -1 when the key does not hold ARGV[1] (nothing changed);
 *          otherwise the counter after the commit, max(counter, token) (>= token),
 *          a missing counter counting as 0.
 * Usage: EVALSHA <sha> 2 <lock key> <fence key> <value> <token>
 */
#define ELK_LOCK_SCRIPT_COMMIT                                                                     \
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then\n"                                              \
    "  return -1\n"                                                                                \
    "end\n"                                                                                        \
    "local c = tonumber(redis.call('GET', KEYS[2]) or '0')\n"                                      \
    "local t = tonumber(ARGV[2])\n"                                                                \
    "if t > c then\n"                                                                              \
    "  redis.call('SET', KEYS[2], ARGV[2])\n"                                                      \
    "  return t\n"                                                                                 \
    "end\n"                                                                                        \
    "return c\n"
#define ELK_LOCK_SCRIPT_COMMIT_SHA1 "284393303295f650049f99df650592d84dda614f"

/*
 * SAFETY: the server settings the safety check needs, read with INFO (no CONFIG
 * permission; the whole INFO text would not fit a pool block, so the script keeps only
 * the two fields). Reply: {maxmemory_policy, aof_enabled}, "" for a field not found.
 * Needs +info in the user's ACL (docs/redis-acl.md). Sent once per connection with EVAL.
 * Usage: EVAL <script> 0
 */
#define ELK_LOCK_SCRIPT_SAFETY                                                                     \
    "local m = redis.call('INFO', 'memory')\n"                                                     \
    "local p = redis.call('INFO', 'persistence')\n"                                                \
    "return {string.match(m, 'maxmemory_policy:([%w%-]+)') or '', string.match(p, "                \
    "'aof_enabled:(%d)') or ''}\n"
/* Sent with EVAL only; the simulated Redis (port/sim) knows the script by it too. */
#define ELK_LOCK_SCRIPT_SAFETY_SHA1 "d206dc35c4d61604dd323b5d6e07c678d853f472"

/* Reply values of the scripts, by name. */
#define ELK_LOCK_ACQUIRE_BUSY (-1)    /* ACQUIRE: key exists */
#define ELK_LOCK_COMMIT_NOT_HELD (-1) /* COMMIT: value no longer stands */

/* Key suffixes after "<prefix>{<resource>}". */
#define ELK_LOCK_FENCE_SUFFIX ":fence"
#define ELK_LOCK_CHANNEL_SUFFIX ":released"

#endif /* ELK_LOCK_SCRIPTS_H */
