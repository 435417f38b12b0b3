/* SPDX-License-Identifier: MIT */
/*
 * A tiny in-memory Redis for lease-engine unit tests. It answers, on scripted
 * transports (fake_transport.h), exactly the commands lib/lock sends: EVALSHA/EVAL of
 * the lease scripts in elk/lock_scripts.h (run natively here, EXTEND_BATCH and RELEASE_BATCH too; ACQUIRE and EXTEND
 * answer {result, server TIME in us, fleet marker's creation s}, with the lock-delay
 * marker, the fleet marker and the token's clock floor), SCRIPT LOAD, CONFIG
 * GET, HELLO, SUBSCRIBE/UNSUBSCRIBE, plus PUBLISH from the release script to
 * subscribed connections (RESP3 pushes, or RESP2 pub/sub arrays). Several connections (one per client) may share one
 * server, so two clients can contend.
 *
 * Faults a test can switch on per server: silent (commands are swallowed), hold
 * (replies are kept until lfr_flush), forget scripts (NOSCRIPT, as after SCRIPT FLUSH
 * or a restart), CONFIG disabled, an eviction policy, error replies.
 *
 *     static lfr_server_t s[3];
 *     lfr_init(&s[i], &h.clock.now);  lfr_attach(&s[i], &h.ft[i]);
 *     ... lfr_serve(&s[i]);           // answer everything the client sent so far
 */
#ifndef LOCK_FAKE_REDIS_H
#define LOCK_FAKE_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fake_transport.h"

#define LFR_KEYS 160u
#define LFR_CONNS 6u
#define LFR_STR 160u
#define LFR_HELD 8192u
#define LFR_LOG 64u
#define LFR_OPS 1100u

/* One lease's part of a script call, batched or not, in the order the server ran them (the
 * first LFR_OPS are kept): what the requests of one key did, in order, on this server. */
typedef struct lfr_op {
    char which[9];  /* "acquire", "extend", "release", "commit", "extendb", "releaseb" */
    char key[48];   /* the lease's lock key */
    char value[64]; /* the lease value it carried */
    size_t conn;    /* the connection it came on */
} lfr_op_t;

/* One script call as the server received it (the first LFR_LOG are kept). */
typedef struct lfr_call {
    char which[9];       /* "acquire", "extend", "release", "commit", "extendb", "releaseb" */
    char value[LFR_STR]; /* ARGV[1]: the lease value the call carries */
    bool eval;           /* sent as EVAL (the script text), not EVALSHA */
    uint64_t at;         /* server time when it ran */
} lfr_call_t;

/* One member of a fair-waiting queue (QUEUE_KEEP / QUEUE_LEAVE, elk/fair_scripts.h): the
 * queue key's member with its ticket and expiry (server ms) in one row. */
#define LFR_QMEMBERS 32u
typedef struct lfr_qmember {
    bool used;
    char qkey[64];
    char id[48];
    long long ticket;
    long long expire_ms; /* the server's TIME in ms */
} lfr_qmember_t;

typedef struct lfr_entry {
    bool used;
    char key[LFR_STR];
    char val[LFR_STR];
    uint64_t expire_at; /* 0: no expiry */
} lfr_entry_t;

