/* SPDX-License-Identifier: MIT */
/*
 * elk-sim: the simulated world around port/sim. Gateways run the real lib/
 * (node, lock, fence) or, as a negative control, the seeds' SETNX+GETSET client;
 * faults are injected on a schedule drawn from the run seed; the checker watches
 * one actuator per resource in true time.
 */
#ifndef SIM_WORLD_H
#define SIM_WORLD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "elk/fair.h"
#include "elk/fence.h"
#include "elk/lock.h"
#include "elk/multi.h"
#include "elk/node.h"
#include "elk/pool.h"
#include "elk/sem.h"
#include "elk/sim.h"
#include "elk/sim_scripts.h"

#define SIM_MAX_RESOURCES 4u
/* --permits N: each resource is a semaphore of N permits (elk/sem.h), and each permit has
 * its own actuator (checked as a lock's is); the budget is checked across them */
#define SIM_MAX_PERMITS 4u
#define SIM_MAX_ACTUATORS (SIM_MAX_RESOURCES * SIM_MAX_PERMITS)
#define SIM_EVENTS 65536u
#define SIM_POOL_BLOCKS (2u * ELK_SIM_MAX_NODES + 2u)

typedef enum sim_control {
    CTRL_NONE = 0,
    CTRL_NO_DRIFT_MARGIN, /* lock drift margin 0 while clocks drift within the bound */
    CTRL_DRIFT_BEYOND,    /* clocks drift 20x beyond the bound the lock is told */
    CTRL_NAIVE_FENCE,     /* COMMIT never raises counters: naive max-over-quorum tokens */
    CTRL_SETNX_GETSET,    /* the seeds' SETNX + GETSET timestamp client instead of lib/lock */
    CTRL_NO_VOTE_HYGIENE, /* client cfg vote_hygiene = false: restarted or jumped masters vote */
    CTRL_NO_AMNESIA,      /* the scripts before issue 26: no marker age, no token floor */
    CTRL_NAIVE_SEMAPHORE, /* a counting semaphore on a majority: each master admits at most N
                             holders (a free slot key of its own, SET NX PX), a holder needs a
                             quorum of masters (issue 28's trap) */
    CTRL_MULTI_NAIVE,     /* --multi K without lib/multi: independent locks taken in the
                             caller's order, the ones taken kept while it waits for the next
                             (hold and wait), a lost one not ending the others (issue 28) */
    CTRL_UNFAIR,          /* --fair: a waiter keeps its ticket but asks for the lock as soon
                             as it has one, without waiting to be the head (gw_fair.c) */
    CTRL_FAIR_NO_EXPIRY   /* --fair: QUEUE_KEEP never drops an expired ticket (port/sim), so
                             the waiter crashed in the calm phase blocks its queue for good */
} sim_control_t;

/* Violation kinds, in report order. */
enum {
    V_MUTEX = 0,            /* two gateways drove one actuator at overlapping moments */
    V_FENCE_BACKWARDS,      /* a new holder got a token not above the previous holder's */
    V_FENCE_ACCEPTED_LOW,   /* the guard accepted a token below one it had accepted */
    V_LATE_LOST,            /* LOST fired after the local deadline (and not because of a pause) */
    V_DRIVE_AFTER_DEADLINE, /* a gateway drove at or after its deadline or after LOST */
    V_LIVENESS,             /* nobody got the lock within the bound after faults healed */
    V_LOCK_DELAY,           /* a grant before a hold that ended without a clean release could
                               last have been valid plus its lock_delay */
    V_HEARTBEAT,            /* a renewal round started more than keepalive_ms after the
                               holder's last keepalive */
    V_PERMITS,              /* more gateways drove one semaphore's actuators at one moment
                               than it has permits */
    V_MULTI_PARTIAL,        /* --multi: a gateway drove while it did not hold every resource of
                               its multi lease, or believed a deadline one of them did not have */
    V_MULTI_STARVED,        /* --multi: a gateway asked in the calm phase and was not granted
                               within sim_multi_starve_bound_us */
    V_FAIR_ORDER,           /* --fair: a grant while a live waiter with a lower ticket, known
                               to a quorum before the grantee was named head, waited */
    V_FAIR_STARVED,         /* --fair: a gateway asked in the calm phase and was not granted
                               within sim_fair_starve_bound_us (one waiter crashed for good) */
    V_KINDS
};

