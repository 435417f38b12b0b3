/* SPDX-License-Identifier: MIT */
/*
 * port/sim: a deterministic world for edgelock, in one thread and virtual time.
 *
 * Pieces (one file each): a seeded PRNG that also serves as elk_entropy_t
 * (rng.c), clocks with a per-instance rate and offset that serve as elk_clock_t
 * (clock.c), an event queue ordered by (time, insertion order) (queue.c), a
 * network of TCP-like byte pipes that serve as elk_transport_t (net.c), and
 * simulated Redis servers that decode the commands edgelock sends with lib/resp and
 * answer them in RESP2 or RESP3 (redis.c, reply.c), including edgelock's scripts
 * implemented natively (scripts.c, registered by the caller).
 *
 * True time is in microseconds since the start of a run (elk_sim_core_t.now_us).
 * Everything random comes from the caller's seed, so one seed gives one run, byte
 * for byte. No heap and no static mutable state: every struct is caller-allocated
 * and sized by the compile-time constants below (a whole net is a few MB; make it
 * static in the program, not a local).
 */
#ifndef ELK_SIM_H
#define ELK_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elk/err.h"
#include "elk/platform.h"
#include "elk/resp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ sizes */

#define ELK_SIM_MAX_GATEWAYS 16u
#define ELK_SIM_MAX_NODES 7u
#define ELK_SIM_MAX_CONNS (ELK_SIM_MAX_GATEWAYS * ELK_SIM_MAX_NODES)
#define ELK_SIM_PIPE_CAP 4096u    /* bytes per direction in flight + unread; power of 2 */
#define ELK_SIM_PIPE_SEGS 64u     /* segments in flight per direction */
#define ELK_SIM_SESSION_BUF 4096u /* server-side command buffer per connection */
#define ELK_SIM_SESSION_NODES 32u /* RESP nodes of one command */
#define ELK_SIM_KEYS 64u          /* keys per Redis node */
#define ELK_SIM_KEY_MAX 128u      /* key bytes */
#define ELK_SIM_VAL_MAX 128u      /* value bytes */
#define ELK_SIM_SUBS 4u           /* channels one connection may subscribe to */
#define ELK_SIM_MAX_SCRIPTS 10u   /* native scripts known to a net */
#define ELK_SIM_MAX_ARGS 24u      /* arguments of one command */
#define ELK_SIM_PORT_BASE 7000u   /* endpoint port of node i is PORT_BASE + i */
#define ELK_SIM_RUN_ID_LEN 40u    /* INFO server's run_id: 40 hex digits, as Redis */
/* A node's wall clock at true time 0 unless the caller sets it: Unix time in us (2023-11-14). */
#define ELK_SIM_WALL_EPOCH_US INT64_C(1700000000000000)
/* Uptime a node already has when a net is set up: up an hour before the run began, so
 * only restarts during the run make a node look freshly started. */
#define ELK_SIM_UPTIME_AT_INIT_US (UINT64_C(3600) * 1000000u)

/* ------------------------------------------------------------ PRNG / entropy */

/* xoshiro256** seeded through splitmix64: fast, small, and the same everywhere. */
typedef struct elk_sim_rng {
    uint64_t s[4];
} elk_sim_rng_t;

/* Seed from one 64-bit value (any value, zero included). */
void elk_sim_rng_seed(elk_sim_rng_t *rng, uint64_t seed);
/* Next 64 random bits. */
uint64_t elk_sim_rng_next(elk_sim_rng_t *rng);
/* Uniform in [lo, hi] (inclusive); returns lo when hi <= lo. */
uint64_t elk_sim_rng_range(elk_sim_rng_t *rng, uint64_t lo, uint64_t hi);
/* True with probability ppm / 1 000 000. */
bool elk_sim_rng_chance(elk_sim_rng_t *rng, uint32_t ppm);
/* splitmix64 step: derive independent seeds (per gateway, per node) from a run seed. */
uint64_t elk_sim_splitmix64(uint64_t *state);
/* An elk_entropy_t reading from rng (caller keeps rng alive). */
elk_entropy_t elk_sim_rng_entropy(elk_sim_rng_t *rng);

