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
 * Key layout (one hash tag, so all keys of a resource land in one cluster slot; the fleet
 * marker is in another slot, which ACQUIRE and EXTEND touch too: edgelock's masters are
 * independent servers (Redlock), never one Redis Cluster, where those scripts would fail
 * with CROSSSLOT):
 *   lock key      <prefix>{<resource>}
 *   fence counter <prefix>{<resource>}:fence      (never expires)
 *   delay marker  <prefix>{<resource>}:delay      (lock_delay; expires ttl + lock_delay
 *                                                  after the last acquire or renewal)
 *   channel       <prefix>{<resource>}:released   (pub/sub, not a key)
 *   fleet marker  <prefix>marker                  (vote hygiene; never expires; its value
 *                                                  ends in "@<creation time, server ms>")
 *
 * ACQUIRE and EXTEND reply {result, server_us, marker_ms}, the others an integer (PROBE and SAFETY
 * an array of fields); no script ever returns an error on its own
 * (a Redis error reply means the server refused to run it: NOSCRIPT, OOM, READONLY...).
 * Lock values are opaque strings "<gateway id>:<32 hex digits>".
 */
#ifndef ELK_LOCK_SCRIPTS_H
#define ELK_LOCK_SCRIPTS_H

/*
 * ACQUIRE: take the lease if free and no lock-delay marker stands; with fencing, raise the
 * node's counter to the token; with a lock delay, leave a marker that outlives the lease by
 * it. Also reads the fleet marker (amnesia check), creating it when missing.
 *   KEYS[1] lock key          KEYS[2] fence counter key   KEYS[3] lock-delay marker key
 *   KEYS[4] fleet marker key (<prefix>marker: another hash slot than the others; the masters
 *           are independent servers, not a Redis Cluster, see the key layout above)
 *   ARGV[1] lock value        ARGV[2] ttl in ms (decimal)   ARGV[3] "1" fencing on, "0" off
 *   ARGV[4] lock delay in ms (decimal, "0": no marker is left)
 *   ARGV[5] the client's floor for the token, in us (decimal, "0": none): the highest server
 *           clock it knows in the fleet now (lock_hygiene.c), which covers a master whose
 *           clock runs ahead of this one's
 * Returns {result, server_us, marker_ms}: server_us is the server's TIME in microseconds
 *   (for the clock check, docs/design.md "Masters that restart or jump", and the token
 *   floor); marker_ms the fleet marker's creation time in server ms ("@<ms>" at the end of
 *   its value; 0 for a marker without it, i.e. written before this check existed; server_us
 *   / 1000 when this very call created it: docs/design.md "Masters that forget within a
 *   connection"); result is
 *          the token (>= 1) when the lease was taken with fencing on: max(counter + 1,
 *             server_us, ARGV[5]), also stored as the counter, so tokens keep growing with
 *             the servers' clocks even after the counter was lost (design.md "Fencing
 *             tokens across a fleet");
 *          0 when taken with fencing off (the counter is not touched);
 *          -1 when the key exists (held by another holder, or by an older value of ours);
 *          -2 when a lock-delay marker stands: a holder's lease ended without a release
 *             and lock_delay has not passed since it could last have been valid.
 * The counter is SET from a Lua number: Redis formats those with 17 significant digits
 * (exact below 2^53, about the year 2255 in microseconds), never with Lua's "%.14g"
 * (tostring, ..), which would round it; it is read back with tonumber, whatever the form.
 * The marker's ms (13 digits until the year 2286) are safe with "..".
 * A marker is honoured whatever this caller's own lock delay (ARGV[4]) is. Written tersely:
 * its EVAL is the longest request (ELK_LOCK_REQUEST_MAX), which a pool block must hold.
 * Usage: EVALSHA <sha> 4 <lock key> <fence key> <delay key> <marker key> <value> <ttl> <0|1>
 *        <delay> <floor>
 */