typedef struct sim_options {
    uint64_t seed;
    uint64_t runs;
    uint32_t gateways;
    uint32_t nodes;
    uint32_t resources;
    const char *faults;
    uint32_t drift_ppm; /* bound on the rate difference of any two clocks */
    sim_control_t control;
    bool trace;
    bool expect_violations;
    bool quiet;
    bool companion;       /* --companion-lease: each elk gateway also holds a private lease on the
                       same client, so its renewals go out batched (EXTEND_BATCH) */
    uint32_t permits;     /* --permits N: resources are semaphores of N permits; 0: locks */
    uint32_t multi;       /* --multi K: each grant an elk_multi lease of K resources; 0: off */
    bool fair;            /* --fair: acquires go through elk_fair_t (gw_fair.c) */
    uint32_t duration_ms; /* fault phase; a calm phase follows */
    uint32_t ttl_ms;
} sim_options_t;

typedef struct sim_profile {
    const char *name;
    elk_sim_net_params_t net;
    uint32_t partition_every_ms, partition_min_ms, partition_max_ms;
    uint32_t crash_every_ms, restart_min_ms, restart_max_ms;
    uint32_t lose_ppm; /* share of crashes that lose the data (restart delayed) */
    uint32_t pause_every_ms, pause_min_ms, pause_max_ms;
    uint32_t jump_every_ms, jump_max_ms;
    uint32_t forward_ppm; /* share of jumps that go forward (drift-beyond-bound control, or
                             profiles with forward_jumps) */
    /* hostile-masters (issue 20): what Redlock alone does not survive */
    bool lose_at_once;     /* a crash that loses the data restarts as soon as any other
                                 (restart_min..max), not only after every key expired */
    bool forward_jumps;    /* forward jumps in a passing profile, by jump_ttl_max TTLs ... */
    uint32_t jump_ttl_max; /* ... 1..jump_ttl_max x ttl, or with small_jump_ppm just above
                                 the lease's drift margin (1..4 x the margin, the least the
                                 clock check must see); on one master per run (the jumper) */
    uint32_t small_jump_ppm;
    /* issue 26: data lost without a restart, every flush_every_ms (average): a FLUSHALL on a
     * bare majority (flush_all_ppm: on every node), or an eviction of every key with a TTL
     * and the fleet marker on those nodes (evict_ppm), or a failover of one node to an
     * empty replica (failover_ppm) */
    uint32_t flush_every_ms, flush_all_ppm, evict_ppm, failover_ppm;
} sim_profile_t;

typedef enum gw_phase {
    GW_THINK = 0,
    GW_WANT,
    GW_HOLD,
    GW_STOPPING, /* actuator told to stop; release once it is safe */
    /* SETNX+GETSET control client */
    GW_C_SETNX,
    GW_C_GET,
    GW_C_GETSET,
    GW_C_UNLOCK_GET,
    GW_C_UNLOCK_DEL,
    /* naive counting semaphore control */
    GW_N_ASK,    /* SET NX PX on each master, slot after slot, until admitted or full */
    GW_N_RELEASE /* DEL of the slots it was admitted to */
} gw_phase_t;

struct sim_world;

/* Last reply the SETNX+GETSET control client got; its step acts on it (no sends from
 * inside node callbacks). */
typedef struct sim_setnx_reply {
    int status;
    bool is_int, is_bulk;
    int64_t ival;
    char bulk[24];
} sim_setnx_reply_t;

