/* SPDX-License-Identifier: MIT */
/*
 * elkd: the edgelock agent. Keeps connections to the Redis fleet open and drives every
 * lease from one poll loop (fleet descriptors, the control socket, its clients and a
 * signalfd in one poll set), through the public lib/ API only. Local programs take
 * leases over the control socket (docs/control-protocol.md); a lease is tied to the
 * connection that took it, so a client that dies releases it.
 *
 * Exit codes: 0 ok (also after SIGTERM/SIGINT), 1 runtime failure, 2 bad config or
 * usage, 3 cannot bind the control socket, 4 fleet setup failed (TLS files, ...).
 *
 * This header is the agent's own (not elkfw's): the agent_t every function is handed, its
 * clients, resources and waiters, and the functions one of elkd's files calls in another.
 * main.c starts the agent, loop.c runs it; each file says at its top what it does.
 */
#ifndef ELKD_AGENT_H
#define ELKD_AGENT_H
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "elk/err.h"
#include "elk/fair.h"
#include "elk/lock.h"
#include "elk/node.h"
#include "elk/platform.h"
#include "elk/pool.h"
#include "elk/port_posix.h"
#include "elkfw/access.h"
#include "elkfw/acl.h"
#include "elkfw/conf.h"
#include "elkfw/ctl.h"
#include "elkfw/evlog.h"
#include "elkfw/metrics.h"
#include "elkfw/nodelog.h"
#include "elkfw/notify.h"
#include "elkfw/reload.h"
#include "elkfw/say.h"
#include "elkfw/suggest.h"
#include "elkfw/supervise.h"
#ifdef ELKD_TLS
#include "elk/port_mbedtls.h"
#endif

#include "elk/version.h"

#define ELKD_EXIT_OK 0
#define ELKD_EXIT_RUNTIME 1
#define ELKD_EXIT_CONFIG 2
#define ELKD_EXIT_SOCKET 3
#define ELKD_EXIT_FLEET 4

/* Local programs connected at once. Each holds or waits for resources, so a few more
 * than the resources a file may configure leaves room for `elk status` callers. */
#ifndef ELKD_MAX_CLIENTS
#define ELKD_MAX_CLIENTS CONFIG_ELKD_MAX_CLIENTS
#endif
/* Back-pressure (docs/control-protocol.md): a client's next request is read and served
 * only while less than this is queued for it, so one answer (a STATUS METRICS answer can
 * be larger) goes beyond it at most. A queue that stops moving for [agent]
 * client_stall_timeout ends the connection (ELK_E_CTL_STALLED), never its size. */
#define ELKD_OUT_SOFT 16384u
/* Only events could push a queue this far (they come a few per renewal, and a client
 * that reads none is stalled long before): a safety net against a runaway, not a limit
 * a client can reach with requests. */
#define ELKD_OUT_HARD (8u * 1024u * 1024u)
/* Output goes to the socket in pieces of at most this much. The kernel frees a piece's
 * room only once the client has read all of it, and that room is how elkd sees a client
 * read: so a client that reads (however slowly) at least this much per stall bound is
 * seen to, and the stall bound's promise holds for it. */
#define ELKD_SEND_CHUNK 4096u
/* A drained queue larger than this gives its memory back. */
#define ELKD_OUT_KEEP 32768u
#define ELKD_POOL_BLOCKS (2u * CONFIG_ELK_MAX_NODES + 2u)
/* Upper bound on the wait for background release rounds at shutdown. */
/* The installed configuration (firmware/CMakeLists.txt: <sysconfdir>/elkd/elkd.conf). */
#ifndef ELKD_DEFAULT_CONFIG
#define ELKD_DEFAULT_CONFIG "/etc/elkd/elkd.conf"
#endif
#define ELKD_SHUTDOWN_GRACE_MS 3000u

/* An ACQUIRE of a semaphore in progress (semaphores.c): a pass tries each permit once. */
typedef struct elkd_sem_acq {
    bool active;               /* no answer yet */
    bool cancelled;            /* a RELEASE cancelled it: that RELEASE answers OK RELEASED */
    char name[ELKFW_NAME_MAX]; /* the semaphore */
    uint32_t start, tried;     /* this pass began at permit index start; permits tried so far */
    uint32_t seen, local_busy; /* permits served, of those held on this agent (for the answer) */
    size_t trying;             /* 1 + slot of the permit whose round runs, 0: none */
    uint64_t deadline;         /* the wait ends (0: no wait) */
    uint64_t next_pass;        /* paused until then (0: not paused) */
    uint32_t keepalive_ms;     /* the ACQUIRE's keepalive= */
    int last_err;              /* the last permit's refusal (ELK_OK: none) */
} elkd_sem_acq_t;