/* ------------------------------------------------------------ clocks */

/*
 * local_us = offset_us + t + t * rate_ppm / 1e6, for true time t. rate_ppm > 0 runs
 * fast. Jumps move offset_us (node wall clocks may jump either way; gateway clocks
 * are monotonic and never jump).
 */
typedef struct elk_sim_clock {
    const uint64_t *true_now_us; /* the world's true time (caller-owned) */
    int64_t offset_us;
    int32_t rate_ppm;
} elk_sim_clock_t;

/* Set up a clock reading *true_now_us. offset_us >= 0 keeps readings non-negative. */
void elk_sim_clock_init(elk_sim_clock_t *c, const uint64_t *true_now_us, int64_t offset_us,
                        int32_t rate_ppm);
/* Local time in microseconds at true time t_us (never below 0). */
int64_t elk_sim_clock_local_us_at(const elk_sim_clock_t *c, uint64_t t_us);
/* Local milliseconds now. */
uint64_t elk_sim_clock_now_ms(const elk_sim_clock_t *c);
/* Earliest true time (us) at which local ms >= local_ms. */
uint64_t elk_sim_clock_true_at(const elk_sim_clock_t *c, uint64_t local_ms);
/* Step the clock by delta_us (a wall-clock jump). */
void elk_sim_clock_jump(elk_sim_clock_t *c, int64_t delta_us);
/* An elk_clock_t over c (caller keeps c alive). */
elk_clock_t elk_sim_clock_iface(elk_sim_clock_t *c);

/* ------------------------------------------------------------ event queue */

/* Kinds below 100 belong to port/sim; programs use 100 and above. */
enum elk_sim_event_kind {
    ELK_SIM_EV_ARRIVE_UP = 1,   /* a = conn: gateway->node bytes arrive; b = conn generation */
    ELK_SIM_EV_ARRIVE_DOWN = 2, /* a = conn: node->gateway bytes arrive */
    ELK_SIM_EV_CONNECT = 3,     /* a = conn: connect attempt resolves */
    ELK_SIM_EV_USER = 100
};

typedef struct elk_sim_event {
    uint64_t at_us;
    uint64_t seq; /* insertion order: ties in time resolve the same way every run */
    uint32_t kind;
    uint32_t a;
    uint64_t b;
} elk_sim_event_t;

typedef struct elk_sim_queue {
    elk_sim_event_t *ev; /* caller-owned array of cap entries */
    size_t cap;
    size_t len;
    uint64_t next_seq;
} elk_sim_queue_t;

/* Set up an empty queue over storage[cap]. Returns ELK_OK or ELK_E_INVALID_ARG. */
int elk_sim_queue_init(elk_sim_queue_t *q, elk_sim_event_t *storage, size_t cap);
/* Add an event. Returns ELK_OK or ELK_E_SIM_QUEUE_FULL. */
int elk_sim_queue_push(elk_sim_queue_t *q, uint64_t at_us, uint32_t kind, uint32_t a, uint64_t b);
/* Remove the earliest event into *out. Returns false when empty. */
bool elk_sim_queue_pop(elk_sim_queue_t *q, elk_sim_event_t *out);
/* Time of the earliest event, or UINT64_MAX when empty. */
uint64_t elk_sim_queue_peek_time(const elk_sim_queue_t *q);

/* ------------------------------------------------------------ Redis nodes */

typedef struct elk_sim_key {
    uint8_t used;
    uint8_t klen;
    uint8_t vlen;
    uint8_t key[ELK_SIM_KEY_MAX];
    uint8_t val[ELK_SIM_VAL_MAX];
    int64_t expire_ms; /* on the node's own clock; 0 = no expiry */
} elk_sim_key_t;

/* What node restarts do with the dataset. */
enum elk_sim_restart {
    ELK_SIM_RESTART_KEEP = 0, /* persisted with fsync always: keys and counters survive */
    ELK_SIM_RESTART_LOSE = 1  /* no persistence: empty after restart */
};