typedef struct sim_gw {
    struct sim_world *w;
    uint8_t id;
    uint8_t resource;
    char name[16];
    elk_sim_clock_t clock; /* monotonic: what lib/ sees */
    elk_sim_clock_t wall;  /* wall clock: only the SETNX+GETSET control reads it */
    elk_sim_rng_t rng_entropy;
    elk_sim_rng_t rng; /* behaviour */
    elk_entropy_t entropy;
    elk_log_t log; /* the library's own lines, printed with --trace only */
    uint8_t pool_mem[SIM_POOL_BLOCKS * CONFIG_ELK_POOL_BLOCK_SIZE];
    elk_pool_t pool;
    elk_node_t nodes[ELK_SIM_MAX_NODES];
    elk_fleet_t fleet;
    elk_client_t client;
    elk_lock_t lock;
    elk_lock_t companion; /* --companion-lease: a private lease, renewed with lock's */
    elk_sem_t sem;        /* --permits: the semaphore instead of lock */
    elk_fair_t fair;      /* --fair: the fair handle instead of lock */
    /* --fair: the checker's record of this gateway's wait (gw_fair.c reports, checker.c
     * keeps): its ticket, whether it waits, the last rounds a quorum answered (true us:
     * sent, decided; a ring), and the round that named it head */
    struct sim_fair_ck {
        int64_t ticket;
        bool waiting;
        uint32_t seq_seen, head_seq; /* the lib's round numbers last reported */
        uint8_t n;                   /* rounds in the ring */
        uint64_t sent[8], decided[8];
        uint64_t head_sent, head_decided;
        uint64_t head_fault; /* w->master_fault_at when it was named head */
    } fk;
    uint8_t act;      /* the actuator it drives: its resource, or with --permits the
                             permit it holds or last held (resource * permits + permit - 1) */
    uint32_t stop_ms; /* the stop margin of its holds */
    gw_phase_t phase;
    uint64_t think_until, work_until, next_tick; /* local ms */
    bool lease_bound;         /* never renews: works until its deadline, then LOST */
    uint64_t lease;           /* checker's id of the current hold, 0 if none */
    uint64_t token, deadline; /* as the lock API reported them */
    bool lost;
    /* issue 20 behaviour, drawn from the run seed (gw_elk.c) */
    uint32_t lock_delay_ms;   /* the resource's lock delay (every gateway on it the same) */
    uint32_t keepalive_ms;    /* interval the lock is configured with, 0: no keepalive */
    uint32_t keepalive_every; /* how often the working application proves it is alive */
    uint32_t span_ms;         /* ttl - drift - stop_margin: deadline = round t_send + span */
    bool hangs;               /* its work may hang in a hold (keepalives stop) */
    bool hung;                /* this hold's work hangs: no keepalive, never finishes */
    bool stop_on_suspect;     /* stops its actuator and releases on SUSPECT */
    uint64_t hang_at;         /* local ms at which this hold's work hangs, 0: it does not */
    uint64_t next_keepalive;  /* local ms */
    /* the checker's record of this gateway's current or last hold (checker.c) */
    bool ck_open;                      /* granted, and not (yet) ended by a clean release */
    uint32_t ck_delay_ms;              /* its lock delay */
    uint8_t ck_act;                    /* the actuator (permit) it was on */
    uint64_t ck_valid_us;              /* true time its last confirmed deadline was reached */
    uint64_t ck_keepalive;             /* last keepalive, local ms (the grant counts as one) */
    uint64_t ck_dead_from, ck_dead_to; /* latest gap between keepalives longer than the
                                          interval: (from, to), local ms */
    /* pauses */
    uint64_t paused_until; /* true us */
    uint64_t pause_start;
    bool resume_pending;
    bool in_resume_step;
    /* wake-ups */
    uint64_t wake_at; /* earliest queued wake, true us */
    /* control client */
    /* naive semaphore control (gw_naive_sem.c), per master: the slot it was admitted to
     * (1..N, 0: none), the slot asked now (0: that master has answered for good), and
     * which masters still owe a reply; the local ms the ask began */
    uint8_t n_slot[ELK_SIM_MAX_NODES], n_try[ELK_SIM_MAX_NODES];
    uint32_t n_pending;
    uint64_t n_sent;
    char c_value[24], c_seen[24], c_new[24];
    uint64_t c_hold_until; /* wall ms */
    sim_setnx_reply_t c_reply;
    bool c_have_reply;
    /* --multi K (gw_multi.c): the resources of the current or last attempt, in the order
     * asked (drawn per attempt), as one elk_multi lease or, in the multi-naive control, as
     * independent locks taken in that order (m_next: how many are taken) */
    elk_lock_config_t m_cfg;
    elk_multi_t multi;
    elk_lock_t m_lock[SIM_MAX_RESOURCES];
    uint8_t m_res[SIM_MAX_RESOURCES];
    uint32_t m_count, m_next;
    bool m_asking; /* the checker's: wants its resources, not granted since (true us) */
    uint64_t m_ask_since;
    uint64_t m_reported; /* hold already reported as partial */
    bool m_done;         /* granted in the calm phase: asks no more (the calm phase drains);
                            --multi and --fair */
    bool crashed;        /* --fair: crashed for good while queued in the calm phase (world.c) */
} sim_gw_t;