typedef struct client {
    int fd;            /* -1: free slot */
    pid_t pid;         /* peer pid (SO_PEERCRED), for status */
    elkfw_peer_t peer; /* uid, groups and executable as of connect(), for allow lists */
    uint64_t id;       /* connection number, for logs */
    char in_store[ELK_CTL_LINE_MAX];
    elkfw_linebuf_t in;
    char *out; /* answers and events not sent yet (heap, grows; NULL: none) */
    size_t out_len, out_cap;
    uint64_t out_stuck_since; /* output pending and no byte taken since then (0: none) */
    uint64_t active_at;       /* connected, last sent us bytes or took some: idle since */
    bool close_after_flush;
    bool drop;            /* I/O failed or stalled: close now */
    bool unresponsive;    /* dropped because it stopped reading (it may still live) */
    size_t cancelled_res; /* 1 + resource whose ACQUIRE a RELEASE cancelled, 0: none */
    elkd_sem_acq_t sem;   /* its ACQUIRE of a semaphore, if one is in progress */
} client_t;

typedef struct agent agent_t;

typedef struct resource {
    agent_t *agent;                    /* back to the agent, for the lock engine's callback */
    const elkfw_resource_conf_t *conf; /* &own: the settings the lock runs with */
    elkfw_resource_conf_t own;
    /* A reload changed or removed this resource while it was held or in flight: the new
     * settings (pending) apply, or the slot is freed (removing), once it is idle. */
    elkfw_resource_conf_t pending;
    bool has_pending, removing;
    bool in_use;                   /* false: a free slot (its resource was removed) */
    size_t idx;                    /* its slot: a->res[idx] == this, a->allow[idx] its list */
    uint64_t asked_at, granted_at; /* this lease's ACQUIRE and grant, for the log's durations */
    elkfw_res_metrics_t metrics;
    /* The lock. With fair waiting (fair = on) it is the lock behind an elk_fair_t, whose
     * first member it is: &lock is the lock in service either way, and every use of a held
     * lease (renewal, keepalive, STATUS, ...) stays as it is (elkd__lock_init). */
    union {
        elk_lock_t lock;
#if CONFIG_ELK_FAIR
        elk_fair_t fair;
#endif
    };
    bool fair_on;                 /* the lock in service is fair's (set when it was set up) */
    int owner;                    /* client slot holding or acquiring it, -1 if none */
    uint64_t owner_id;            /* that client's id (slots are reused) */
    bool acquiring;               /* ACQUIRE sent to the library, no answer yet */
    uint64_t local_wait_deadline; /* a waiting local client: when it gives up */
    uint64_t shutdown_release_at; /* shutdown: release when the holder had its stop margin */
    elkfw_sup_t sup;              /* the holder's command (elk run's process group), if told */
    /* Why the last failed round of a waiting acquire failed, so a wait that times out can
     * say what stood in the way (the library reports ELK_E_LOCK_TIMEOUT for it). */
    int last_round_err;     /* ELK_OK: no failed round in this acquire */
    uint32_t keepalive_ms;  /* this hold's keepalive interval (ACQUIRE keepalive=, or conf) */
    bool keepalive_missed;  /* renewal stopped: the holder's KEEPALIVE came too late */
    uint64_t suspect_since; /* SUSPECT spell started at (0: not suspect), for the log */
    char last_counts[200];  /* that round's counts (round_counts) */
    size_t last_ready;      /* nodes ready when that round failed */
} resource_t;

typedef struct waiter {
    int client; /* slot, -1: free */
    uint64_t client_id;
    size_t res;
    uint64_t deadline; /* give up (ELK_E_LOCK_TIMEOUT) at this time */
    uint32_t wait_ms;
    uint32_t keepalive_ms; /* its ACQUIRE's keepalive= (0: the resource's) */
    uint64_t seq;          /* arrival order: the oldest waiter goes first */
} waiter_t;

struct agent {
    elkfw_conf_t conf;
    const char *conf_path;
    elkfw_log_target_t log_target;
    int log_level;
    const char *socket_override;
    bool foreground;