typedef struct elk_sim_redis {
    uint8_t index;
    bool up;
    bool info_denied;      /* an ACL without +info: scripts get an error from INFO */
    elk_sim_clock_t clock; /* the server's wall clock: expiry runs on it */
    /* INFO server: run_id is new at every start; uptime_in_seconds is, as in Redis, the
     * difference of two wall-clock readings (server.unixtime - stat_starttime), so a
     * step of the wall clock after the start shows in it (elk_sim_redis_uptime_ms). */
    char run_id[ELK_SIM_RUN_ID_LEN + 1u];
    uint64_t started_us;  /* true time of the last start */
    int64_t up_before_us; /* uptime already reached at started_us (set up mid-life) */
    int64_t jumped_us;    /* wall-clock steps since started_us (elk_sim_net_clock_jump) */
    elk_sim_key_t keys[ELK_SIM_KEYS];
    uint32_t script_cached;       /* bit i: script i of the net's table is cached */
    const char *password;         /* NULL: no AUTH configured (as default Redis) */
    const char *maxmemory_policy; /* CONFIG GET answers */
    const char *appendonly;
    const char *appendfsync;
    uint64_t commands; /* statistics */
    uint64_t restarts;
} elk_sim_redis_t;

/* Server-side state of one connection. */
typedef struct elk_sim_session {
    elk_resp_reader_t reader;
    uint8_t buf[ELK_SIM_SESSION_BUF];
    elk_resp_node_t nodes[ELK_SIM_SESSION_NODES];
    uint8_t proto; /* 2 or 3 */
    uint8_t nsubs;
    uint8_t sub_len[ELK_SIM_SUBS];
    uint8_t sub[ELK_SIM_SUBS][ELK_SIM_KEY_MAX];
    bool authed;
} elk_sim_session_t;

/* ------------------------------------------------------------ native scripts */

struct elk_sim_net;

/* The view of a command a native script gets: keys and args as byte strings. */
typedef struct elk_sim_bytes {
    const uint8_t *p;
    size_t len;
} elk_sim_bytes_t;

/* Reply builder handed to native scripts (encodes for the session's protocol). */
typedef struct elk_sim_reply {
    uint8_t buf[ELK_SIM_PIPE_CAP / 2u];
    size_t len;
    uint8_t proto;
    bool overflow;
} elk_sim_reply_t;

/* A script implemented in C, run atomically like Lua in Redis. Writes exactly one
 * reply into out. keys/args are views valid during the call. */
typedef void (*elk_sim_script_fn)(elk_sim_redis_t *node, const elk_sim_bytes_t *keys, size_t nkeys,
                                  const elk_sim_bytes_t *args, size_t nargs, elk_sim_reply_t *out,
                                  void *user);

typedef struct elk_sim_script {
    const char *sha1; /* 40 lowercase hex digits, as EVALSHA sends it */
    const char *text; /* the Lua text, as EVAL sends it */
    elk_sim_script_fn fn;
    void *user;
} elk_sim_script_t;

/* Key-space helpers for native scripts and the command table (node clock expiry). */
elk_sim_key_t *elk_sim_redis_lookup(elk_sim_redis_t *node, const uint8_t *key, size_t klen);
/* Set key to val with expiry px_ms (0 = none) on the node clock. Returns the entry, or
 * NULL if the key space is full or a size limit is exceeded. */
elk_sim_key_t *elk_sim_redis_set(elk_sim_redis_t *node, const uint8_t *key, size_t klen,
                                 const uint8_t *val, size_t vlen, int64_t px_ms);
/* Delete a key; returns true if it existed (and had not expired). */
bool elk_sim_redis_del(elk_sim_redis_t *node, const uint8_t *key, size_t klen);
/* Node wall-clock ms now. */
int64_t elk_sim_redis_now_ms(const elk_sim_redis_t *node);
/* The same wall clock in microseconds (TIME's t[1] * 1e6 + t[2]). */
int64_t elk_sim_redis_now_us(const elk_sim_redis_t *node);
/* What INFO's uptime says now, in ms: wall-clock time since the node's last start (steps
 * of its wall clock included, as Redis computes it); negative after a backward step past
 * the start (Redis then prints a negative number, which no uptime pattern matches). */