typedef struct sim_actuator {
    elk_fence_t guard;
    uint64_t stored; /* the guard's "durable" storage */
    uint64_t max_accepted;
    uint64_t last_grant_token; /* token of the latest ACQUIRED on this resource */
    uint64_t first[ELK_SIM_MAX_GATEWAYS], end[ELK_SIM_MAX_GATEWAYS]; /* true us, per holder */
    uint64_t lease_of[ELK_SIM_MAX_GATEWAYS];
    uint64_t reported[ELK_SIM_MAX_GATEWAYS]; /* hold already counted as overlapping */
} sim_actuator_t;

typedef struct sim_stats {
    uint64_t runs, cycles, renewals, losses, acquire_failed, drives, refused;
    uint64_t events, sim_us;
    uint64_t violations[V_KINDS];
    /* node faults injected (world.c) */
    uint64_t crashes, empty_restarts, jumps, forward_jumps;
    uint64_t flushes, evictions, failovers; /* issue 26: data lost without a restart */
    uint64_t calm_wait_max_us; /* --multi: the longest wait for a grant in the calm phase */
    uint64_t fair_exempt;      /* --fair: grants out of ticket order that a master fault excused */
    uint64_t fair_crashes;     /* --fair: waiters crashed for good in the calm phase */
} sim_stats_t;

typedef struct sim_world {
    sim_options_t opt;
    sim_profile_t prof;
    uint64_t run_seed;
    elk_sim_core_t core;
    elk_sim_event_t events[SIM_EVENTS];
    elk_sim_net_t net;
    elk_sim_scripts_t scripts;
    sim_gw_t gw[ELK_SIM_MAX_GATEWAYS];
    sim_actuator_t act[SIM_MAX_ACTUATORS];
    /* --permits: per semaphore, each gateway's latest hold on any of its permits, true us:
     * [first drive, last drive + stop margin) (checker.c) */
    struct sim_budget {
        uint64_t first[ELK_SIM_MAX_GATEWAYS], end[ELK_SIM_MAX_GATEWAYS];
        uint64_t lease_of[ELK_SIM_MAX_GATEWAYS], reported[ELK_SIM_MAX_GATEWAYS];
    } budget[SIM_MAX_RESOURCES];
    uint8_t block_count[ELK_SIM_MAX_GATEWAYS][ELK_SIM_MAX_NODES];
    bool data_lost;           /* some node lost its data in this run (restart, flush) */
    uint64_t master_fault_at; /* true us of the latest master fault that drops queued tickets
                                 unseen by vote hygiene: data lost without a restart (flush,
                                 eviction, failover) or a forward clock jump (--fair; 0:
                                 none). An empty restart is not one: quarantined, the master
                                 names no head. */
    uint8_t jumper;           /* forward_jumps: the one master whose wall clock jumps */
    const char *password;     /* nodes require AUTH in this run, or NULL */
    uint64_t calm_from, end_at, last_grant_at;
    bool calm_granted;
    uint32_t fair_crashed; /* --fair: resources (bits) whose queue lost a waiter for good */
    uint64_t lease_seq;
    uint64_t hash;
    bool queue_overflow; /* an event was lost: the run is invalid */
    sim_stats_t run;     /* this run */
    char first_violation[200];
    FILE *trace;
    /* elk-sim --timeline: every trace line and violation, as it happens (NULL: none). text
     * is the violation's message, NULL for trace lines. Never changes the trace hash. */
    void (*note)(void *ctx, const struct sim_world *w, const char *what, uint64_t a, uint64_t b,
                 uint64_t c, const char *text);
    void *note_ctx;
} sim_world_t;