    elk_clock_t clock;
    elk_entropy_t entropy;
    elk_log_t lib_log;
    uint8_t pool_mem[ELKD_POOL_BLOCKS * CONFIG_ELK_POOL_BLOCK_SIZE] __attribute__((aligned(8)));
    elk_pool_t pool;
    elk_posix_tcp_t tcp[CONFIG_ELK_MAX_NODES];
#ifdef ELKD_TLS
    elk_tls_shared_t tls_shared[CONFIG_ELK_MAX_NODES];
    elk_tls_conn_t tls_conn[CONFIG_ELK_MAX_NODES];
    bool tls_used[CONFIG_ELK_MAX_NODES];
#endif
    elk_node_t nodes[CONFIG_ELK_MAX_NODES];
    elk_fleet_t fleet;
    elk_client_t client;
    char gateway_id[CONFIG_ELK_GATEWAY_ID_MAX_LEN + 1];

    /* The resource slots, from the heap as the configuration needs (res_cap of them, n_res
     * used so far): each resource_t on its own, as the lock client keeps a pointer to its
     * lock, so the table of pointers may grow at a reload while leases are held. */
    resource_t **res;
    elkfw_allow_t *allow; /* who may take res[i] (allow_users, allow_groups); res_cap long */
    size_t res_cap;
    size_t n_acquiring; /* resources with acquiring set (elkd__set_acquiring) */
    gid_t socket_gid;   /* socket_group, (gid_t)-1: elkd's own */
    size_t n_res;
    client_t clients[ELKD_MAX_CLIENTS];
    waiter_t waiters[ELKD_MAX_CLIENTS * 2];
    uint64_t next_client_id;
    uint64_t next_waiter_seq;

    int listen_fd;
    int signal_fd;
    bool shutting_down;
    uint64_t shutdown_started;
    int ready_pipe;      /* daemon mode: tells the parent we are up (-1 if none) */
    int level_override;  /* --log-level, which a reload keeps (-1: none) */
    uint64_t started_at; /* clock ms at start, for the uptime in STATUS */
    uint32_t reloads, reload_failures;
    uint32_t full_refusals; /* connections refused with ELK_E_AGENT_FULL, for the metrics */
    char reload_error[ELKFW_ERR_MAX]; /* why the last reload kept the running config ("" ok) */
    elkfw_notify_t notify;            /* the service manager ($NOTIFY_SOCKET), if any */
    bool ready_sent;
    uint64_t ready_by;   /* READY=1 by then even without a quorum (said in STATUS=) */
    char sd_status[200]; /* the last STATUS= sent */
    elkfw_nodelog_t nodelog[CONFIG_ELK_MAX_NODES]; /* what was said about each node being down */
    elkfw_lograte_t lograte;                       /* repeated warnings, rate-limited */
    bool journal; /* stderr is the journal: lines start with <priority> */
    elkfw_node_metrics_t node_metrics[CONFIG_ELK_MAX_NODES];
    /* a spell of elk_client_local_clock_suspect is on (its end is said once) */
    bool local_clock_suspect;
    uint64_t quarantine_until[CONFIG_ELK_MAX_NODES]; /* last seen quarantine end, 0: none */
    uint64_t metrics_next;                           /* next rewrite of [agent] metrics_file */
    bool metrics_failed;                             /* the last rewrite failed (said once) */
    elkfw_evlog_t evlog;                             /* [agent] events_file, fd -1: none */
};

/* Shared between the agent's files (each says what it does at its top). */
void elkd__log_summary(void *ctx, int level, const char *text, size_t len);
void elkd__lib_log_write(void *ctx, int level, const char *module, const char *text, size_t len);
__attribute__((format(printf, 3, 4))) void elkd__log(agent_t *a, int level, const char *fmt, ...);
void elkd__client_stalled(agent_t *a, client_t *c, uint64_t stuck_ms, const char *why);
void elkd__client_write(agent_t *a, int slot, const char *buf, size_t len);
__attribute__((format(printf, 3, 4))) void elkd__client_send(agent_t *a, int slot, const char *fmt,
                                                             ...);
void elkd__client_err(agent_t *a, int slot, int code, const char *detail);
void elkd__client_flush(agent_t *a, int slot, uint64_t now);
resource_t *elkd__find_res(agent_t *a, const char *name);
bool elkd__owned_by(agent_t *a, const resource_t *r, int slot);
bool elkd__res_orphaned(agent_t *a, const resource_t *r, uint64_t now);
void elkd__send_grant(agent_t *a, int slot, const char *what, const resource_t *r, uint64_t token,
                      uint32_t validity_ms, uint64_t deadline);