#define ELK_LOCK_SCRIPT_ACQUIRE                                                                    \
    "local c,k,a=redis.call,KEYS,ARGV\n"                                                           \
    "local t=c('TIME')\n"                                                                          \
    "local u=t[1]*1e6+t[2]\n"                                                                      \
    "local m=c('GET',k[4])\n"                                                                      \
    "if not m then m='@'..math.floor(u/1e3)c('SET',k[4],m)end\n"                                   \
    "local r={0,u,tonumber(m:match'@(%d+)$')or 0}\n"                                               \
    "if c('EXISTS',k[1])==1 then r[1]=-1\n"                                                        \
    "elseif c('EXISTS',k[3])==1 then r[1]=-2\n"                                                    \
    "else\n"                                                                                       \
    "c('SET',k[1],a[1],'PX',a[2])\n"                                                               \
    "if a[4]~='0' then c('SET',k[3],a[1],'PX',a[2]+a[4])end\n"                                     \
    "if a[3]=='1' then\n"                                                                          \
    "r[1]=math.max((tonumber(c('GET',k[2]))or 0)+1,u,tonumber(a[5])or 0)c('SET',k[2],r[1])\n"      \
    "end\n"                                                                                        \
    "end\n"                                                                                        \
    "return r\n"
#define ELK_LOCK_SCRIPT_ACQUIRE_SHA1 "e04069d85675d6c55cb835ec622dfec0e3ef4037"

/*
 * EXTEND (renewal): compare-and-extend; the lock-delay marker is pushed out with the key.
 * Reads the fleet marker as ACQUIRE does (creating it when missing).
 *   KEYS[1] lock key          KEYS[2] lock-delay marker key   KEYS[3] fleet marker key
 *   ARGV[1] lock value        ARGV[2] new ttl in ms (decimal), counted from now on the server
 *   ARGV[3] lock delay in ms ("0": the marker is not touched)
 * Returns {result, server_us, marker_ms} (the last two as for ACQUIRE); result is
 *          1 when the key held ARGV[1] and its expiry was reset to ARGV[2] ms;
 *          0 when the key is absent or holds another value (nothing changed).
 * Usage: EVALSHA <sha> 3 <lock key> <delay key> <marker key> <value> <ttl> <delay>
 */
#define ELK_LOCK_SCRIPT_EXTEND                                                                     \
    "local c,k,a=redis.call,KEYS,ARGV\n"                                                           \
    "local t=c('TIME')\n"                                                                          \
    "local u=t[1]*1e6+t[2]\n"                                                                      \
    "local m=c('GET',k[3])\n"                                                                      \
    "if not m then m='@'..math.floor(u/1e3)c('SET',k[3],m)end\n"                                   \
    "local r={0,u,tonumber(m:match'@(%d+)$')or 0}\n"                                               \
    "if c('GET',k[1])==a[1] then\n"                                                                \
    "c('PEXPIRE',k[1],a[2])\n"                                                                     \
    "if a[3]~='0' then c('SET',k[2],a[1],'PX',a[2]+a[3])end\n"                                     \
    "r[1]=1\n"                                                                                     \
    "end\n"                                                                                        \
    "return r\n"
#define ELK_LOCK_SCRIPT_EXTEND_SHA1 "a0f824c287eb0e66a6cec0cb6c6ef7f233b4d98f"