/* Run one seed; results accumulate in w->run. Returns 0 or a negative elk_err_t. */
int sim_run(sim_world_t *w, uint64_t seed);

/* Checker hooks (checker.c). */
void sim_check_reset(sim_world_t *w);
void sim_check_acquired(sim_world_t *w, sim_gw_t *g, uint64_t token);
void sim_check_drive(sim_world_t *w, sim_gw_t *g, uint64_t local_now);
void sim_check_release(sim_world_t *w, sim_gw_t *g);
void sim_check_renewed(sim_world_t *w, sim_gw_t *g);
void sim_check_keepalive(sim_world_t *w, sim_gw_t *g, uint64_t local_now);
void sim_check_lost(sim_world_t *w, sim_gw_t *g, uint64_t ev_now);
void sim_check_lost_missing(sim_world_t *w, sim_gw_t *g, uint64_t now);
void sim_violation(sim_world_t *w, int kind, const char *what);

/* --multi: what the gateway's library says of each resource of its multi lease at one
 * moment (local ms), in the order asked */
typedef struct sim_multi_view {
    uint32_t count;
    uint8_t res[SIM_MAX_RESOURCES];
    bool held[SIM_MAX_RESOURCES];
    uint64_t token[SIM_MAX_RESOURCES];
    uint64_t deadline[SIM_MAX_RESOURCES]; /* each lock's own */
} sim_multi_view_t;
/* g starts asking (kept until its next grant); g was granted every resource of v (tokens
 * checked per resource); g drives every resource of v its library says it holds (checked
 * for multi_partial first, with g->deadline the multi lease's as the gateway believes it);
 * the run ends (every gateway still asking checked for multi_starved). */
void sim_check_multi_ask(sim_world_t *w, sim_gw_t *g);
void sim_check_multi_acquired(sim_world_t *w, sim_gw_t *g, const sim_multi_view_t *v);
void sim_check_multi_drive(sim_world_t *w, sim_gw_t *g, uint64_t local_now,
                           const sim_multi_view_t *v);
void sim_check_multi_end(sim_world_t *w);
/* The longest a gateway may ask in the calm phase without a grant (multi_starved), true us:
 * (gateways + resources / K) x (H + W). In the calm phase (no faults) each gateway asks until
 * it is granted once and then no more, so at most gateways + resources / K holds end in it
 * (the ones running when it began, at most resources / K at once, and one per gateway).
 * While anyone asks, one of them ends or begins within H + W:
 * the resources are taken in one order, so every chain of waiting ends at a holder, whose
 * hold ends within H = 2.5 TTL of work + 20 ms stop margin + a 200 ms think (a lease-bound
 * one within TTL), and an attempt that waits ends within W = 2 TTL + a 200 ms think and
 * retries. No hung work in --multi (no keepalive). */
uint64_t sim_multi_starve_bound_us(const sim_world_t *w);
/* --fair uses the same draining calm phase (sim_check_multi_ask at each acquire, the check at
 * each grant and at the end; a crashed gateway is not checked) with fair_starved and this
 * bound, true us: (P + 1) x (H + W) + TTL, P the gateways on one resource. At most P + 1
 * holds come before a waiter's grant (the one running when the calm phase began, and each
 * other gateway once; a wait begun in the fault phase may time out and queue again), each
 * within H + W as above (a hold, the hand-off to the next head), and one waiter crashed for
 * good holds the queue at most its ticket TTL: that is the promise checked. In the calm
 * phase a fair waiter's wait deadline is this bound, so it never times out. */