void elkd__record_event(agent_t *a, elkfw_ev_kind_t kind, const resource_t *r, int slot,
                        uint64_t token, uint64_t now, uint64_t deadline, int err);
void elkd__record_lock_event(agent_t *a, const resource_t *r, int slot, const elk_lock_event_t *ev);
void elkd__evlog_apply(agent_t *a, const char *old_path, uint32_t old_max);
void elkd__start_acquire(agent_t *a, resource_t *r, int slot, uint32_t wait_ms,
                         uint32_t keepalive_ms, uint64_t now);
void elkd__hand_to_next_waiter(agent_t *a, resource_t *r, uint64_t now);
void elkd__release_res(agent_t *a, resource_t *r, uint64_t now, const char *why);
void elkd__release_when_stopped(agent_t *a, resource_t *r, uint64_t now, const char *why);
bool elkd__stop_command(agent_t *a, resource_t *r, uint64_t now, const char *why, bool client_told);
void elkd__supervise_step(agent_t *a, resource_t *r, uint64_t now, uint64_t *next);
__attribute__((format(printf, 4, 5))) void elkd__counts_add(char *out, size_t cap, size_t *len,
                                                            const char *fmt, ...);
void elkd__on_lock_event(void *user, elk_lock_t *lock, const elk_lock_event_t *ev);
void elkd__on_node_state(void *user, elk_node_t *node, elk_node_state_t state, int err);
void elkd__node_summaries(agent_t *a, uint64_t now, uint64_t *next);
size_t elkd__clients_connected(agent_t *a);
void elkd__send_status(agent_t *a, int slot, bool json, uint64_t now);
void elkd__send_metrics(agent_t *a, int slot, uint64_t now);
void elkd__metrics_step(agent_t *a, uint64_t now, uint64_t *next);
void elkd__drop_waiters_of(agent_t *a, int slot);
void elkd__handle_request(agent_t *a, int slot, const char *line, size_t len, uint64_t now);
void elkd__client_close(agent_t *a, int slot, uint64_t now, const char *why);
void elkd__accept_clients(agent_t *a, uint64_t now);
bool elkd__client_pending(agent_t *a, int slot, size_t *ri);
bool elkd__serve_waiting_requests(agent_t *a, uint64_t now);
void elkd__client_readable(agent_t *a, int slot, uint64_t now);
int elkd__setup_fleet(agent_t *a, char *err, size_t errlen);
void elkd__teardown_fleet(agent_t *a);
bool elkd__res_settle(agent_t *a, resource_t *r);
void elkd__settle_reloaded(agent_t *a, uint64_t now, uint64_t *next);
void elkd__log_conf_warnings(agent_t *a);
void elkd__reload_config(agent_t *a, uint64_t now);
void elkd__hygiene_step(agent_t *a, uint64_t now, uint64_t *next);
int elkd__run_loop(agent_t *a);
void elkd__pick_gateway_id(agent_t *a);
int elkd__read_conf(const agent_t *a, elkfw_conf_t *c, elkfw_allow_t **allow, gid_t *gid, char *err,
                    size_t errlen);
bool elkd__res_reserve(agent_t *a, size_t n);
resource_t *elkd__res_slot(agent_t *a, size_t k);
void elkd__res_free_all(agent_t *a);
void elkd__set_acquiring(agent_t *a, resource_t *r, bool on);
int elkd__lock_init(agent_t *a, resource_t *r, const elk_lock_config_t *lc);
int elkd__lock_deinit(resource_t *r);
bool elkd__lock_busy(const resource_t *r);
int elkd__lock_release(resource_t *r, uint64_t now);
void elkd__fair_step(agent_t *a, uint64_t now, uint64_t *next);

bool elkd__is_semaphore(agent_t *a, const char *name);
resource_t *elkd__sem_permit_of(agent_t *a, const char *name, int slot);
void elkd__sem_pass(agent_t *a, int slot, uint64_t now);
void elkd__sem_acquire(agent_t *a, int slot, const elkfw_ctl_req_t *req, uint64_t now);
bool elkd__sem_round_failed(agent_t *a, int slot, resource_t *r, int err, uint64_t now);
void elkd__sem_granted(agent_t *a, int slot, const resource_t *r);
void elkd__sem_permit_free(agent_t *a, const resource_t *r, uint64_t now);
void elkd__sem_step(agent_t *a, uint64_t now, uint64_t *next);
void elkd__sem_cancel(agent_t *a, int slot, uint64_t now);

#endif