/*
 * EXTEND_BATCH (renewals of several leases of one client on one node in one call,
 * docs/design.md "Renewals in batches"): for each lease, exactly what EXTEND does with a
 * lock delay of 0 (leases with a lock delay are renewed one by one); the fleet marker is
 * read (and made when missing) once for all.
 *   KEYS[1] fleet marker key  KEYS[2..n+1] the lock keys of the n leases
 *   ARGV[1] new ttl in ms (decimal), the same for all n (one call carries one ttl)
 *   ARGV[2..n+1] the lock values, in the order of their keys (ARGV[i] goes with KEYS[i])
 * Returns {server_us, marker_ms, r_1, ..., r_n}: server_us and marker_ms as for EXTEND
 *   (read once, before any key is touched), r_j lease j's result with EXTEND's meaning:
 *          1 when KEYS[j+1] held ARGV[j+1] and its expiry was reset to ARGV[1] ms;
 *          0 when it is absent or holds another value (nothing changed).
 * Usage: EVALSHA <sha> <n+1> <marker key> <key 1> ... <key n> <ttl> <value 1> ... <value n>
 */
#define ELK_LOCK_SCRIPT_EXTEND_BATCH                                                               \
    "local c,k,a=redis.call,KEYS,ARGV\n"                                                           \
    "local t=c('TIME')\n"                                                                          \
    "local u=t[1]*1e6+t[2]\n"                                                                      \
    "local m=c('GET',k[1])\n"                                                                      \
    "if not m then m='@'..math.floor(u/1e3)c('SET',k[1],m)end\n"                                   \
    "local r={u,tonumber(m:match'@(%d+)$')or 0}\n"                                                 \
    "for i=2,#k do\n"                                                                              \
    "if c('GET',k[i])==a[i] then c('PEXPIRE',k[i],a[1])r[i+1]=1 else r[i+1]=0 end\n"               \
    "end\n"                                                                                        \
    "return r\n"
#define ELK_LOCK_SCRIPT_EXTEND_BATCH_SHA1 "7889e204e7966a2bc7e9d4c0a5ec0a274875e41a"

/*
 * RELEASE_BATCH (the releases of several leases of one client on one node in one call,
 * elk_client_release_all, docs/design.md "Releases in bulk"): for each lease, what RELEASE
 * does for a lease without a lock delay, in the order of the leases (a lease with a lock
 * delay is released with its own RELEASE: its marker would need a key of its own).
 *   KEYS[1..n] the lock keys    ARGV[1..n] their values (ARGV[i] goes with KEYS[i])
 * Returns {r_1, ..., r_n}, r_i with RELEASE's meaning: 1 when KEYS[i] held ARGV[i]; it was
 *   deleted and ARGV[i] PUBLISHed on KEYS[i] .. ":released" (ELK_LOCK_CHANNEL_SUFFIX, RELEASE's
 *   ARGV[2]); 0 when it is absent or holds another value (nothing deleted, nothing published).
 * Usage: EVAL <text> <n> <key 1> ... <key n> <value 1> ... <value n>
 */
#define ELK_LOCK_SCRIPT_RELEASE_BATCH                                                              \
    "local c,k,a=redis.call,KEYS,ARGV\n"                                                           \
    "local r={}\n"                                                                                 \
    "for i=1,#k do\n"                                                                              \
    "if c('GET',k[i])==a[i] then c('DEL',k[i])c('PUBLISH',k[i]..':released',a[i])r[i]=1 else "     \
    "r[i]=0 end\n"                                                                                 \
    "end\n"                                                                                        \
    "return r\n"
#define ELK_LOCK_SCRIPT_RELEASE_BATCH_SHA1 "a210a8118168160ba4fe5cd48950cd03861ab1fb"

/*
 * RELEASE: compare-and-delete (a clean release also deletes this holder's lock-delay
 * marker), then wake waiters.
 *   KEYS[1] lock key          KEYS[2] lock-delay marker key
 *   ARGV[1] lock value        ARGV[2] release channel name (<prefix>{<resource>}:released)
 * Returns: 1 when the key held ARGV[1]; it was deleted and ARGV[1] was PUBLISHed on ARGV[2];
 *          0 when the key is absent or holds another value (nothing deleted, nothing published;
 *          the marker is still deleted if it holds ARGV[1]).
 * Usage: EVALSHA <sha> 2 <lock key> <delay key> <value> <channel>
 */