uint64_t sim_fair_starve_bound_us(const sim_world_t *w);
/* --fair (gw_fair.c reports, checker.c checks fair_order at each grant): a ticket taken, a
 * round with the ticket a quorum answered (sent, decided: true us), the round that named g
 * head, the wait ended (granted, failed, cancelled). */
void sim_check_fair_ticket(sim_world_t *w, sim_gw_t *g, int64_t ticket);
void sim_check_fair_round(sim_world_t *w, sim_gw_t *g, uint64_t sent_us);
void sim_check_fair_head(sim_world_t *w, sim_gw_t *g, uint64_t sent_us);
void sim_check_fair_left(sim_world_t *w, sim_gw_t *g);
const char *sim_violation_name(int kind);

/* Trace (world.c): hashed always, printed with --trace. */
void sim_trace(sim_world_t *w, const char *what, uint64_t a, uint64_t b, uint64_t c);

/* Gateways. */
/* g's pool and a connection to every node (world.c): the settings every kind of simulated
 * gateway uses; log may be NULL. Returns ELK_OK or the first error. */
int sim_gw_nodes_init(sim_world_t *w, sim_gw_t *g, bool resp3, const elk_log_t *log);
int sim_gw_setup_elk(sim_world_t *w, sim_gw_t *g);
void sim_gw_step_elk(sim_world_t *w, sim_gw_t *g, uint64_t now_ms, uint64_t *next_ms);
/* --fair (gw_fair.c): the fair handle in place of g->lock, with gw_elk.c's behaviour
 * (sim_gw_elk_event: its lock event handler, which the fair handle's events go to). */
void sim_gw_elk_event(void *user, elk_lock_t *lock, const elk_lock_event_t *ev);
int sim_gw_fair_init(sim_gw_t *g, const char *resource, const elk_lock_config_t *lc);
int sim_gw_fair_acquire(sim_gw_t *g, uint64_t now, uint64_t wait_deadline);
uint64_t sim_gw_fair_poll(sim_gw_t *g, uint64_t now);
int sim_gw_setup_setnx(sim_world_t *w, sim_gw_t *g);
int sim_gw_setup_naive_sem(sim_world_t *w, sim_gw_t *g);
void sim_gw_step_naive_sem(sim_world_t *w, sim_gw_t *g, uint64_t now_ms, uint64_t *next_ms);
void sim_gw_step_setnx(sim_world_t *w, sim_gw_t *g, uint64_t now_ms, uint64_t *next_ms);
void sim_gw_wake(sim_world_t *w, sim_gw_t *g, uint64_t at_us);
/* --multi (gw_multi.c), called by gw_elk.c's behaviour: start an attempt on a set drawn now
 * (ELK_E_WOULD_BLOCK, ELK_E_STATE while the last attempt's releases are in flight, or the
 * error), drive the held resources, release everything */
int sim_gw_multi_acquire(sim_world_t *w, sim_gw_t *g, uint64_t now);
void sim_gw_multi_drive(sim_world_t *w, sim_gw_t *g, uint64_t now);
void sim_gw_multi_release(sim_world_t *w, sim_gw_t *g, uint64_t now);
/* One gateway step: poll its library (the time it next wants) and let the gateway's
 * behaviour act, in turn, until the behaviour does nothing or `rounds` are used up;
 * *next_ms is the earlier of the last round's two wake times. */
typedef uint64_t (*sim_gw_poll_fn)(sim_gw_t *g, uint64_t now_ms);
typedef bool (*sim_gw_behave_fn)(sim_world_t *w, sim_gw_t *g, uint64_t now_ms, uint64_t *next_ms);
void sim_gw_step_rounds(sim_world_t *w, sim_gw_t *g, uint64_t now_ms, uint64_t *next_ms, int rounds,
                        sim_gw_poll_fn poll, sim_gw_behave_fn behave);

/* Profiles (profiles.c). */
bool sim_profile_get(const char *name, sim_profile_t *out);
const char *sim_profile_names(void);

#endif /* SIM_WORLD_H */