int64_t elk_sim_redis_uptime_ms(const elk_sim_redis_t *node);
/* Parse a signed decimal. Returns true on success. */
bool elk_sim_parse_i64(const uint8_t *p, size_t len, int64_t *out);
/* Publish payload on channel to every subscriber of node (returns the receiver count). */
int64_t elk_sim_net_publish(struct elk_sim_net *net, elk_sim_redis_t *node, const uint8_t *ch,
                            size_t chlen, const uint8_t *msg, size_t msglen);

/* Reply encoders (RESP3 forms are used when out->proto == 3). */
void elk_sim_reply_simple(elk_sim_reply_t *out, const char *text);
void elk_sim_reply_error(elk_sim_reply_t *out, const char *text);
void elk_sim_reply_int(elk_sim_reply_t *out, int64_t v);
void elk_sim_reply_bulk(elk_sim_reply_t *out, const uint8_t *p, size_t len);
void elk_sim_reply_null(elk_sim_reply_t *out);
void elk_sim_reply_array(elk_sim_reply_t *out, size_t n);
void elk_sim_reply_map(elk_sim_reply_t *out, size_t n_pairs);
void elk_sim_reply_push(elk_sim_reply_t *out, size_t n);
void elk_sim_reply_cstr(elk_sim_reply_t *out, const char *s);
/* The error Redis gives when a write does not fit (here: the node's key table is full). */
void elk_sim_reply_oom(elk_sim_reply_t *out);

/* ------------------------------------------------------------ network */

/* Delay, loss and reset behaviour of every connection. Probabilities in ppm. */
typedef struct elk_sim_net_params {
    uint32_t delay_min_us; /* one-way delay, uniform in [min, max] ... */
    uint32_t delay_max_us;
    uint32_t tail_ppm; /* ... plus, with this probability, a heavy tail */
    uint32_t tail_max_us;
    uint32_t stall_ppm; /* a segment is lost: TCP retransmits after a stall */
    uint32_t stall_min_us;
    uint32_t stall_max_us;
    uint32_t reset_ppm; /* a segment resets the connection */
    uint32_t retry_us;  /* retransmission interval while partitioned */
} elk_sim_net_params_t;

enum elk_sim_conn_state {
    ELK_SIM_CONN_CLOSED = 0,
    ELK_SIM_CONN_CONNECTING,
    ELK_SIM_CONN_OPEN,
    ELK_SIM_CONN_FAILED /* reset, refused or peer gone: err says which */
};

typedef struct elk_sim_pipe {
    uint8_t buf[ELK_SIM_PIPE_CAP];
    uint32_t rd, dl, wr; /* cumulative: read <= delivered <= written */
    uint64_t seg_at[ELK_SIM_PIPE_SEGS];
    uint32_t seg_end[ELK_SIM_PIPE_SEGS];
    uint8_t seg_head, seg_count;
    uint64_t last_at; /* TCP never reorders: arrivals are monotonic */
    bool scheduled;   /* the head segment has an event queued */
} elk_sim_pipe_t;

typedef struct elk_sim_conn {
    struct elk_sim_net *net;
    uint16_t id;
    uint8_t gw;
    uint8_t node;
    uint8_t state;       /* enum elk_sim_conn_state */
    int err;             /* for FAILED */
    uint32_t gen;        /* bumps on open/close: stale events are ignored */
    elk_sim_pipe_t up;   /* gateway -> node */
    elk_sim_pipe_t down; /* node -> gateway */
    elk_sim_session_t srv;
    uint64_t bytes_up, bytes_down;
} elk_sim_conn_t;

/* Called when something happened that the gateway's code should look at (bytes
 * arrived, a connect resolved, the connection failed). */
typedef void (*elk_sim_wake_fn)(void *user, uint8_t gw, uint64_t at_us);

/* Observer of every command a node executes (for traces); argv views are valid
 * during the call only. reply/reply_len: the encoded reply. */