#define ELK_LOCK_SCRIPT_RELEASE                                                                    \
    "if redis.call('GET', KEYS[2]) == ARGV[1] then\n"                                              \
    "  redis.call('DEL', KEYS[2])\n"                                                               \
    "end\n"                                                                                        \
    "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"                                              \
    "  redis.call('DEL', KEYS[1])\n"                                                               \
    "  redis.call('PUBLISH', ARGV[2], ARGV[1])\n"                                                  \
    "  return 1\n"                                                                                 \
    "end\n"                                                                                        \
    "return 0\n"
#define ELK_LOCK_SCRIPT_RELEASE_SHA1 "dbc0cef131775aeebf83d77df31c49cbc4b7c9e3"

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

/*
 * PROBE (vote hygiene): what a node says about its own restarts and clock, read once per
 * connection, before the node may vote (docs/design.md "Masters that restart or jump").
 *   KEYS[1] the fleet's marker key (<prefix>marker): never expires, so a restart without
 *           persistence loses it. Created here when missing, holding the server's run_id
 *           (or ARGV[1] when INFO is not allowed), "@" and the server's TIME in ms.
 *   ARGV[1] a random id (32 hex digits) for a server that does not tell its run_id
 * Returns {run_id, uptime_in_seconds, marker, aof_enabled, server_ms}: the first four as
 *   strings, "" when not known (INFO refused by the ACL, field missing; marker "" when it
 *   was missing and has just been created); server_ms the server's TIME in ms (integer).
 * Needs +info for run_id/uptime/aof (without it a new connection cannot rule out a recent
 * restart, docs/redis-acl.md). Sent with EVAL only; port/sim knows it by the SHA1 too.
 * Usage: EVAL <script> 1 <marker key> <random id>
 */
#define ELK_LOCK_SCRIPT_PROBE                                                                      \
    "local s = redis.pcall('INFO', 'server')\n"                                                    \
    "local p = redis.pcall('INFO', 'persistence')\n"                                               \
    "if type(s) ~= 'string' then s = '' end\n"                                                     \
    "if type(p) ~= 'string' then p = '' end\n"                                                     \
    "local id = string.match(s, 'run_id:(%x+)') or ''\n"                                           \
    "local t = redis.call('TIME')\n"                                                               \
    "local n = t[1] * 1000 + math.floor(t[2] / 1000)\n"                                            \
    "local m = redis.call('GET', KEYS[1])\n"                                                       \
    "if not m then\n"                                                                              \
    "  redis.call('SET', KEYS[1], (id ~= '' and id or ARGV[1]) .. '@' .. n)\n"                     \
    "end\n"                                                                                        \
    "return {id, string.match(s, 'uptime_in_seconds:(%d+)') or '', m or '',\n"                     \
    "  string.match(p, 'aof_enabled:(%d)') or '', n}\n"
#define ELK_LOCK_SCRIPT_PROBE_SHA1 "b6a1ac7f7b70a9635156616ee3db7e52ccdd77a8"

/* Reply values of the scripts, by name. */
#define ELK_LOCK_ACQUIRE_BUSY (-1)    /* ACQUIRE: key exists */
#define ELK_LOCK_ACQUIRE_DELAYED (-2) /* ACQUIRE: a lock-delay marker stands */
#define ELK_LOCK_COMMIT_NOT_HELD (-1) /* COMMIT: value no longer stands */

/* Key suffixes after "<prefix>{<resource>}". */
#define ELK_LOCK_FENCE_SUFFIX ":fence"
#define ELK_LOCK_CHANNEL_SUFFIX ":released"
#define ELK_LOCK_DELAY_SUFFIX ":delay"
/* The fleet's marker key is "<prefix>" ELK_LOCK_MARKER_NAME (no braces: no resource's). */
#define ELK_LOCK_MARKER_NAME "marker"

#endif /* ELK_LOCK_SCRIPTS_H */