typedef struct lfr_server {
    const uint64_t *now; /* the test clock (server time = client time) */
    lfr_entry_t kv[LFR_KEYS];
    fake_transport_t *conn[LFR_CONNS];
    bool resp3[LFR_CONNS];          /* HELLO 3 seen on this connection */
    char sub[LFR_CONNS][LFR_STR];   /* channel subscribed ("" none) */
    char held[LFR_CONNS][LFR_HELD]; /* replies kept back while hold is on */
    size_t held_len[LFR_CONNS];
    size_t nconn;
    /* faults */
    bool silent;                  /* swallow commands, answer nothing */
    bool hold;                    /* keep replies until lfr_flush */
    bool scripts_loaded;          /* false: EVALSHA answers NOSCRIPT until loaded */
    bool forget_scripts;          /* SCRIPT LOAD is ignored (keeps NOSCRIPT coming) */
    bool config_disabled;         /* CONFIG answers an error */
    bool info_disabled;           /* INFO answers NOPERM */
    const char *maxmemory_policy; /* default "noeviction" */
    const char *error_reply;      /* non-NULL: every EVAL/EVALSHA answers -<this> */
    const char *raw_reply;        /* non-NULL: every lease script answers these RESP bytes (a
                                     reply of the wrong shape) */
    bool sub_refused;             /* SUBSCRIBE answers -NOPERM (an ACL without the channel) */
    int64_t wall_offset_ms;       /* the server's TIME is the test clock plus this (lfr_init
                                     sets a realistic epoch; a test may jump it) */
    /* counters */
    unsigned evalsha, eval, noscript, script_load, config_get, info, subscribe, publish;
    unsigned acquire_calls, extend_calls, release_calls, commit_calls;
    /* every script call, in order (a test can check the value each one carried) */
    lfr_call_t log[LFR_LOG];
    size_t nlog;
    /* Vote hygiene: what the PROBE script reports (all zero: a server up for a day, run
     * 1, no AOF; TIME as wall_offset_ms says). probe_no_info empties run_id, uptime and aof
     * as a server refusing INFO does (separate from info_disabled, so that the safety
     * check's tests keep seeing the node vote or not by that check alone). */
    unsigned run;          /* restarts so far: run_id is this + 1 as 40 digits */
    bool restarted;        /* uptime counts from restarted_at (else one day more) */
    uint64_t restarted_at; /* test time of the last lfr_restart */
    bool aof;              /* aof_enabled "1" (and lfr_restart keeps the data) */
    const char *probe_raw; /* non-NULL: the PROBE's reply is these raw RESP bytes */
    unsigned probe;        /* PROBE calls */
    bool probe_no_info;    /* the PROBE's INFO is refused (no +info) */
    bool no_token_floor;   /* ACQUIRE's token is counter + 1 only (the old script: a test
                              shows what the clock floor prevents) */
    long long last_floor;  /* ARGV[5] of the last ACQUIRE: the client's token floor */
    bool old_marker;       /* lfr_init: a missing fleet marker reads as one written a day
                              ago, whatever the prefix (until a restart without data or
                              lfr_flushall) */
    /* EXTEND_BATCH (batched renewals): calls, and the leases they carried in all */
    unsigned extend_batch_calls, extend_batch_leases;
    /* RELEASE_BATCH (releases in bulk): calls, and the leases they carried in all */
    unsigned release_batch_calls, release_batch_leases;
    /* every lease of every script call, in order (lfr_op_t) */
    lfr_op_t ops[LFR_OPS];
    size_t nops;
    /* fair waiting: the queues' members, and the QUEUE_KEEP / QUEUE_LEAVE calls */
    lfr_qmember_t q[LFR_QMEMBERS];
    unsigned keep_calls, leave_calls;
} lfr_server_t;

void lfr_init(lfr_server_t *s, const uint64_t *now);
/* Attach a client connection (a node's scripted transport). Returns its index. */
size_t lfr_attach(lfr_server_t *s, fake_transport_t *ft);
/* Execute every whole command recorded on every attached connection. Returns the
 * number of commands executed. */
size_t lfr_serve(lfr_server_t *s);
/* Push replies kept back by hold. */
void lfr_flush(lfr_server_t *s);
/* Data access for assertions and setup. NULL / false when absent or expired. */
const char *lfr_get(lfr_server_t *s, const char *key);
void lfr_set(lfr_server_t *s, const char *key, const char *val, uint64_t ttl_ms);
void lfr_del(lfr_server_t *s, const char *key);
/* Remaining TTL in ms, -1 no expiry, -2 absent. */
int64_t lfr_pttl(lfr_server_t *s, const char *key);
/* Integer value of key (0 when absent). */
int64_t lfr_int(lfr_server_t *s, const char *key);
/* Restart the server now: a new run_id, uptime from 0, scripts forgotten, every open
 * connection closed (the client reconnects), and every key lost unless keep_data (a
 * restart from AOF; set aof too for the PROBE to say so). */
void lfr_restart(lfr_server_t *s, bool keep_data);
/* FLUSHALL: every key gone (the fleet marker too), the process and its connections go on
 * (no restart). */
void lfr_flushall(lfr_server_t *s);

/* Fair waiting: the queue member id of queue key qkey, NULL when absent (or expired on the
 * server's clock, though still stored until the next QUEUE_KEEP prunes it: use
 * lfr_queue_len for what a waiter would see). */
const lfr_qmember_t *lfr_queue_find(lfr_server_t *s, const char *qkey, const char *id);
/* Live members of queue qkey (expiry after the server's TIME). */
size_t lfr_queue_len(lfr_server_t *s, const char *qkey);

#endif /* LOCK_FAKE_REDIS_H */
