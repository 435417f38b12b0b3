/* SPDX-License-Identifier: MIT */
/*
 * The scripts of fair waiting (elk/fair.h, lib/fair), as constants: the simulator
 * (port/sim/src/scripts.c) and the unit tests' fake server run them natively, matched by
 * text or SHA1, and tests/diff checks those against real Redis. Each text is exactly what
 * EVAL sends and what the SHA1 covers (ending in one "\n").
 *
 * Keys of one resource (its lock's hash slot):
 *   queue       <prefix>{<resource>}:q     ZSET, member waiter id, score its ticket
 *   expiries    <prefix>{<resource>}:qx    ZSET, member waiter id, score its expiry (the
 *                                          server's TIME in ms)
 *   ticket seq  <prefix>{<resource>}:qseq  the last ticket given
 * All three expire with the latest ticket, so an abandoned queue vanishes.
 */
#ifndef ELK_FAIR_SCRIPTS_H
#define ELK_FAIR_SCRIPTS_H

/*
 * QUEUE_KEEP: take or renew a ticket. Drops every member whose expiry passed (from both
 * sets), then sets this waiter's ticket: a new one (ARGV[2] "0": INCR of the sequence) or
 * the one given (the sequence is raised to it if lower, so that later tickets come after
 * it: the queue of a master that lost its data is rebuilt in the same order), and its
 * expiry to TIME + ARGV[3] ms.
 *   KEYS[1] queue  KEYS[2] expiries  KEYS[3] ticket sequence
 *   ARGV[1] waiter id  ARGV[2] ticket (decimal, "0": a new one)  ARGV[3] ticket TTL in ms
 * Returns {ticket, live waiters ahead of this one (ZRANK: by ticket, then id), the head's id}.
 */
#define ELK_FAIR_SCRIPT_KEEP                                                                       \
    "local c,k,a=redis.call,KEYS,ARGV\n"                                                           \
    "local t=c('TIME')\n"                                                                          \
    "local n=t[1]*1000+math.floor(t[2]/1000)\n"                                                    \
    "local d=c('ZRANGEBYSCORE',k[2],'-inf',n)\n"                                                   \
    "for i=1,#d do c('ZREM',k[1],d[i])end\n"                                                       \
    "c('ZREMRANGEBYSCORE',k[2],'-inf',n)\n"                                                        \
    "local s=tonumber(a[2])\n"                                                                     \
    "if s==0 then s=c('INCR',k[3])elseif(tonumber(c('GET',k[3]))or 0)<s then c('SET',k[3],s)end\n" \
    "c('ZADD',k[1],s,a[1])\n"                                                                      \
    "c('ZADD',k[2],n+a[3],a[1])\n"                                                                 \
    "local e=c('ZRANGE',k[2],-1,-1,'WITHSCORES')[2]\n"                                             \
    "for i=1,3 do c('PEXPIREAT',k[i],e)end\n"                                                      \
    "return{s,c('ZRANK',k[1],a[1]),c('ZRANGE',k[1],0,0)[1]}\n"
#define ELK_FAIR_SCRIPT_KEEP_SHA1 "7e254dad67174100d3516c9ce28b29634dbfd849"

/*
 * QUEUE_LEAVE: give the ticket back (granted, cancelled or timed out).
 *   KEYS[1] queue  KEYS[2] expiries  ARGV[1] waiter id
 * Returns 1 if it was there, else 0.
 */
#define ELK_FAIR_SCRIPT_LEAVE                                                                      \
    "redis.call('ZREM',KEYS[1],ARGV[1])\n"                                                         \
    "return redis.call('ZREM',KEYS[2],ARGV[1])\n"
#define ELK_FAIR_SCRIPT_LEAVE_SHA1 "b9b1999e340a901e74f3cfbf9aa07335249482b2"

/* Key suffixes after the lock key "<prefix>{<resource>}". */
#define ELK_FAIR_QUEUE_SUFFIX ":q"
#define ELK_FAIR_EXPIRY_SUFFIX ":qx"
#define ELK_FAIR_SEQ_SUFFIX ":qseq"

#endif /* ELK_FAIR_SCRIPTS_H */