typedef void (*elk_sim_cmd_fn)(void *user, uint8_t node, uint8_t gw, const elk_sim_bytes_t *argv,
                               size_t argc, const uint8_t *reply, size_t reply_len);

typedef struct elk_sim_core {
    uint64_t now_us; /* true time */
    elk_sim_queue_t queue;
    elk_sim_rng_t rng; /* network and fault randomness */
} elk_sim_core_t;

typedef struct elk_sim_net {
    elk_sim_core_t *core;
    elk_sim_net_params_t params;
    uint8_t n_gw, n_nodes;
    elk_sim_conn_t conns[ELK_SIM_MAX_CONNS];
    elk_sim_redis_t nodes[ELK_SIM_MAX_NODES];
    uint32_t blocked[ELK_SIM_MAX_GATEWAYS]; /* bit n: gateway cannot reach node n */
    const elk_sim_script_t *scripts;
    size_t n_scripts;
    elk_sim_wake_fn wake;
    void *wake_user;
    elk_sim_cmd_fn on_command; /* optional, NULL by default */
    void *cmd_user;
    uint64_t resets, stalls; /* statistics */
    uint64_t dropped_events; /* queue full: the run is invalid if non-zero */
} elk_sim_net_t;

/* Set up a net of n_gw gateways and n_nodes Redis nodes (all up, empty, clocks
 * exact at ELK_SIM_WALL_EPOCH_US; the caller adjusts node clocks afterwards). Returns ELK_OK or ELK_E_INVALID_ARG. */
int elk_sim_net_init(elk_sim_net_t *net, elk_sim_core_t *core, const elk_sim_net_params_t *params,
                     size_t n_gw, size_t n_nodes, elk_sim_wake_fn wake, void *wake_user);
/* Register the native scripts (table owned by the caller, up to ELK_SIM_MAX_SCRIPTS). */
int elk_sim_net_set_scripts(elk_sim_net_t *net, const elk_sim_script_t *scripts, size_t n);
/* The transport gateway gw uses to reach node (endpoint port selects the node too). */
elk_transport_t elk_sim_net_transport(elk_sim_net_t *net, size_t gw, size_t node);
/* Handle one of port/sim's events (kind < ELK_SIM_EV_USER). Returns true if it was one. */
bool elk_sim_net_handle(elk_sim_net_t *net, const elk_sim_event_t *ev);
/* Cut (blocked=true) or heal the path between gateway gw and node. */
void elk_sim_net_partition(elk_sim_net_t *net, size_t gw, size_t node, bool blocked);
/* Crash node: every connection to it fails (peer closed). */
void elk_sim_net_crash(elk_sim_net_t *net, size_t node);
/* Restart a crashed node; ELK_SIM_RESTART_LOSE empties its key space. Scripts are never kept.
 * A restart is a new server process: a new run_id (from the net's rng), uptime from 0, and
 * appendonly "yes" when the data was kept, "no" when it was lost (what INFO then says). */
void elk_sim_net_restart(elk_sim_net_t *net, size_t node, int mode);
/* Data lost without a restart (issue 26): FLUSHALL on node (every key gone, connections and
 * the script cache kept, as in Redis). */
void elk_sim_net_flush(elk_sim_net_t *net, size_t node);
/* Eviction under memory pressure: every key with an expiry (leases, lock-delay markers)
 * and, with marker_too, the key named marker (the fleet marker: an allkeys policy may take
 * it too; one that keeps it is the safety check's part, docs/design.md). */
void elk_sim_net_evict(elk_sim_net_t *net, size_t node, const char *marker, bool marker_too);
/* Failover of node to an empty replica behind the same address: every connection fails,
 * the new master answers at once, empty, with a new run_id and an uptime of an hour (the
 * replica was running), appendonly "no". */
void elk_sim_net_failover(elk_sim_net_t *net, size_t node);
/* Step node's wall clock by delta_us (either way); its expiry, TIME and INFO's uptime
 * follow, as they do on a real server whose clock is stepped. */
void elk_sim_net_clock_jump(elk_sim_net_t *net, size_t node, int64_t delta_us);

#ifdef __cplusplus
}
#endif

#endif /* ELK_SIM_H */
