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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
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
#define ELKD_MAX_CLIENTS 16
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
    uint64_t asked_at, granted_at; /* this lease's ACQUIRE and grant, for the log's durations */
    elkfw_res_metrics_t metrics;
    elk_lock_t lock;
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

    resource_t res[ELKFW_MAX_RESOURCES];
    elkfw_allow_t allow[ELKFW_MAX_RESOURCES]; /* who may take res[i] (allow_users, allow_groups) */
    gid_t socket_gid;                         /* socket_group, (gid_t)-1: elkd's own */
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

/* ------------------------------------------------------------------ logging */

static const char *level_name(int level)
{
    switch (level) {
    case ELK_LOG_ERROR:
        return "error";
    case ELK_LOG_WARN:
        return "warn";
    case ELK_LOG_INFO:
        return "info";
    default:
        return "debug";
    }
}

static void log_write(agent_t *a, int level, const char *module, const char *text, size_t len)
{
    if (a->log_target == ELKFW_LOG_SYSLOG) {
        static const int prio[] = {LOG_ERR, LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
        syslog(prio[level >= 1 && level <= 4 ? level : 4], "%s: %.*s", module, (int)len, text);
    } else if (a->journal) {
        /* the journal stamps the time itself and reads the priority from <N> */
        static const int prio[] = {3, 3, 4, 6, 7};
        fprintf(stderr, "<%d>%s %s: %.*s\n", prio[level >= 1 && level <= 4 ? level : 4],
                level_name(level), module, (int)len, text);
    } else {
        struct timespec ts;
        struct tm tm;
        char when[32];
        clock_gettime(CLOCK_REALTIME, &ts); /* for people reading logs only, never for leases */
        gmtime_r(&ts.tv_sec, &tm);
        strftime(when, sizeof when, "%H:%M:%S", &tm);
        fprintf(stderr, "%s.%03ldZ elkd %s %s: %.*s\n", when, ts.tv_nsec / 1000000L,
                level_name(level), module, (int)len, text);
    }
}

/* A summary of repeated lines left out (elkfw/say.h). */
static void log_summary(void *ctx, int level, const char *text, size_t len)
{
    log_write(ctx, level, "elkd", text, len);
}

/* Every line elkd writes. Warnings and errors that repeat are rate-limited: a flood
 * (connections refused in a loop, a client refused again and again) costs a few lines and
 * a count, not the log. */
static void log_line(agent_t *a, int level, const char *module, const char *text, size_t len)
{
    if (level > a->log_level) {
        return;
    }
    if (level <= ELK_LOG_WARN && a->clock.now_ms != NULL &&
        !elkfw_lograte_admit(&a->lograte, level, module, text, len, a->clock.now_ms(a->clock.ctx),
                             log_summary, a)) {
        return;
    }
    log_write(a, level, module, text, len);
}

/* The library's lines, made quieter for flash and small log buffers: a node's lines while
 * it is down and that was said (its summary and its return are elkd's, elkfw/nodelog.h),
 * and the lease engine's per-event lines (elkd logs grant, loss and release itself, with
 * holder and durations) go to debug. */
static void lib_log_write(void *ctx, int level, const char *module, const char *text, size_t len)
{
    agent_t *a = ctx;
    size_t i;
    if (level == ELK_LOG_INFO && strcmp(module, "lock") == 0) {
        level = ELK_LOG_DEBUG;
    }
    for (i = 0; level < ELK_LOG_DEBUG && strcmp(module, "node") == 0 && i < a->conf.n_nodes; i++) {
        char addr[ELKFW_STR_MAX + 16];
        int n = snprintf(addr, sizeof addr, "%s:%u ", a->conf.nodes[i].host,
                         (unsigned)a->conf.nodes[i].port);
        if (n > 0 && (size_t)n <= len && memcmp(text, addr, (size_t)n) == 0 &&
            elkfw_nodelog_quiet(&a->nodelog[i])) {
            level = ELK_LOG_DEBUG;
        }
    }
    log_line(a, level, module, text, len);
}

__attribute__((format(printf, 3, 4))) static void elkd_log(agent_t *a, int level, const char *fmt,
                                                           ...)
{
    char buf[1024];
    va_list ap;
    int n;
    if (level > a->log_level) {
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    log_line(a, level, "elkd", buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* ------------------------------------------------------------------ client output */

/* A client that stopped reading: its queue did not move for the stall bound (or, as a
 * safety net, grew beyond ELKD_OUT_HARD, or no memory was left for it). Dropped as
 * unresponsive: it may still live and drive, so its leases are not simply released
 * (lease_after_client). */
static void client_stalled(agent_t *a, client_t *c, uint64_t stuck_ms, const char *why)
{
    elkd_log(a, ELK_LOG_WARN,
             "client %" PRIu64 " (uid %u, pid %d, %s): %s: %zu bytes of answers and events "
             "unread, none taken for %" PRIu64 " ms (%s); disconnecting it",
             c->id, (unsigned)c->peer.uid, (int)c->pid, c->peer.exe,
             elk_err_name(ELK_E_CTL_STALLED), c->out_len, stuck_ms, why);
    c->drop = true;
    c->unresponsive = true;
}

/* Room for more bytes in c's queue: grown to fit (answers are never cut or thrown away). */
static bool client_reserve(agent_t *a, client_t *c, size_t more)
{
    size_t cap = c->out_cap != 0 ? c->out_cap : 4096u;
    char *p;
    if (more <= c->out_cap - c->out_len) {
        return true;
    }
    if (more > ELKD_OUT_HARD - c->out_len) {
        client_stalled(a, c, 0, "the queue passed its hard limit");
        return false;
    }
    while (cap - c->out_len < more) {
        cap *= 2u;
    }
    p = realloc(c->out, cap);
    if (p == NULL) {
        client_stalled(a, c, 0, "no memory for its queue");
        return false;
    }
    c->out = p;
    c->out_cap = cap;
    return true;
}

/* Queue len bytes for the client in slot (a closed or dropped one takes nothing). */
static void client_write(agent_t *a, int slot, const char *buf, size_t len)
{
    client_t *c;
    if (slot < 0 || slot >= ELKD_MAX_CLIENTS) {
        return;
    }
    c = &a->clients[slot];
    if (c->fd < 0 || c->drop || !client_reserve(a, c, len)) {
        return;
    }
    memcpy(c->out + c->out_len, buf, len);
    c->out_len += len;
}

__attribute__((format(printf, 3, 4))) static void client_send(agent_t *a, int slot, const char *fmt,
                                                              ...)
{
    char line[1024];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    if ((size_t)n < sizeof line) {
        client_write(a, slot, line, (size_t)n);
    } else {
        char *big = malloc((size_t)n + 1u); /* a STATUS JSON line of a large configuration */
        if (big == NULL) {
            if (slot >= 0 && slot < ELKD_MAX_CLIENTS && a->clients[slot].fd >= 0) {
                client_stalled(a, &a->clients[slot], 0, "no memory for its answer");
            }
            return;
        }
        va_start(ap, fmt);
        (void)vsnprintf(big, (size_t)n + 1u, fmt, ap);
        va_end(ap);
        client_write(a, slot, big, (size_t)n);
        free(big);
    }
}

static void client_err(agent_t *a, int slot, int code, const char *detail)
{
    if (detail != NULL && detail[0] != '\0') {
        client_send(a, slot, "ERR %s %s: %s\n", elk_err_name(code), elk_err_message(code), detail);
    } else {
        client_send(a, slot, "ERR %s %s\n", elk_err_name(code), elk_err_message(code));
    }
}

/* Send what the socket takes of buf[*sent..len). Returns true once all of it is sent. */
static bool client_send_some(client_t *c, const char *buf, size_t len, size_t *sent)
{
    while (*sent < len && !c->drop) {
        size_t n = len - *sent < ELKD_SEND_CHUNK ? len - *sent : ELKD_SEND_CHUNK;
        ssize_t w = send(c->fd, buf + *sent, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                c->drop = true;
            }
            return false;
        }
        *sent += (size_t)w;
    }
    return *sent == len;
}

/* Send what the socket takes; note since when the queue has not moved (the stall bound
 * counts only time in which the client took nothing, however slowly it reads). */
static void client_flush(agent_t *a, int slot, uint64_t now)
{
    client_t *c = &a->clients[slot];
    size_t sent = 0;
    (void)a;
    (void)client_send_some(c, c->out, c->out_len, &sent);
    if (sent > 0) {
        memmove(c->out, c->out + sent, c->out_len - sent);
        c->out_len -= sent;
        c->active_at = now; /* the idle bound counts from the last answer taken, too */
    }
    if (c->out_len > 0) {
        c->out_stuck_since = sent > 0 || c->out_stuck_since == 0 ? now : c->out_stuck_since;
        return;
    }
    c->out_stuck_since = 0;
    if (c->out_cap > ELKD_OUT_KEEP) {
        free(c->out);
        c->out = NULL;
        c->out_cap = 0;
    }
}

/* ------------------------------------------------------------------ resources */

static resource_t *find_res(agent_t *a, const char *name)
{
    size_t i;
    for (i = 0; i < a->n_res; i++) {
        if (a->res[i].in_use && !a->res[i].removing && strcmp(a->res[i].conf->name, name) == 0) {
            return &a->res[i];
        }
    }
    return NULL;
}

static bool owned_by(agent_t *a, const resource_t *r, int slot)
{
    return r->owner == slot && slot >= 0 && a->clients[slot].fd >= 0 &&
        a->clients[slot].id == r->owner_id;
}

/* A holder's command is being stopped (its client left), or a lease nobody supervises
 * is left to run out: no one else on this gateway may take the resource yet. */
static bool res_orphaned(agent_t *a, const resource_t *r, uint64_t now)
{
    if (elkfw_sup_stopping(&r->sup)) {
        return true;
    }
    return !owned_by(a, r, r->owner) && elk_lock_is_held(&r->lock, now);
}

/* The grant line: OK ACQUIRED, EVENT RENEWED and EVENT RECOVERED have one shape. */
static void send_grant(agent_t *a, int slot, const char *what, const resource_t *r, uint64_t token,
                       uint32_t validity_ms, uint64_t deadline)
{
    /* The absolute deadline (our clock is CLOCK_BOOTTIME, which every process on this
     * host shares) lets the client stop in time however late it reads this line. */
    client_send(a, slot,
                "%s %s %" PRIu64 " %" PRIu32 " %" PRIu32 " deadline_boottime_ms=%" PRIu64 "\n",
                what, r->conf->name, token, validity_ms, r->conf->stop_margin_ms, deadline);
}

/* ------------------------------------------------------------------ event record */

/* One record of the lease event log (events_file): who (slot's peer, if connected), what,
 * when; deadline on our clock, 0 when none; err ELK_OK when no cause. */
static void record_event(agent_t *a, elkfw_ev_kind_t kind, const resource_t *r, int slot,
                         uint64_t token, uint64_t now, uint64_t deadline, int err)
{
    elkfw_event_t ev;
    if (a->evlog.fd < 0) {
        return;
    }
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    ev.token = token;
    ev.uid = -1;
    ev.pid = -1;
    snprintf(ev.gateway, sizeof ev.gateway, "%.63s", a->gateway_id);
    snprintf(ev.resource, sizeof ev.resource, "%.63s", r->conf->name);
    if (slot >= 0 && a->clients[slot].fd >= 0) {
        const char *exe = a->clients[slot].peer.exe, *base = strrchr(exe, '/');
        ev.uid = (int64_t)a->clients[slot].peer.uid;
        ev.pid = (int64_t)a->clients[slot].pid;
        snprintf(ev.cmd, sizeof ev.cmd, "%.63s", base ? base + 1 : exe);
    }
    if (err != ELK_OK) {
        snprintf(ev.cause, sizeof ev.cause, "%s", elk_err_name(err));
    }
    elkfw_event_stamp(&ev, now, deadline);
    if (!elkfw_evlog_append(&a->evlog, &ev) && a->evlog.dropped == 1) {
        elkd_log(a, ELK_LOG_WARN, "events_file %s: cannot write a record: %s (counted, said once)",
                 a->conf.agent.events_file, strerror(errno));
    }
}

/* The library's lease events that go into the record (renewals that succeed do not: one
 * per TTL/3 would push the interesting ones out of the ring). */
static void record_lock_event(agent_t *a, const resource_t *r, int slot, const elk_lock_event_t *ev)
{
    static const int8_t kinds[] = {
        [ELK_LOCK_EV_ACQUIRED] = ELKFW_EV_GRANT,
        [ELK_LOCK_EV_ACQUIRE_FAILED] = ELKFW_EV_REFUSED,
        [ELK_LOCK_EV_RENEW_FAILED] = ELKFW_EV_RENEW_FAILED,
        [ELK_LOCK_EV_RENEW_STOPPED] = ELKFW_EV_RENEW_FAILED,
        [ELK_LOCK_EV_SUSPECT] = ELKFW_EV_SUSPECT,
        [ELK_LOCK_EV_RECOVERED] = ELKFW_EV_RECOVERED,
        [ELK_LOCK_EV_LOST] = ELKFW_EV_LOST,
        [ELK_LOCK_EV_RETRY] = -1,
        [ELK_LOCK_EV_RENEWED] = -1,
        [ELK_LOCK_EV_RELEASED] = -1,
    };
    if ((size_t)ev->type >= sizeof kinds || kinds[ev->type] < 0) {
        return;
    }
    record_event(a, (elkfw_ev_kind_t)kinds[ev->type], r, slot, ev->token, ev->now,
                 ev->type == ELK_LOCK_EV_LOST ? 0 : ev->deadline, ev->err);
}

/* events_file as configured now: opened, reopened when it changed, closed when removed. */
static void evlog_apply(agent_t *a, const char *old_path, uint32_t old_max)
{
    const elkfw_agent_conf_t *c = &a->conf.agent;
    if (a->evlog.fd >= 0 && strcmp(old_path, c->events_file) == 0 && old_max == c->events_max) {
        return;
    }
    elkfw_evlog_close(&a->evlog);
    if (c->events_file[0] == '\0') {
        return;
    }
    int rc =
        elkfw_evlog_open(&a->evlog, c->events_file, (uint64_t)c->events_max * ELKFW_EVLOG_RECORD);
    if (rc < 0) {
        elkd_log(a, ELK_LOG_WARN,
                 "events_file %s: cannot open: %s; running without a lease event record",
                 c->events_file, strerror(-rc));
    } else {
        elkd_log(a, ELK_LOG_INFO, "lease event record: %s (%" PRIu64 " records, next #%" PRIu64 ")",
                 c->events_file, a->evlog.slots, a->evlog.seq + 1u);
    }
}

/* keepalive_ms: this hold's keepalive interval asked for (0: the resource's setting). */
static void start_acquire(agent_t *a, resource_t *r, int slot, uint32_t wait_ms,
                          uint32_t keepalive_ms, uint64_t now)
{
    int rc;
    uint64_t wd = wait_ms > 0 ? now + wait_ms : 0;
    r->keepalive_ms = keepalive_ms != 0 ? keepalive_ms : r->conf->keepalive_ms;
    r->keepalive_missed = false;
    r->suspect_since = 0;
    (void)elk_lock_set_keepalive(&r->lock, now, r->keepalive_ms);
    r->owner = slot;
    r->owner_id = a->clients[slot].id;
    r->acquiring = true;
    r->last_round_err = ELK_OK;
    r->asked_at = now;
    rc = elk_lock_acquire(&r->lock, now, wd);
    if (rc == ELK_E_WOULD_BLOCK) {
        elkd_log(a, ELK_LOG_DEBUG,
                 "%s: acquire round started for client %" PRIu64 " (wait %" PRIu32 " ms)",
                 r->conf->name, a->clients[slot].id, wait_ms);
        return;
    }
    r->acquiring = false;
    if (rc == ELK_OK) {
        /* Already held by this handle: cannot happen as the agent holds once per resource;
         * answer truthfully anyway. */
        send_grant(a, slot, "OK ACQUIRED", r, elk_lock_token(&r->lock),
                   elk_lock_validity(&r->lock, now), elk_lock_deadline(&r->lock));
        return;
    }
    r->owner = -1;
    client_err(a, slot, rc, r->conf->name);
}

/* Give the resource to the oldest local waiter, if any. */
static bool res_settle(agent_t *a, resource_t *r);

static void hand_to_next_waiter(agent_t *a, resource_t *r, uint64_t now)
{
    size_t i, best = SIZE_MAX;
    size_t ri = (size_t)(r - a->res);
    if (r->owner >= 0 || a->shutting_down || res_orphaned(a, r, now) || !res_settle(a, r)) {
        return; /* a reload's new settings wait for the release round: the tick hands over */
    }
    for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
        waiter_t *w = &a->waiters[i];
        if (w->client >= 0 && w->res == ri && (best == SIZE_MAX || w->seq < a->waiters[best].seq)) {
            best = i;
        }
    }
    if (best != SIZE_MAX) {
        waiter_t w = a->waiters[best];
        a->waiters[best].client = -1;
        if (a->clients[w.client].fd >= 0 && a->clients[w.client].id == w.client_id) {
            uint32_t left = w.deadline > now ? (uint32_t)(w.deadline - now) : 0;
            start_acquire(a, r, w.client, left, w.keepalive_ms, now);
        }
    }
}

static void release_res(agent_t *a, resource_t *r, uint64_t now, const char *why)
{
    uint64_t token = elk_lock_token(&r->lock);
    uint32_t renewals = elk_lock_renewals(&r->lock);
    bool held = elk_lock_is_held(&r->lock, now);
    int rc = elk_lock_release(&r->lock, now);
    if (held) {
        record_event(a, ELKFW_EV_RELEASE, r, r->owner, token, now, 0, ELK_OK);
        elkfw_hist_add(&r->metrics.hold, now - r->granted_at);
        elkd_log(a, ELK_LOG_INFO,
                 "%s: released (%s), token %" PRIu64 ", held %" PRIu64 " ms, %" PRIu32 " renewal%s",
                 r->conf->name, why, token, now - r->granted_at, renewals,
                 renewals == 1 ? "" : "s");
    } else {
        elkd_log(a, rc == ELK_E_NOT_HELD ? ELK_LOG_DEBUG : ELK_LOG_INFO, "%s: released (%s)%s",
                 r->conf->name, why,
                 rc == ELK_E_LOCK_LOST ? "; the lease had already been lost" : "");
    }
    r->owner = -1;
    r->acquiring = false;
    r->shutdown_release_at = 0;
    elkfw_sup_clear(&r->sup);
    hand_to_next_waiter(a, r, now);
}

/* Release unless the holder's command is still being stopped: then the supervision
 * step releases once the group is gone (or lets the lease run out). */
static void release_when_stopped(agent_t *a, resource_t *r, uint64_t now, const char *why)
{
    if (elkfw_sup_stopping(&r->sup)) {
        r->shutdown_release_at = 0;
        return;
    }
    release_res(a, r, now, why);
}

/* The supervised group cannot be stopped (still there after SIGKILL, or a process of
 * another user in it, which elkd must not signal): the command may still drive, so the
 * lease is never released early; it is no longer renewed and runs out at its deadline. */
static void supervise_gave_up(agent_t *a, resource_t *r, uint64_t now)
{
    if (elk_lock_is_held(&r->lock, now)) {
        elkd_log(a, ELK_LOG_ERROR,
                 "%s: giving up on process group %d (%s); not releasing the lease: it is no "
                 "longer renewed and runs out in %" PRIu32 " ms",
                 r->conf->name, (int)r->sup.pgid, r->sup.why, elk_lock_validity(&r->lock, now));
        (void)elk_lock_abandon(&r->lock, now);
        r->owner = -1;
        r->shutdown_release_at = 0;
    } else {
        elkd_log(a, ELK_LOG_ERROR,
                 "%s: giving up on process group %d (%s); its lease has already ended",
                 r->conf->name, (int)r->sup.pgid, r->sup.why);
        elkfw_sup_clear(&r->sup);
        hand_to_next_waiter(a, r, now);
    }
}

/* Stop the holder's command before its lease goes: SIGTERM now (unless its client,
 * still connected, was just told and does that itself), SIGKILL after the stop margin
 * (elkfw/supervise.h). Returns false if there is no supervised command. A group that
 * is no longer the client's alone is not signalled: the lease is left to run out. */
static bool stop_command(agent_t *a, resource_t *r, uint64_t now, const char *why, bool client_told)
{
    if (r->sup.stage != ELKFW_SUP_WATCHING) {
        return false;
    }
    elkd_log(a, client_told ? ELK_LOG_INFO : ELK_LOG_WARN,
             "%s: %s; stopping its command (process group %d: %s, SIGKILL in %" PRIu32
             " ms if still there) before the lease is released",
             r->conf->name, why, (int)r->sup.pgid,
             client_told ? "its client sends SIGTERM" : "SIGTERM now", r->conf->stop_margin_ms);
    if (!elkfw_sup_stop(&r->sup, now, r->conf->stop_margin_ms, !client_told)) {
        supervise_gave_up(a, r, now);
    }
    return true;
}

/* A supervised command being stopped: release once it is gone; if that cannot be
 * confirmed in time, stop renewing and let the lease run out at its deadline. */
static void supervise_step(agent_t *a, resource_t *r, uint64_t now, uint64_t *next)
{
    switch (elkfw_sup_step(&r->sup, now, next)) {
    case ELKFW_SUP_GONE:
        if (r->shutdown_release_at != 0 && now < r->shutdown_release_at) {
            break; /* shutdown keeps the lease for the stop margin; it releases then */
        }
        if (elk_lock_is_held(&r->lock, now) && (!owned_by(a, r, r->owner) || a->shutting_down)) {
            release_res(a, r, now, "its command has stopped");
        } else {
            hand_to_next_waiter(a, r, now);
        }
        break;
    case ELKFW_SUP_GIVE_UP:
        supervise_gave_up(a, r, now);
        break;
    case ELKFW_SUP_IDLE:
    case ELKFW_SUP_STOPPING:
        break;
    }
}

/* Per node of a round: reply times, and replies the safety check did not count. Returns
 * the slowest reply (the round's time). */
static uint32_t round_metrics(agent_t *a, const elk_lock_event_t *ev)
{
    uint32_t slowest = 0;
    size_t i;
    for (i = 0; ev->nodes != NULL && i < ev->node_count && i < a->fleet.count; i++) {
        const elk_lock_node_result_t *nr = &ev->nodes[i];
        if (nr->status == ELK_LOCK_NODE_OK || nr->status == ELK_LOCK_NODE_BUSY) {
            elkfw_hist_add(&a->node_metrics[i].rtt, nr->rtt_ms);
            slowest = nr->rtt_ms > slowest ? nr->rtt_ms : slowest;
        } else if (nr->status == ELK_LOCK_NODE_ERROR &&
                   (nr->err == ELK_E_UNSAFE_SERVER || nr->err == ELK_E_SERVER_UNCHECKED)) {
            a->node_metrics[i].votes_denied++;
        }
    }
    return slowest;
}

/* The metrics side of a lease event (elkfw/metrics.h). */
static void lease_metrics(agent_t *a, resource_t *r, const elk_lock_event_t *ev)
{
    elkfw_res_metrics_t *m = &r->metrics;
    uint32_t round = ev->type == ELK_LOCK_EV_RELEASED ? 0 : round_metrics(a, ev);
    switch (ev->type) {
    case ELK_LOCK_EV_ACQUIRED:
        m->grants++;
        elkfw_hist_add(&m->wait, ev->now - r->asked_at);
        break;
    case ELK_LOCK_EV_ACQUIRE_FAILED:
        m->refusals++;
        break;
    case ELK_LOCK_EV_SUSPECT:
        m->suspects++;
        m->renewals_failed++; /* SUSPECT stands for the spell's first failed round */
        break;
    case ELK_LOCK_EV_RENEWED:
    case ELK_LOCK_EV_RECOVERED:
        m->renewals_ok++;
        elkfw_hist_add(&m->renew_round, round);
        elkfw_hist_add(&m->validity_left, ev->validity_ms);
        break;
    case ELK_LOCK_EV_RENEW_FAILED:
        m->renewals_failed++;
        break;
    case ELK_LOCK_EV_LOST:
        elkfw_causes_add(&m->losses, ev->err);
        elkfw_hist_add(&m->hold, ev->now - r->granted_at);
        break;
    default:
        break;
    }
}

static void hygiene_step(agent_t *a, uint64_t now, uint64_t *next);

/* "n1,n3": the nodes whose positive reply counted for a grant (the log's record of who
 * voted, so a test can check no quarantined node did). */
static void grant_voters(const agent_t *a, const elk_lock_event_t *ev, char *out, size_t cap)
{
    size_t i, len = 0;
    out[0] = '\0';
    for (i = 0; i < ev->node_count && i < a->conf.n_nodes && ev->nodes != NULL; i++) {
        int n;
        if (ev->nodes[i].status != ELK_LOCK_NODE_OK) {
            continue;
        }
        n = snprintf(out + len, cap - len, "%s%s", len != 0 ? "," : "", a->conf.nodes[i].name);
        if (n < 0 || (size_t)n >= cap - len) {
            break;
        }
        len += (size_t)n;
    }
}

/* A grant: the client gets the lease with its absolute deadline (or, gone meanwhile, the
 * lease is given back at once). */
static void lease_granted(agent_t *a, resource_t *r, int slot, const elk_lock_event_t *ev)
{
    char voters[160];
    uint64_t next = UINT64_MAX;
    r->acquiring = false;
    /* a quarantine that ended by now is logged as over before the grant it may have voted in */
    hygiene_step(a, ev->now, &next);
    grant_voters(a, ev, voters, sizeof voters);
    if (slot < 0 || a->shutting_down) {
        /* The client went away (or we are stopping) while the round ran. */
        release_res(a, r, ev->now,
                    slot < 0 ? "its client disconnected while acquiring" : "shutting down");
        return;
    }
    r->granted_at = ev->now;
    /* The hold starts now: its keepalive interval counts from here. */
    (void)elk_lock_set_keepalive(&r->lock, ev->now, r->keepalive_ms);
    elkd_log(a, ELK_LOG_INFO,
             "%s: granted to client %" PRIu64 " (uid %u, pid %d, %s), token %" PRIu64
             ", valid %" PRIu32 " ms, waited %" PRIu64 " ms, %u/%u nodes (votes %s)",
             r->conf->name, a->clients[slot].id, (unsigned)a->clients[slot].peer.uid,
             (int)a->clients[slot].pid, a->clients[slot].peer.exe, ev->token, ev->validity_ms,
             ev->now - r->asked_at, ev->ok, ev->node_count, voters);
    if (r->keepalive_ms != 0) {
        elkd_log(a, ELK_LOG_INFO,
                 "%s: renewal needs a KEEPALIVE from client %" PRIu64 " at least every %" PRIu32
                 " ms",
                 r->conf->name, a->clients[slot].id, r->keepalive_ms);
    }
    send_grant(a, slot, "OK ACQUIRED", r, ev->token, ev->validity_ms, ev->deadline);
}

/* snprintf at out + *len, *len advanced past what fitted. */
__attribute__((format(printf, 4, 5))) static void counts_add(char *out, size_t cap, size_t *len,
                                                             const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(out + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n > 0) {
        *len += (size_t)n < cap - *len ? (size_t)n : cap - *len - 1u;
    }
}

/* A round's counts that add up: "0 ok, 0 busy, 1 failed, 1 quarantined, 1 not answered of
 * 3; b quarantined: restarted 2 s ago". A node that may not vote (quarantined by the vote
 * hygiene, or its safety check unsafe or not done) is counted and named apart from those
 * that failed, so a refusal says when a quarantine is why. */
static void round_counts(agent_t *a, const elk_lock_event_t *ev, char *out, size_t cap)
{
    unsigned c[6] = {0}; /* ok, busy, failed, quarantined, no vote, no answer */
    static const char *const label[6] = {"ok",          "busy",           "failed",
                                         "quarantined", "without a vote", "not answered"};
    size_t i, len = 0, k;
    for (i = 0; i < ev->node_count && ev->nodes != NULL; i++) {
        int err = ev->nodes[i].err;
        uint8_t st = ev->nodes[i].status;
        k = st == ELK_LOCK_NODE_OK                                        ? 0
            : st == ELK_LOCK_NODE_BUSY                                    ? 1
            : st == ELK_LOCK_NODE_NONE                                    ? 5
            : err == ELK_E_NODE_QUARANTINED                               ? 3
            : err == ELK_E_SERVER_UNCHECKED || err == ELK_E_UNSAFE_SERVER ? 4
                                                                          : 2;
        c[k]++;
    }
    if (ev->nodes == NULL) {
        c[0] = ev->ok, c[1] = ev->busy, c[2] = ev->failed;
        c[5] = ev->node_count > c[0] + c[1] + c[2] ? ev->node_count - c[0] - c[1] - c[2] : 0u;
    }
    out[0] = '\0';
    for (k = 0; k < 6; k++) {
        if (k < 3 || c[k] != 0) {
            counts_add(out, cap, &len, "%s%u %s", k != 0 ? ", " : "", c[k], label[k]);
        }
    }
    counts_add(out, cap, &len, " of %u", ev->node_count);
    for (i = 0; ev->nodes != NULL && i < ev->node_count && i < a->conf.n_nodes; i++) {
        int err = ev->nodes[i].err;
        const char *why = elk_client_node_hygiene(&a->client, i);
        if (err == ELK_E_NODE_QUARANTINED) {
            /* "quarantined: restarted 2 s ago" reads "b quarantined: restarted 2 s ago" */
            counts_add(out, cap, &len, "; %s %s", a->conf.nodes[i].name, why);
        } else if (err == ELK_E_SERVER_UNCHECKED || err == ELK_E_UNSAFE_SERVER) {
            counts_add(out, cap, &len, "; %s: %s", a->conf.nodes[i].name, elk_err_message(err));
        }
    }
}

static void lease_not_acquired(agent_t *a, resource_t *r, int slot, const elk_lock_event_t *ev)
{
    char counts[sizeof r->last_counts];
    r->acquiring = false;
    round_counts(a, ev, counts, sizeof counts);
    elkd_log(a, ELK_LOG_INFO, "%s: not acquired: %s (%s)", r->conf->name, elk_err_message(ev->err),
             counts);
    if (slot >= 0) {
        if (ev->err == ELK_E_LOCK_TIMEOUT && r->last_round_err != ELK_OK) {
            char detail[400];
            snprintf(detail, sizeof detail, "%s; last round: %s %s (%s; %zu of %zu nodes ready)",
                     r->conf->name, elk_err_name(r->last_round_err),
                     elk_err_message(r->last_round_err), r->last_counts, r->last_ready,
                     a->fleet.count);
            client_err(a, slot, ev->err, detail);
        } else if (ev->err == ELK_E_FLEET_UNAVAILABLE || ev->err == ELK_E_VALIDITY) {
            char detail[300];
            snprintf(detail, sizeof detail, "%s (%s)", r->conf->name, counts);
            client_err(a, slot, ev->err, detail);
        } else {
            client_err(a, slot, ev->err, r->conf->name);
        }
    }
    r->owner = -1;
    hand_to_next_waiter(a, r, ev->now);
}

/* A failed round of a waiting acquire: kept, so a wait that times out can say why. */
static void lease_round_failed(agent_t *a, resource_t *r, int slot, const elk_lock_event_t *ev)
{
    (void)slot;
    r->last_round_err = ev->err;
    round_counts(a, ev, r->last_counts, sizeof r->last_counts);
    r->last_ready = elk_fleet_ready_count(&a->fleet);
    elkd_log(a, ELK_LOG_DEBUG, "%s: round failed (%s), retrying", r->conf->name,
             elk_err_name(ev->err));
}

static void lease_renew_event(agent_t *a, resource_t *r, int slot, const elk_lock_event_t *ev)
{
    if (ev->type == ELK_LOCK_EV_RENEWED) {
        elkd_log(a, ELK_LOG_DEBUG, "%s: renewed (%" PRIu32 " renewal%s), valid %" PRIu32 " ms",
                 r->conf->name, ev->renewals, ev->renewals == 1 ? "" : "s", ev->validity_ms);
        if (slot >= 0) {
            send_grant(a, slot, "EVENT RENEWED", r, ev->token, ev->validity_ms, ev->deadline);
        }
    } else if (ev->type == ELK_LOCK_EV_RENEW_FAILED) {
        /* the library already logs this at warn */
        elkd_log(
            a, ELK_LOG_DEBUG,
            "%s: renewal round failed (%s: %u ok of %u, quorum %u); retrying until the deadline",
            r->conf->name, elk_err_name(ev->err), ev->ok, ev->node_count, ev->quorum);
    } else {
        r->keepalive_missed = ev->err == ELK_E_KEEPALIVE_MISSED;
        if (r->keepalive_missed) {
            elkd_log(a, ELK_LOG_WARN,
                     "%s: no KEEPALIVE from client %" PRIu64 " within %" PRIu32
                     " ms: renewal stopped, the lease runs out in %" PRIu32 " ms (%s)",
                     r->conf->name, slot >= 0 ? a->clients[slot].id : 0, r->keepalive_ms,
                     ev->validity_ms, elk_err_message(ev->err));
        } else {
            elkd_log(a, ELK_LOG_WARN, "%s: %s", r->conf->name, elk_err_message(ev->err));
        }
        if (slot >= 0) {
            client_send(a, slot, "EVENT RENEW_STOPPED %s %s\n", r->conf->name,
                        elk_err_name(ev->err));
        }
    }
}

/* SUSPECT: a renewal round missed its quorum before the deadline. Still held (and still
 * retried), but the holder may want its actuator in a safe position already. */
static void lease_suspect(agent_t *a, resource_t *r, int slot, const elk_lock_event_t *ev)
{
    r->suspect_since = ev->now;
    elkd_log(a, ELK_LOG_WARN,
             "%s: SUSPECT: a renewal round missed its quorum (%s: %u ok of %u, quorum %u); "
             "still valid %" PRIu32 " ms, retrying until the deadline; telling client %" PRIu64,
             r->conf->name, elk_err_name(ev->err), ev->ok, ev->node_count, ev->quorum,
             ev->validity_ms, slot >= 0 ? a->clients[slot].id : 0);
    if (slot >= 0) {
        client_send(a, slot, "EVENT SUSPECT %s %" PRIu32 " %s\n", r->conf->name, ev->validity_ms,
                    elk_err_name(ev->err));
    }
}

/* RECOVERED: a renewal confirmed the lease after SUSPECT; told like RENEWED. */
static void lease_recovered(agent_t *a, resource_t *r, int slot, const elk_lock_event_t *ev)
{
    elkd_log(a, ELK_LOG_INFO,
             "%s: recovered after %" PRIu64 " ms suspect: renewed (%" PRIu32
             " renewal%s), valid %" PRIu32 " ms",
             r->conf->name, r->suspect_since != 0 ? ev->now - r->suspect_since : 0, ev->renewals,
             ev->renewals == 1 ? "" : "s", ev->validity_ms);
    r->suspect_since = 0;
    if (slot >= 0) {
        send_grant(a, slot, "EVENT RECOVERED", r, ev->token, ev->validity_ms, ev->deadline);
    }
}

static void lease_lost(agent_t *a, resource_t *r, int slot, const elk_lock_event_t *ev)
{
    elkd_log(a, ELK_LOG_WARN,
             "%s: LOST (%s), token %" PRIu64 ", held %" PRIu64 " ms; telling client %" PRIu64
             " to stop",
             r->conf->name, elk_err_message(ev->err), ev->token, ev->now - r->granted_at,
             slot >= 0 ? a->clients[slot].id : 0);
    if (slot >= 0) {
        client_send(a, slot, "EVENT LOST %s %s %" PRIu32 "\n", r->conf->name, elk_err_name(ev->err),
                    r->conf->stop_margin_ms);
    }
    /* The client stops its command on LOST; elkd does too, in case the client itself
     * is stopped or slow (the command must be gone within the stop margin). */
    (void)stop_command(a, r, ev->now, "lease lost", slot >= 0);
    if (r->sup.stage == ELKFW_SUP_GAVE_UP) {
        elkfw_sup_clear(&r->sup);
    }
    /* Clear the LOST state so the resource can be taken again. */
    (void)elk_lock_release(&r->lock, ev->now);
    r->owner = -1;
    r->acquiring = false;
    hand_to_next_waiter(a, r, ev->now);
}

static void on_lock_event(void *user, elk_lock_t *lock, const elk_lock_event_t *ev)
{
    resource_t *r = user;
    agent_t *a = r->agent;
    int slot = owned_by(a, r, r->owner) ? r->owner : -1;
    (void)lock;
    lease_metrics(a, r, ev);
    record_lock_event(a, r, slot, ev);
    switch (ev->type) {
    case ELK_LOCK_EV_ACQUIRED:
        lease_granted(a, r, slot, ev);
        break;
    case ELK_LOCK_EV_ACQUIRE_FAILED:
        lease_not_acquired(a, r, slot, ev);
        break;
    case ELK_LOCK_EV_RETRY:
        lease_round_failed(a, r, slot, ev);
        break;
    case ELK_LOCK_EV_RENEWED:
    case ELK_LOCK_EV_RENEW_FAILED:
    case ELK_LOCK_EV_RENEW_STOPPED:
        lease_renew_event(a, r, slot, ev);
        break;
    case ELK_LOCK_EV_SUSPECT:
        lease_suspect(a, r, slot, ev);
        break;
    case ELK_LOCK_EV_RECOVERED:
        lease_recovered(a, r, slot, ev);
        break;
    case ELK_LOCK_EV_LOST:
        lease_lost(a, r, slot, ev);
        break;
    case ELK_LOCK_EV_RELEASED:
        elkd_log(a, ELK_LOG_DEBUG, "%s: release round finished (%u of %u nodes confirmed)",
                 r->conf->name, ev->ok, ev->node_count);
        break;
    }
}

/* ------------------------------------------------------------------ node state log */

static void span_text(uint64_t ms, char *buf, size_t cap)
{
    if (ms < 120000u) {
        snprintf(buf, cap, "%" PRIu64 ".%01" PRIu64 " s", ms / 1000u, ms % 1000u / 100u);
    } else if (ms < 7200000u) {
        snprintf(buf, cap, "%" PRIu64 " min", ms / 60000u);
    } else {
        snprintf(buf, cap, "%" PRIu64 " h", ms / 3600000u);
    }
}

/* The lock client forwards every node state change: a failure is counted (the library
 * said the first one), a node ready again after being down gets one line. */
static void on_node_state(void *user, elk_node_t *node, elk_node_state_t state, int err)
{
    agent_t *a = user;
    size_t i = (size_t)(node - a->nodes);
    uint64_t now = a->clock.now_ms(a->clock.ctx);
    elkfw_nodelog_t *nl;
    char span[32];
    if (i >= a->fleet.count) {
        return;
    }
    nl = &a->nodelog[i];
    if (state == ELK_NODE_BACKOFF) {
        elkfw_causes_add(&a->node_metrics[i].failures, err);
        elkfw_nodelog_failed(nl, err, now, a->conf.agent.log_summary_ms);
    } else if (state == ELK_NODE_READY) {
        uint32_t attempts = nl->attempts;
        int last = nl->last_err;
        if (elkfw_nodelog_ready(nl)) {
            span_text(now - nl->down_since, span, sizeof span);
            elkd_log(a, ELK_LOG_INFO,
                     "node %s (%s:%u) is back after %s down (%" PRIu32 " failed attempt%s, last "
                     "error %s)",
                     a->conf.nodes[i].name, a->conf.nodes[i].host, (unsigned)a->conf.nodes[i].port,
                     span, attempts, attempts == 1 ? "" : "s", elk_err_name(last));
        }
    }
}

/* At most one "still down" line per node and log_summary interval. */
static void node_summaries(agent_t *a, uint64_t now, uint64_t *next)
{
    size_t i;
    char span[32];
    for (i = 0; i < a->fleet.count && !a->shutting_down; i++) {
        elkfw_nodelog_t *nl = &a->nodelog[i];
        if (elkfw_nodelog_summary_due(nl, now, a->conf.agent.log_summary_ms, next)) {
            span_text(now - nl->down_since, span, sizeof span);
            elkd_log(a, ELK_LOG_WARN,
                     "node %s (%s:%u) still down after %s: %" PRIu32 " failed attempts, last error "
                     "%s (%s)",
                     a->conf.nodes[i].name, a->conf.nodes[i].host, (unsigned)a->conf.nodes[i].port,
                     span, nl->attempts, elk_err_name(nl->last_err), elk_err_message(nl->last_err));
        }
    }
}

/* ------------------------------------------------------------------ status */

static const char *holder_text(agent_t *a, const resource_t *r, char *buf, size_t cap)
{
    if (r->owner >= 0 && owned_by(a, r, r->owner)) {
        snprintf(buf, cap, "pid:%d", (int)a->clients[r->owner].pid);
    } else if (elkfw_sup_stopping(&r->sup)) {
        snprintf(buf, cap, "stopping:pgid:%d", (int)r->sup.pgid); /* its client left */
    } else {
        snprintf(buf, cap, "-");
    }
    return buf;
}

static void node_addr(agent_t *a, size_t i, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s:%u", a->conf.nodes[i].host, (unsigned)a->conf.nodes[i].port);
}

static size_t clients_connected(agent_t *a)
{
    size_t i, n = 0;
    for (i = 0; i < ELKD_MAX_CLIENTS; i++) {
        n += a->clients[i].fd >= 0;
    }
    return n;
}

static size_t resources_in_use(const agent_t *a)
{
    size_t i, n = 0;
    for (i = 0; i < a->n_res; i++) {
        n += a->res[i].in_use;
    }
    return n;
}

/* s with quotes and backslashes replaced by ' and / (a server's error text can hold them;
 * the result goes inside a JSON string). Control bytes are already '?' (elk_fmt_bytes). */
static const char *json_text(const char *s, char *out, size_t cap)
{
    size_t i;
    for (i = 0; s[i] != '\0' && i + 1 < cap; i++) {
        out[i] = s[i] == '"' ? '\'' : s[i] == '\\' ? '/' : s[i];
    }
    out[i] = '\0';
    return out;
}

/* The keepalive interval of r: its hold's while held, else what a plain ACQUIRE gets. */
static uint32_t res_keepalive(const resource_t *r, uint64_t now)
{
    return elk_lock_is_held(&r->lock, now) ? r->keepalive_ms : r->conf->keepalive_ms;
}

/* ms until node i may vote again after a quarantine (0: not quarantined). */
static uint64_t quarantine_left(agent_t *a, size_t i, uint64_t now)
{
    uint64_t until = elk_client_node_quarantine(&a->client, i);
    return until > now ? until - now : 0;
}

/* Node i's vote hygiene for its STATUS line: " hygiene=<text>", its spaces written as '_'
 * (values hold none) and, while it is quarantined, ";_until_<local time>_(in_<N>_s)"
 * appended. One word: `elk status` tables take a fixed number of columns. */
static void node_hygiene_word(agent_t *a, size_t i, uint64_t now, char *buf, size_t cap)
{
    uint64_t left = quarantine_left(a, i, now);
    const char *text = elk_client_node_hygiene(&a->client, i);
    size_t k;
    int n;
    if (left == 0) {
        n = snprintf(buf, cap, " hygiene=%s", text[0] ? text : "-");
    } else {
        /* the lease clock is monotonic: the wall-clock moment is for people only */
        time_t t = time(NULL) + (time_t)((left + 999u) / 1000u);
        struct tm tm;
        char when[16] = "?";
        if (localtime_r(&t, &tm) != NULL) {
            strftime(when, sizeof when, "%H:%M:%S", &tm);
        }
        n = snprintf(buf, cap, " hygiene=%s; until %s (in %" PRIu64 " s)", text, when,
                     (left + 999u) / 1000u);
    }
    for (k = 1; n > 0 && k < (size_t)n && k < cap && buf[k] != '\0'; k++) {
        buf[k] = buf[k] == ' ' || buf[k] == '\t' ? '_' : buf[k];
    }
}

/* The local clock suspect for STATUS: "suspect" while every connected node's clock jumps
 * alike (this gateway's clock is the likely cause), else "ok"; *ppm the rate seen last. */
static const char *local_clock_word(agent_t *a, int32_t *ppm)
{
    return elk_client_local_clock_suspect(&a->client, ppm, NULL) == ELK_E_LOCAL_CLOCK ? "suspect"
                                                                                      : "ok";
}

/* STATUS: "OK STATUS <n>", then the agent, each resource and each node on a line. */
static void send_status_text(agent_t *a, int slot, uint64_t now)
{
    size_t i;
    int32_t ppm = 0;
    char holder[32], addr[300], hyg[256];
    uint64_t uptime_s = (now - a->started_at) / 1000u;
    const char *clock = local_clock_word(a, &ppm); /* before ppm is read */
    client_send(a, slot, "OK STATUS %zu\n", 1 + resources_in_use(a) + a->fleet.count);
    client_send(a, slot,
                "agent gateway=%s pid=%d version=%s uptime_s=%" PRIu64
                " mode=%s nodes_ready=%zu/%zu quorum=%zu "
                "shutting_down=%s clients=%zu/%d reloads=%" PRIu32 " reload_failures=%" PRIu32
                " local_clock=%s local_clock_ppm=%" PRId32 "\n",
                a->gateway_id, (int)getpid(), ELK_VERSION_STRING, uptime_s,
                elkfw_mode_name(a->conf.mode), elk_fleet_ready_count(&a->fleet), a->fleet.count,
                elk_client_quorum(&a->client), a->shutting_down ? "yes" : "no",
                clients_connected(a), ELKD_MAX_CLIENTS, a->reloads, a->reload_failures, clock, ppm);
    for (i = 0; i < a->n_res; i++) {
        const resource_t *r = &a->res[i];
        if (!r->in_use) {
            continue;
        }
        client_send(a, slot,
                    "resource name=%s state=%s holder=%s token=%" PRIu64 " validity_ms=%" PRIu32
                    " ttl_ms=%" PRIu32 " renewals=%" PRIu32 " last_error=%s keepalive_ms=%" PRIu32
                    " lock_delay_ms=%" PRIu32 "\n",
                    r->conf->name, elk_lock_state_name(elk_lock_state(&r->lock)),
                    holder_text(a, r, holder, sizeof holder), elk_lock_token(&r->lock),
                    elk_lock_validity(&r->lock, now), r->conf->ttl_ms, elk_lock_renewals(&r->lock),
                    elk_lock_last_error(&r->lock) == ELK_OK
                        ? "-"
                        : elk_err_name(elk_lock_last_error(&r->lock)),
                    res_keepalive(r, now), r->conf->lock_delay_ms);
    }
    for (i = 0; i < a->fleet.count; i++) {
        const elk_node_stats_t *st = elk_node_stats(&a->nodes[i]);
        node_addr(a, i, addr, sizeof addr);
        node_hygiene_word(a, i, now, hyg, sizeof hyg);
        client_send(a, slot,
                    "node name=%s addr=%s state=%s tls=%s rtt_ms=%" PRIu32 " connects=%" PRIu32
                    " failures=%" PRIu32 " timeouts=%" PRIu32
                    " last_error=%s votes=%s%s check=%s\n",
                    a->conf.nodes[i].name, addr, elk_node_state_name(elk_node_state(&a->nodes[i])),
                    st->tls ? "yes" : "no", st->last_rtt_ms, st->connects, st->failures,
                    st->timeouts, st->last_error == ELK_OK ? "-" : elk_err_name(st->last_error),
                    elk_client_node_votes(&a->client, i) ? "yes" : "no", hyg,
                    elk_client_node_check(&a->client, i));
    }
}

/* STATUS JSON's layout version (docs/control-protocol.md): 2 since absent values are null
 * (holder, last_error); the layout before had no "schema" and wrote "-" or "" for them. */
#define ELKD_STATUS_SCHEMA 2

/* A JSON value for text that may be absent ("-"): null, or the text quoted (it holds no
 * byte that needs escaping: names and error names). */
static const char *json_or_null(const char *text, char *buf, size_t cap)
{
    if (text == NULL || strcmp(text, "-") == 0) {
        return "null";
    }
    snprintf(buf, cap, "\"%s\"", text);
    return buf;
}

static void send_status(agent_t *a, int slot, bool json, uint64_t now)
{
    size_t i;
    bool first = true;
    char holder[32], addr[300], check[ELK_LOCK_CHECK_TEXT_MAX], hyg[256], hq[40], eq[48];
    uint64_t uptime_s = (now - a->started_at) / 1000u;
    int32_t ppm = 0;
    const char *clock = local_clock_word(a, &ppm); /* before ppm is read */
    if (!json) {
        send_status_text(a, slot, now);
        return;
    }
    client_send(
        a, slot,
        "OK JSON "
        "{\"schema\":%d,\"gateway\":\"%s\",\"pid\":%d,\"version\":\"%s\",\"uptime_s\":%" PRIu64
        ",\"mode\":\"%s\",\"quorum\":%zu,\"nodes_ready\":%zu,"
        "\"shutting_down\":%s,\"clients\":%zu,\"max_clients\":%d,\"reloads\":%" PRIu32
        ",\"reload_failures\":%" PRIu32 ",\"local_clock\":\"%s\",\"local_clock_ppm\":%" PRId32
        ",\"resources\":[",
        ELKD_STATUS_SCHEMA, a->gateway_id, (int)getpid(), ELK_VERSION_STRING, uptime_s,
        elkfw_mode_name(a->conf.mode), elk_client_quorum(&a->client),
        elk_fleet_ready_count(&a->fleet), a->shutting_down ? "true" : "false", clients_connected(a),
        ELKD_MAX_CLIENTS, a->reloads, a->reload_failures, clock, ppm);
    for (i = 0; i < a->n_res; i++) {
        const resource_t *r = &a->res[i];
        if (!r->in_use) {
            continue;
        }
        client_send(a, slot,
                    "%s{\"name\":\"%s\",\"state\":\"%s\",\"holder\":%s,\"token\":%" PRIu64
                    ",\"validity_ms\":%" PRIu32 ",\"renewals\":%" PRIu32 ",\"ttl_ms\":%" PRIu32
                    ",\"stop_margin_ms\":%" PRIu32 ",\"last_error\":%s,\"keepalive_ms\":%" PRIu32
                    ",\"lock_delay_ms\":%" PRIu32 "}",
                    first ? "" : ",", r->conf->name, elk_lock_state_name(elk_lock_state(&r->lock)),
                    json_or_null(holder_text(a, r, holder, sizeof holder), hq, sizeof hq),
                    elk_lock_token(&r->lock), elk_lock_validity(&r->lock, now),
                    elk_lock_renewals(&r->lock), r->conf->ttl_ms, r->conf->stop_margin_ms,
                    json_or_null(elk_lock_last_error(&r->lock) == ELK_OK
                                     ? "-"
                                     : elk_err_name(elk_lock_last_error(&r->lock)),
                                 eq, sizeof eq),
                    res_keepalive(r, now), r->conf->lock_delay_ms);
        first = false;
    }
    client_send(a, slot, "],\"nodes\":[");
    for (i = 0; i < a->fleet.count; i++) {
        const elk_node_stats_t *st = elk_node_stats(&a->nodes[i]);
        node_addr(a, i, addr, sizeof addr);
        client_send(
            a, slot,
            "%s{\"name\":\"%s\",\"addr\":\"%s\",\"state\":\"%s\",\"connected\":%s,\"tls\":%s,"
            "\"rtt_ms\":%" PRIu32 ",\"connects\":%" PRIu32 ",\"failures\":%" PRIu32
            ",\"timeouts\":%" PRIu32 ",\"last_error\":%s,\"votes\":%s,\"check\":\"%s\","
            "\"hygiene\":\"%s\",\"quarantined_ms\":%" PRIu64 "}",
            i ? "," : "", a->conf.nodes[i].name, addr,
            elk_node_state_name(elk_node_state(&a->nodes[i])),
            elk_node_is_ready(&a->nodes[i]) ? "true" : "false", st->tls ? "true" : "false",
            st->last_rtt_ms, st->connects, st->failures, st->timeouts,
            json_or_null(st->last_error == ELK_OK ? "-" : elk_err_name(st->last_error), eq,
                         sizeof eq),
            elk_client_node_votes(&a->client, i) ? "true" : "false",
            json_text(elk_client_node_check(&a->client, i), check, sizeof check),
            json_text(elk_client_node_hygiene(&a->client, i), hyg, sizeof hyg),
            quarantine_left(a, i, now));
    }
    client_send(a, slot, "]}\n");
}

/* ------------------------------------------------------------------ metrics */

/* One exposition's view of the agent: res and nodes are the caller's arrays. */
static void metrics_src(agent_t *a, uint64_t now, elkfw_metrics_src_t *src,
                        elkfw_metrics_res_t *res, elkfw_metrics_node_t *nodes)
{
    size_t i;
    memset(src, 0, sizeof *src);
    src->version = ELK_VERSION_STRING;
    src->gateway = a->gateway_id;
    src->uptime_s = (now - a->started_at) / 1000u;
    src->clients = clients_connected(a);
    src->nodes_ready = elk_fleet_ready_count(&a->fleet);
    src->quorum = elk_client_quorum(&a->client);
    src->reloads = a->reloads;
    src->reload_failures = a->reload_failures;
    src->client_slots = ELKD_MAX_CLIENTS;
    src->full_refusals = a->full_refusals;
    src->res = res;
    src->nodes = nodes;
    src->local_clock_suspect =
        elk_client_local_clock_suspect(&a->client, &src->local_clock_rate_ppm,
                                       &src->local_clock_spells) == ELK_E_LOCAL_CLOCK;
    for (i = 0; i < a->n_res; i++) {
        if (a->res[i].in_use) {
            res[src->n_res].name = a->res[i].conf->name;
            res[src->n_res].held = elk_lock_is_held(&a->res[i].lock, now);
            res[src->n_res].m = &a->res[i].metrics;
            src->n_res++;
        }
    }
    for (i = 0; i < a->fleet.count; i++) {
        const elk_node_stats_t *st = elk_node_stats(&a->nodes[i]);
        memset(&nodes[i], 0, sizeof nodes[i]);
        nodes[i].name = a->conf.nodes[i].name;
        nodes[i].ready = elk_node_is_ready(&a->nodes[i]);
        nodes[i].connects = st->connects;
        nodes[i].failures = st->failures;
        nodes[i].timeouts = st->timeouts;
        nodes[i].quarantined = quarantine_left(a, i, now) > 0;
        {
            uint32_t quarantines = 0, clock_jumps = 0;
            nodes[i].hygiene_stats =
                elk_client_node_hygiene_stats(&a->client, i, &quarantines, &clock_jumps) == ELK_OK;
            nodes[i].quarantines = quarantines;
            nodes[i].clock_jumps = clock_jumps;
        }
        nodes[i].m = &a->node_metrics[i];
    }
    src->n_nodes = a->fleet.count;
}

/* STATUS METRICS: "OK METRICS <n>" and n lines. Larger than the back-pressure limit, so
 * the client's queue grows to take it whole (the next request waits until it is sent). */
static void send_metrics(agent_t *a, int slot, uint64_t now)
{
    elkfw_metrics_res_t res[ELKFW_MAX_RESOURCES];
    elkfw_metrics_node_t nodes[CONFIG_ELK_MAX_NODES];
    elkfw_metrics_src_t src;
    char *body = NULL;
    size_t body_len = 0, lines = 0, k;
    FILE *f;
    bool ok;
    metrics_src(a, now, &src, res, nodes);
    f = open_memstream(&body, &body_len);
    ok = f != NULL && elkfw_metrics_write(f, &src);
    ok = (f == NULL || fclose(f) == 0) && ok;
    if (!ok) {
        free(body);
        client_err(a, slot, ELK_E_NO_RESOURCES, "metrics");
        return;
    }
    for (k = 0; k < body_len; k++) {
        lines += body[k] == '\n';
    }
    client_send(a, slot, "OK METRICS %zu\n", lines);
    client_write(a, slot, body, body_len);
    free(body);
}

/* [agent] metrics_file: rewritten every metrics_interval. */
static void metrics_step(agent_t *a, uint64_t now, uint64_t *next)
{
    elkfw_metrics_res_t res[ELKFW_MAX_RESOURCES];
    elkfw_metrics_node_t nodes[CONFIG_ELK_MAX_NODES];
    elkfw_metrics_src_t src;
    if (a->conf.agent.metrics_file[0] == '\0') {
        return;
    }
    if (now >= a->metrics_next) {
        metrics_src(a, now, &src, res, nodes);
        if (!elkfw_metrics_write_file(a->conf.agent.metrics_file, &src)) {
            if (!a->metrics_failed) {
                elkd_log(a, ELK_LOG_WARN,
                         "cannot write metrics_file %s: %s (retrying every %" PRIu32 " ms)",
                         a->conf.agent.metrics_file, strerror(errno),
                         a->conf.agent.metrics_interval_ms);
            }
            a->metrics_failed = true;
        } else {
            a->metrics_failed = false;
        }
        a->metrics_next = now + a->conf.agent.metrics_interval_ms;
    }
    if (a->metrics_next < *next) {
        *next = a->metrics_next;
    }
}

/* ------------------------------------------------------------------ requests */

static void drop_waiters_of(agent_t *a, int slot)
{
    size_t i;
    for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
        if (a->waiters[i].client == slot) {
            a->waiters[i].client = -1;
        }
    }
}

static bool client_waits_for(agent_t *a, int slot, size_t ri)
{
    size_t i;
    for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
        if (a->waiters[i].client == slot && a->waiters[i].client_id == a->clients[slot].id &&
            a->waiters[i].res == ri) {
            return true;
        }
    }
    return false;
}

/* SUPERVISE: the held lease drives through process group req->pgid (elkfw/supervise.h). */
static void request_supervise(agent_t *a, int slot, resource_t *r, const elkfw_ctl_req_t *req,
                              uint64_t now)
{
    char why_not[200];
    if (!owned_by(a, r, slot) || r->acquiring || !elk_lock_is_held(&r->lock, now)) {
        client_err(a, slot, ELK_E_NOT_HELD, r->conf->name);
    } else if (!elkfw_sup_group_allowed((pid_t)req->pgid, a->clients[slot].pid,
                                        a->clients[slot].peer.uid, why_not, sizeof why_not)) {
        elkd_log(a, ELK_LOG_WARN,
                 "%s: client %" PRIu64 " (uid %u, pid %d) asked to supervise process group %" PRIu32
                 ": refused: %s",
                 r->conf->name, a->clients[slot].id, (unsigned)a->clients[slot].peer.uid,
                 (int)a->clients[slot].pid, req->pgid, why_not);
        client_err(a, slot, ELK_E_SUPERVISE_DENIED, why_not);
    } else {
        elkfw_sup_watch(&r->sup, (pid_t)req->pgid, a->clients[slot].peer.uid);
        elkd_log(a, ELK_LOG_DEBUG, "%s: supervising process group %" PRIu32 " of client %" PRIu64,
                 r->conf->name, req->pgid, a->clients[slot].id);
        client_send(a, slot, "OK SUPERVISED %s\n", r->conf->name);
    }
}

/* KEEPALIVE: the work behind this connection's lease is alive (elk_lock_keepalive). One
 * that comes after renewal stopped for a missed keepalive is refused: it is too late. */
static void request_keepalive(agent_t *a, int slot, resource_t *r, uint64_t now)
{
    int rc = ELK_E_NOT_HELD;
    if (owned_by(a, r, slot) && !r->acquiring && elk_lock_is_held(&r->lock, now)) {
        rc = elk_lock_keepalive(&r->lock, now);
    }
    if (rc == ELK_OK && r->keepalive_missed) {
        rc = ELK_E_KEEPALIVE_MISSED;
    }
    if (rc != ELK_OK) {
        client_err(a, slot, rc, r->conf->name);
    } else {
        client_send(a, slot, "OK KEEPALIVE %s\n", r->conf->name);
    }
}

/* RELEASE: a lease, or a wait for one, of this connection. */
static void request_release(agent_t *a, int slot, resource_t *r, uint64_t now)
{
    if (owned_by(a, r, slot)) {
        /* Never let the lease go while the command may still drive. */
        if (r->sup.stage == ELKFW_SUP_WATCHING && elkfw_sup_group_alive(r->sup.pgid) &&
            stop_command(a, r, now, "its client released it while its command still runs", false)) {
            r->owner = -1;
        } else {
            release_res(a, r, now, "its client asked");
        }
        client_send(a, slot, "OK RELEASED %s\n", r->conf->name);
    } else if (client_waits_for(a, slot, (size_t)(r - a->res)) ||
               a->clients[slot].cancelled_res == (size_t)(r - a->res) + 1u) {
        drop_waiters_of(a, slot);
        a->clients[slot].cancelled_res = 0;
        client_send(a, slot, "OK RELEASED %s\n", r->conf->name);
    } else if (r->owner >= 0 && owned_by(a, r, r->owner)) {
        char detail[256];
        snprintf(detail, sizeof detail,
                 "%s is held by pid %d on this agent; a lease is released by the connection that "
                 "took it "
                 "(stop that process)",
                 r->conf->name, (int)a->clients[r->owner].pid);
        client_err(a, slot, ELK_E_NOT_HELD, detail);
    } else {
        client_err(a, slot, ELK_E_NOT_HELD, r->conf->name);
    }
}

/* ACQUIRE: start a round, or queue behind a local holder, or refuse. */
static void request_acquire(agent_t *a, int slot, resource_t *r, const elkfw_ctl_req_t *req,
                            uint64_t now)
{
    const elkfw_peer_t *peer = &a->clients[slot].peer;
    if (!elkfw_access_allowed(&a->allow[r - a->res], peer)) {
        char detail[200];
        elkd_log(a, ELK_LOG_WARN,
                 "%s: refused to client %" PRIu64 " (uid %u, pid %d, %s): not in allow_users or "
                 "allow_groups",
                 r->conf->name, a->clients[slot].id, (unsigned)peer->uid, (int)peer->pid,
                 peer->exe);
        snprintf(detail, sizeof detail, "resource %s, uid %u", r->conf->name, (unsigned)peer->uid);
        record_event(a, ELKFW_EV_REFUSED, r, slot, 0, now, 0, ELK_E_FORBIDDEN);
        client_err(a, slot, ELK_E_FORBIDDEN, detail);
        return;
    }
    if (a->shutting_down) {
        client_err(a, slot, ELK_E_SHUTTING_DOWN, r->conf->name);
        return;
    }
    if (owned_by(a, r, slot) || client_waits_for(a, slot, (size_t)(r - a->res))) {
        client_err(a, slot, ELK_E_ALREADY_HELD, r->conf->name);
        return;
    }
    if ((r->owner >= 0 && owned_by(a, r, r->owner)) || res_orphaned(a, r, now) ||
        !res_settle(a, r)) {
        /* Another client of this agent has it, or its last holder's command is still being
         * stopped: queue locally, never two rounds from one gateway. */
        size_t i;
        if (req->wait_ms == 0) {
            char detail[256];
            if (owned_by(a, r, r->owner)) {
                snprintf(detail, sizeof detail, "%s is held by pid %d on this agent", r->conf->name,
                         (int)a->clients[r->owner].pid);
            } else if (r->has_pending) {
                snprintf(detail, sizeof detail,
                         "%s: its new settings from a reload apply once the last release "
                         "round ends; retry or wait",
                         r->conf->name);
            } else {
                snprintf(detail, sizeof detail,
                         "%s: its last holder on this agent left; its command is being "
                         "stopped or its lease is running out",
                         r->conf->name);
            }
            record_event(a, ELKFW_EV_REFUSED, r, slot, 0, now, 0, ELK_E_LOCK_BUSY);
            client_err(a, slot, ELK_E_LOCK_BUSY, detail);
            r->metrics.refusals++;
            return;
        }
        for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
            if (a->waiters[i].client < 0) {
                a->waiters[i].client = slot;
                a->waiters[i].client_id = a->clients[slot].id;
                a->waiters[i].res = (size_t)(r - a->res);
                a->waiters[i].deadline = now + req->wait_ms;
                a->waiters[i].wait_ms = req->wait_ms;
                a->waiters[i].keepalive_ms = req->keepalive_ms;
                a->waiters[i].seq = ++a->next_waiter_seq;
                record_event(a, ELKFW_EV_WAIT, r, slot, 0, now, 0, ELK_OK);
                return;
            }
        }
        client_err(a, slot, ELK_E_AGENT_FULL, "too many local waiters");
        return;
    }
    r->owner = -1;
    if (req->wait_ms > 0) {
        record_event(a, ELKFW_EV_WAIT, r, slot, 0, now, 0, ELK_OK);
    }
    start_acquire(a, r, slot, req->wait_ms, req->keepalive_ms, now);
}

static void handle_request(agent_t *a, int slot, const char *line, size_t len, uint64_t now)
{
    elkfw_ctl_req_t req;
    const char *why = "";
    resource_t *r;
    int rc = elkfw_ctl_parse_request(line, len, elkfw_resource_name_max(&a->conf), &req, &why);
    if (rc != ELK_OK) {
        client_err(a, slot, rc, why);
        return;
    }
    switch (req.cmd) {
    case ELKFW_CTL_PING:
        client_send(a, slot, "OK PONG\n");
        return;
    case ELKFW_CTL_HELP:
        client_send(a, slot,
                    "OK HELP ACQUIRE <resource> [<wait>] [keepalive=<interval>] | RELEASE "
                    "<resource> | KEEPALIVE <resource> | SUPERVISE <resource> <pgid> | "
                    "STATUS [JSON|METRICS] | PING | QUIT\n");
        return;
    case ELKFW_CTL_QUIT:
        client_send(a, slot, "OK BYE\n");
        a->clients[slot].close_after_flush = true;
        return;
    case ELKFW_CTL_STATUS:
    case ELKFW_CTL_STATUS_JSON:
        send_status(a, slot, req.cmd == ELKFW_CTL_STATUS_JSON, now);
        return;
    case ELKFW_CTL_STATUS_METRICS:
        send_metrics(a, slot, now);
        return;
    case ELKFW_CTL_ACQUIRE:
    case ELKFW_CTL_RELEASE:
    case ELKFW_CTL_SUPERVISE:
    case ELKFW_CTL_KEEPALIVE:
        break;
    }
    r = find_res(a, req.resource);
    if (r == NULL) {
        client_err(a, slot, ELK_E_RESOURCE_UNKNOWN, req.resource);
        return;
    }
    if (req.cmd == ELKFW_CTL_SUPERVISE) {
        request_supervise(a, slot, r, &req, now);
    } else if (req.cmd == ELKFW_CTL_KEEPALIVE) {
        request_keepalive(a, slot, r, now);
    } else if (req.cmd == ELKFW_CTL_RELEASE) {
        request_release(a, slot, r, now);
    } else {
        request_acquire(a, slot, r, &req, now);
    }
}

/* ------------------------------------------------------------------ connections */

/* The connection holding r ends. A plain client that exited took its actuator work
 * with it: release. But the command elk run supervises may still drive (elk run was
 * killed, or dropped for not reading): stop it first. And a client dropped for not
 * reading, with no command known, may still be driving: never release under it; let
 * the lease run out at the deadline it was given. */
static void lease_after_client(agent_t *a, resource_t *r, const client_t *c, uint64_t now,
                               const char *why)
{
    char what[160];
    if (r->acquiring) {
        /* Cancel the round; its partial locks are released by the library. */
        release_res(a, r, now, "its client disconnected while acquiring");
        return;
    }
    snprintf(what, sizeof what, "client %" PRIu64 " (pid %d) %s while holding it", c->id,
             (int)c->pid, c->unresponsive ? "stopped reading its replies" : why);
    if (stop_command(a, r, now, what, false)) {
        r->owner = -1;
        return;
    }
    if (c->unresponsive && elk_lock_is_held(&r->lock, now)) {
        elkd_log(a, ELK_LOG_WARN,
                 "%s: %s; it may still be driving: the lease is no longer renewed and runs out in "
                 "%" PRIu32 " ms instead of being released",
                 r->conf->name, what, elk_lock_validity(&r->lock, now));
        (void)elk_lock_abandon(&r->lock, now);
        r->owner = -1;
        r->shutdown_release_at = 0;
        return;
    }
    elkd_log(a, ELK_LOG_INFO, "%s: %s", r->conf->name, what);
    release_res(a, r, now, "its client disconnected");
}

static void client_close(agent_t *a, int slot, uint64_t now, const char *why)
{
    client_t *c = &a->clients[slot];
    size_t i;
    if (c->fd < 0) {
        return;
    }
    for (i = 0; i < a->n_res; i++) {
        resource_t *r = &a->res[i];
        if (owned_by(a, r, slot)) {
            lease_after_client(a, r, c, now, why);
        }
    }
    drop_waiters_of(a, slot);
    elkd_log(a, ELK_LOG_DEBUG, "client %" PRIu64 " (pid %d) closed: %s", c->id, (int)c->pid, why);
    close(c->fd);
    c->fd = -1;
    free(c->out);
    c->out = NULL;
    c->out_len = c->out_cap = 0;
    c->out_stuck_since = 0;
    c->drop = false;
    c->unresponsive = false;
    c->close_after_flush = false;
}

/* One account must not be able to lock every other out: by default half the slots. */
static size_t max_clients_per_uid(const agent_t *a)
{
    uint32_t m = a->conf.agent.max_clients_per_uid;
    return m != 0 ? m : ELKD_MAX_CLIENTS / 2;
}

static void accept_clients(agent_t *a, uint64_t now)
{
    for (;;) {
        int fd = accept4(a->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        int slot;
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                elkd_log(a, ELK_LOG_WARN, "accept on the control socket failed: %s",
                         strerror(errno));
            }
            return;
        }
        elkfw_peer_t peer;
        size_t same_uid = 0;
        const char *why = NULL;
        int free_slot = -1;
        if (elkfw_access_peer(fd, &peer) != ELK_OK) {
            elkd_log(a, ELK_LOG_WARN, "control socket: no peer credentials: %s; connection refused",
                     strerror(errno));
            close(fd);
            continue;
        }
        for (slot = 0; slot < ELKD_MAX_CLIENTS; slot++) {
            if (a->clients[slot].fd < 0) {
                free_slot = free_slot < 0 ? slot : free_slot;
            } else if (a->clients[slot].peer.uid == peer.uid) {
                same_uid++;
            }
        }
        slot = free_slot;
        if (a->shutting_down) {
            why = "";
        } else if (slot < 0) {
            why = "all client slots are taken";
        } else if (same_uid >= max_clients_per_uid(a)) {
            why = "this user has its share of the client slots (max_clients_per_uid in [agent])";
        }
        if (why != NULL) {
            int code = a->shutting_down ? ELK_E_SHUTTING_DOWN : ELK_E_AGENT_FULL;
            char msg[300];
            int n = snprintf(msg, sizeof msg, "ERR %s %s%s%s\n", elk_err_name(code),
                             elk_err_message(code), why[0] ? ": " : "", why);
            /* Answered before closing: the client reads why instead of a broken pipe. */
            (void)!send(fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (!a->shutting_down) {
                a->full_refusals++;
                elkd_log(a, ELK_LOG_WARN, "connection of uid %u (pid %d, %s) refused: %s",
                         (unsigned)peer.uid, (int)peer.pid, peer.exe, why);
            }
            close(fd);
            continue;
        }
        client_t *c = &a->clients[slot];
        c->fd = fd;
        c->peer = peer;
        c->pid = peer.pid;
        c->id = ++a->next_client_id;
        c->out_len = 0;
        c->out_stuck_since = 0;
        c->active_at = now;
        c->drop = false;
        c->unresponsive = false;
        c->close_after_flush = false;
        c->cancelled_res = 0;
        elkfw_linebuf_init(&c->in, c->in_store, sizeof c->in_store);
        elkd_log(a, ELK_LOG_DEBUG, "client %" PRIu64 " (uid %u, pid %d, %s) connected", c->id,
                 (unsigned)peer.uid, (int)c->pid, peer.exe);
    }
}

/* The ACQUIRE of this connection that has no answer yet (a round running, or queued
 * behind a local holder); its resource index in *ri (may be NULL). */
static bool client_pending(agent_t *a, int slot, size_t *ri)
{
    size_t i, dummy;
    ri = ri != NULL ? ri : &dummy;
    for (i = 0; i < a->n_res; i++) {
        if (a->res[i].acquiring && owned_by(a, &a->res[i], slot)) {
            *ri = i;
            return true;
        }
    }
    for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
        if (a->waiters[i].client == slot && a->waiters[i].client_id == a->clients[slot].id) {
            *ri = a->waiters[i].res;
            return true;
        }
    }
    return false;
}

/* A complete "RELEASE <resource ri>" among the requests not yet served? */
static bool release_queued(agent_t *a, int slot, size_t ri)
{
    return elkfw_linebuf_has_request(&a->clients[slot].in, ELKFW_CTL_RELEASE, a->res[ri].conf->name,
                                     elkfw_resource_name_max(&a->conf));
}

/* A RELEASE overtook its ACQUIRE: the ACQUIRE's answer is ELK_E_CANCELLED, the round (or
 * the local wait) is given up, and that RELEASE, in its turn, answers OK RELEASED. */
static void cancel_acquire(agent_t *a, int slot, size_t ri, uint64_t now)
{
    resource_t *r = &a->res[ri];
    if (owned_by(a, r, slot) && r->acquiring) {
        release_res(a, r, now, "its client cancelled the acquire");
    } else {
        size_t i;
        for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
            if (a->waiters[i].client == slot && a->waiters[i].res == ri) {
                a->waiters[i].client = -1;
            }
        }
    }
    client_err(a, slot, ELK_E_CANCELLED, r->conf->name);
    a->clients[slot].cancelled_res = ri + 1u;
}

/* Answer the requests received, in order, one answer each: behind an ACQUIRE that has no
 * answer yet they wait (docs/control-protocol.md), but a RELEASE of its resource cancels
 * it at once. Returns true if a request was served. */
static bool serve_lines(agent_t *a, int slot, uint64_t now)
{
    client_t *c = &a->clients[slot];
    bool served = false;
    for (;;) {
        const char *line;
        size_t len, ri;
        int rc;
        if (c->fd < 0 || c->drop || c->out_len >= ELKD_OUT_SOFT) {
            return served; /* back-pressure: the rest waits until the client has read */
        }
        /* each request at its own time: a long run of them must not judge a lease (held?
         * keepalive in time?) by the time the first one was read */
        now = a->clock.now_ms(a->clock.ctx);
        if (client_pending(a, slot, &ri)) {
            if (!release_queued(a, slot, ri)) {
                return served;
            }
            cancel_acquire(a, slot, ri, now);
        }
        rc = elkfw_linebuf_next(&c->in, &line, &len);
        if (rc == 0) {
            return served;
        }
        served = true;
        if (rc == ELK_E_CTL_TOO_LONG) {
            client_err(a, slot, ELK_E_CTL_TOO_LONG, "");
        } else if (!c->close_after_flush) {
            handle_request(a, slot, line, len, now);
        }
    }
}

/* Requests that waited behind an ACQUIRE answered since: serve them now. */
static bool serve_waiting_requests(agent_t *a, uint64_t now)
{
    size_t i;
    bool served = false;
    for (i = 0; i < ELKD_MAX_CLIENTS; i++) {
        if (a->clients[i].fd >= 0 && a->clients[i].in.len > a->clients[i].in.consumed) {
            served |= serve_lines(a, (int)i, now);
        }
    }
    return served;
}

static void client_readable(agent_t *a, int slot, uint64_t now)
{
    client_t *c = &a->clients[slot];
    for (;;) {
        size_t avail;
        char *sp = elkfw_linebuf_space(&c->in, &avail);
        ssize_t n;
        const char *line;
        size_t len;
        int rc;
        if (c->out_len >= ELKD_OUT_SOFT || c->drop) {
            return; /* back-pressure: read on once the client has read its answers */
        }
        if (avail == 0 && client_pending(a, slot, NULL)) {
            return; /* full of requests waiting behind an ACQUIRE */
        }
        if (avail == 0) {
            /* linebuf_next below reports the overlong line and makes room */
            rc = elkfw_linebuf_next(&c->in, &line, &len);
            if (rc == ELK_E_CTL_TOO_LONG) {
                client_err(a, slot, ELK_E_CTL_TOO_LONG, "");
            }
            continue;
        }
        n = recv(c->fd, sp, avail, MSG_DONTWAIT);
        if (n == 0) {
            client_close(a, slot, now, "disconnected");
            return;
        }
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                client_close(a, slot, now, strerror(errno));
            }
            return;
        }
        elkfw_linebuf_commit(&c->in, (size_t)n);
        c->active_at = now;
        serve_lines(a, slot, now);
        if (c->fd < 0 || client_pending(a, slot, NULL)) {
            return; /* requests wait in c->in behind the ACQUIRE; read more when it is answered */
        }
    }
}

/* ------------------------------------------------------------------ setup */

#ifdef ELKD_TLS
/* The TLS files of nc could not be set up (rc): a file that cannot be opened is named with
 * the system's reason (errno), which the TLS library's "unreadable or not PEM" loses. */
static void tls_files_err(const agent_t *a, const elkfw_node_conf_t *nc, int rc, char *err,
                          size_t errlen)
{
    const char *role[3] = {"CA file", "certificate", "key"};
    const char *path[3] = {nc->tls.ca, nc->tls.cert, nc->tls.key};
    size_t k;
    for (k = 0; k < 3; k++) {
        FILE *f = path[k][0] != '\0' ? fopen(path[k], "rb") : NULL;
        if (path[k][0] != '\0' && f == NULL) {
            snprintf(err, errlen, "%s:%d: [node %s]: cannot read the %s '%s': %s", a->conf.path,
                     nc->line, nc->name, role[k], path[k], strerror(errno));
            return;
        }
        if (f != NULL) {
            fclose(f);
        }
    }
    snprintf(err, errlen, "%s:%d: [node %s]: %s (ca '%s'%s%s)", a->conf.path, nc->line, nc->name,
             elk_err_message(rc), nc->tls.ca, nc->tls.cert[0] ? ", cert " : "", nc->tls.cert);
}
#endif

/* Node i's TLS layer over its TCP transport *tcp (tls = on): *tr becomes the TLS one. */
static int setup_node_tls(agent_t *a, size_t i, elk_transport_t *tcp, elk_transport_t *tr,
                          char *err, size_t errlen)
{
    const elkfw_node_conf_t *nc = &a->conf.nodes[i];
#ifdef ELKD_TLS
    int rc;
    elk_tls_config_t tc;
    memset(&tc, 0, sizeof tc);
    tc.ca_file = nc->tls.ca;
    tc.cert_file = nc->tls.cert[0] ? nc->tls.cert : NULL;
    tc.key_file = nc->tls.key[0] ? nc->tls.key : NULL;
    rc = elk_tls_shared_init(&a->tls_shared[i], &tc, &a->entropy);
    if (rc != ELK_OK) {
        tls_files_err(a, nc, rc, err, errlen);
        return rc;
    }
    rc = elk_tls_conn_init(&a->tls_conn[i], &a->tls_shared[i], tcp, tr);
    if (rc != ELK_OK) {
        snprintf(err, errlen, "[node %s]: TLS connection setup: %s", nc->name, elk_err_message(rc));
        return rc;
    }
    a->tls_used[i] = true;
    return ELK_OK;
#else
    (void)tcp;
    (void)tr;
    snprintf(err, errlen, "%s:%d: [node %s]: tls = on but this elkd was built without TLS",
             a->conf.path, nc->line, nc->name);
    return ELK_E_NOT_SUPPORTED;
#endif
}

static int setup_node(agent_t *a, size_t i, char *err, size_t errlen)
{
    const elkfw_node_conf_t *nc = &a->conf.nodes[i];
    elk_node_config_t cfg;
    elk_transport_t tcp, tr;
    int rc;
    elk_posix_tcp_init(&a->tcp[i], NULL, &tcp);
    tr = tcp;
    if (nc->tls.on == 1 && (rc = setup_node_tls(a, i, &tcp, &tr, err, errlen)) != ELK_OK) {
        return rc;
    }
    elk_node_config_defaults(&cfg);
    cfg.endpoint.host = nc->host;
    cfg.endpoint.port = nc->port;
    cfg.endpoint.server_name = nc->server_name[0] ? nc->server_name : NULL;
    cfg.username = nc->user[0] ? nc->user : NULL;
    cfg.password = nc->password[0] ? nc->password : NULL;
    cfg.db = nc->db;
    cfg.resp3 = CONFIG_ELK_RESP3 ? true : false;
    cfg.connect_timeout_ms = nc->connect_timeout_ms;
    cfg.request_timeout_ms = nc->request_timeout_ms;
    cfg.clock = &a->clock; /* a reply's receive time read after its recv, not before a preemption */
    rc = elk_node_init(&a->nodes[i], &cfg, &tr, &a->pool, &a->entropy, &a->lib_log);
    if (rc != ELK_OK) {
        snprintf(err, errlen, "[node %s]: %s", nc->name, elk_err_message(rc));
        return rc;
    }
    a->nodes[i].stats.tls = nc->tls.on == 1; /* node.h: the caller sets it, for status */
    return ELK_OK;
}

static int setup_client(agent_t *a, char *err, size_t errlen)
{
    int rc;
    elk_client_config_t cc;
    elk_client_config_defaults(&cc);
    cc.gateway_id = a->gateway_id;
    cc.key_prefix = a->conf.key_prefix;
    cc.mode = a->conf.mode == ELKFW_MODE_REDLOCK ? ELK_MODE_REDLOCK : ELK_MODE_SINGLE;
    cc.on_node_state = on_node_state;
    cc.node_state_user = a;
    cc.safety = a->conf.agent.safety_check == ELKFW_SAFETY_OFF ? ELK_SAFETY_OFF
        : a->conf.agent.safety_check == ELKFW_SAFETY_REFUSE    ? ELK_SAFETY_REFUSE
                                                               : ELK_SAFETY_WARN;
    cc.vote_hygiene = a->conf.vote_hygiene;
    cc.quarantine_ms = a->conf.quarantine_ms;
    rc = elk_client_init(&a->client, &cc, &a->fleet, &a->entropy, &a->lib_log);
    if (rc != ELK_OK) {
        snprintf(err, errlen, "lock client (gateway_id '%s', key_prefix '%s'): %s", a->gateway_id,
                 a->conf.key_prefix, elk_err_message(rc));
        return rc;
    }
    return ELK_OK;
}

static int setup_resources(agent_t *a, char *err, size_t errlen)
{
    size_t i;
    int rc;
    for (i = 0; i < a->conf.n_resources; i++) {
        const elkfw_resource_conf_t *rc_ = &a->conf.resources[i];
        elk_lock_config_t lc;
        resource_t *r = &a->res[a->n_res];
        elkfw_resource_lock_config(&a->conf, rc_, &lc);
        r->agent = a;
        r->own = *rc_;
        r->conf = &r->own;
        r->owner = -1;
        r->in_use = true;
        rc = elk_lock_init(&r->lock, &a->client, rc_->name, &lc, on_lock_event, r);
        if (rc != ELK_OK) {
            snprintf(err, errlen, "%s:%d: [resource %s]: %s", a->conf.path, rc_->line, rc_->name,
                     elk_err_message(rc));
            return rc;
        }
        a->n_res++;
    }
    return ELK_OK;
}

static int setup_fleet(agent_t *a, char *err, size_t errlen)
{
    size_t i;
    int rc;
    rc = elk_pool_init(&a->pool, a->pool_mem, sizeof a->pool_mem, CONFIG_ELK_POOL_BLOCK_SIZE,
                       2u * a->conf.n_nodes + 2u);
    if (rc != ELK_OK) {
        snprintf(err, errlen, "buffer pool: %s", elk_err_message(rc));
        return rc;
    }
    for (i = 0; i < a->conf.n_nodes; i++) {
        if ((rc = setup_node(a, i, err, errlen)) != ELK_OK) {
            return rc;
        }
    }
    rc = elk_fleet_init(&a->fleet, a->nodes, a->conf.n_nodes);
    if (rc != ELK_OK) {
        snprintf(err, errlen, "fleet: %s", elk_err_message(rc));
        return rc;
    }
    rc = setup_client(a, err, errlen);
    return rc != ELK_OK ? rc : setup_resources(a, err, errlen);
}

static void teardown_fleet(agent_t *a)
{
    size_t i;
    uint64_t now = a->clock.now_ms(a->clock.ctx);
    for (i = 0; i < a->fleet.count; i++) {
        elk_node_close(&a->nodes[i], now);
    }
#ifdef ELKD_TLS
    for (i = 0; i < a->conf.n_nodes; i++) {
        if (a->tls_used[i]) {
            elk_tls_conn_free(&a->tls_conn[i]);
            elk_tls_shared_free(&a->tls_shared[i]);
            a->tls_used[i] = false; /* a reload may set the fleet up again */
        }
    }
#endif
}

/* ------------------------------------------------------------------ main loop */

static void begin_shutdown(agent_t *a, uint64_t now, const char *why)
{
    size_t i;
    if (a->shutting_down) {
        return;
    }
    a->shutting_down = true;
    a->shutdown_started = now;
    (void)elkfw_notify_send(&a->notify, "STOPPING=1");
    elkd_log(a, ELK_LOG_INFO, "%s: stopping: no new leases, telling holders, releasing every lease",
             why);
    if (a->listen_fd >= 0) {
        close(a->listen_fd);
        a->listen_fd = -1;
        unlink(a->conf.agent.socket_path);
    }
    for (i = 0; i < ELKD_MAX_CLIENTS; i++) {
        if (a->clients[i].fd >= 0) {
            client_send(a, (int)i, "EVENT SHUTDOWN\n");
        }
    }
    for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
        if (a->waiters[i].client >= 0) {
            client_err(a, a->waiters[i].client, ELK_E_SHUTTING_DOWN,
                       a->res[a->waiters[i].res].conf->name);
            a->waiters[i].client = -1;
        }
    }
    for (i = 0; i < a->n_res; i++) {
        resource_t *r = &a->res[i];
        if (r->owner >= 0 && owned_by(a, r, r->owner) && !r->acquiring) {
            /* The holder gets its stop margin to bring the actuator to its safe state
             * (the lease stays valid and renewed meanwhile); then we release. */
            r->shutdown_release_at = now + r->conf->stop_margin_ms;
            (void)stop_command(a, r, now, "shutting down", true);
            if (r->shutdown_release_at == now) {
                release_when_stopped(a, r, now, "shutting down");
            }
        } else if (r->acquiring || elk_lock_state(&r->lock) != ELK_LOCK_IDLE) {
            release_res(a, r, now, "shutting down");
        }
    }
}

/* ------------------------------------------------------------------ reload */

static int read_conf(const agent_t *a, elkfw_conf_t *c, elkfw_allow_t *allow, gid_t *gid, char *err,
                     size_t errlen);
static void pick_gateway_id(agent_t *a);

/* A resource changed or removed by a reload: once nothing is held or in flight on it, its
 * new settings take effect (the lock is set up again) or its slot is freed. Returns true
 * when nothing is pending any more. */
static bool res_settle(agent_t *a, resource_t *r)
{
    elk_lock_config_t lc;
    int rc;
    if (!r->has_pending && !r->removing) {
        return true;
    }
    if (owned_by(a, r, r->owner) || r->acquiring || elk_lock_state(&r->lock) != ELK_LOCK_IDLE ||
        elk_lock_busy(&r->lock) || elkfw_sup_stopping(&r->sup) ||
        elk_lock_deinit(&r->lock) != ELK_OK) {
        return false;
    }
    r->owner = -1;
    if (r->removing) {
        elkd_log(a, ELK_LOG_INFO, "%s: removed (configuration reload)", r->conf->name);
        r->in_use = r->removing = r->has_pending = false;
        return true;
    }
    r->own = r->pending;
    r->has_pending = false;
    elkfw_resource_lock_config(&a->conf, &r->own, &lc);
    rc = elk_lock_init(&r->lock, &a->client, r->own.name, &lc, on_lock_event, r);
    if (rc != ELK_OK) {
        elkd_log(a, ELK_LOG_ERROR,
                 "%s: its new settings cannot be used (%s); the resource is out of service until "
                 "the next reload or restart",
                 r->conf->name, elk_err_message(rc));
        r->in_use = false;
        return true;
    }
    elkd_log(a, ELK_LOG_INFO,
             "%s: new settings in force (ttl %" PRIu32 " ms, stop_margin %" PRIu32 " ms)",
             r->conf->name, r->conf->ttl_ms, r->conf->stop_margin_ms);
    return true;
}

/* Every tick: settle what a reload left pending and give the resource to its waiters. */
static void settle_reloaded(agent_t *a, uint64_t now, uint64_t *next)
{
    size_t i;
    for (i = 0; i < a->n_res; i++) {
        resource_t *r = &a->res[i];
        if (r->in_use && (r->has_pending || r->removing)) {
            if (res_settle(a, r)) {
                hand_to_next_waiter(a, r, now);
            } else if (!owned_by(a, r, r->owner) && now + 50 < *next) {
                *next = now + 50; /* a release round is ending: look again soon */
            }
        }
    }
}

/* What stops a rebuild of the fleet: a lease held, being taken or released, or a waiter.
 * Returns the resource's name, or NULL if nothing does. */
static const char *fleet_in_use(agent_t *a)
{
    size_t i;
    for (i = 0; i < a->n_res; i++) {
        const resource_t *r = &a->res[i];
        if (r->in_use &&
            (owned_by(a, r, r->owner) || r->acquiring ||
             elk_lock_state(&r->lock) != ELK_LOCK_IDLE || elk_lock_busy(&r->lock) ||
             elkfw_sup_stopping(&r->sup))) {
            return r->conf->name;
        }
    }
    for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
        if (a->waiters[i].client >= 0) {
            return a->res[a->waiters[i].res].conf->name;
        }
    }
    return NULL;
}

/* Nothing is held: set the fleet, the lock client and every resource up from next. If that
 * fails (e.g. a TLS file), the running configuration is set up again. */
static int rebuild_fleet(agent_t *a, const elkfw_conf_t *next, char *err, size_t errlen)
{
    elkfw_conf_t *old = malloc(sizeof *old);
    char err2[ELKFW_ERR_MAX];
    int rc;
    if (old == NULL) {
        snprintf(err, errlen, "out of memory");
        return ELK_E_NO_RESOURCES;
    }
    *old = a->conf;
    teardown_fleet(a);
    memset(a->res, 0, sizeof a->res);
    a->n_res = 0;
    a->conf = *next;
    pick_gateway_id(a);
    memset(a->nodelog, 0, sizeof a->nodelog);
    memset(a->node_metrics, 0, sizeof a->node_metrics);
    memset(a->quarantine_until, 0, sizeof a->quarantine_until);
    rc = setup_fleet(a, err, errlen);
    if (rc != ELK_OK) {
        teardown_fleet(a);
        memset(a->res, 0, sizeof a->res);
        a->n_res = 0;
        a->conf = *old;
        pick_gateway_id(a);
        if (setup_fleet(a, err2, sizeof err2) != ELK_OK) {
            elkd_log(a, ELK_LOG_ERROR,
                     "reload: the running configuration cannot be set up again either: %s", err2);
        }
    }
    free(old);
    return rc;
}

/* A resource of next that no slot serves: a slot removed by an earlier reload but still
 * held takes it back; else a free slot gets it. */
static void reload_add(agent_t *a, const elkfw_resource_conf_t *nr)
{
    elk_lock_config_t lc;
    size_t k;
    int rc;
    for (k = 0; k < a->n_res; k++) {
        resource_t *r = &a->res[k];
        if (r->in_use && strcmp(r->own.name, nr->name) == 0) {
            r->removing = false;
            r->has_pending = !elkfw_resource_conf_same(&r->own, nr);
            r->pending = *nr;
            return;
        }
    }
    for (k = 0; k < ELKFW_MAX_RESOURCES; k++) {
        resource_t *r = &a->res[k];
        if (k < a->n_res && r->in_use) {
            continue;
        }
        memset(r, 0, sizeof *r);
        r->agent = a;
        r->own = *nr;
        r->conf = &r->own;
        r->owner = -1;
        elkfw_resource_lock_config(&a->conf, nr, &lc);
        rc = elk_lock_init(&r->lock, &a->client, nr->name, &lc, on_lock_event, r);
        if (rc != ELK_OK) {
            elkd_log(a, ELK_LOG_ERROR, "%s: cannot be added: %s", nr->name, elk_err_message(rc));
            return;
        }
        r->in_use = true;
        a->n_res = k >= a->n_res ? k + 1 : a->n_res;
        elkd_log(a, ELK_LOG_INFO, "%s: added (configuration reload)", nr->name);
        return;
    }
    elkd_log(a, ELK_LOG_ERROR,
             "%s: not added: every resource slot is taken (removed resources still held free "
             "theirs when released; reload again then)",
             nr->name);
}

/* Apply the resource part of next: changed and removed resources settle once idle
 * (their waiters for a removed one are told now), added ones get a slot. */
static void reload_resources(agent_t *a, const elkfw_conf_t *next, uint64_t now)
{
    size_t i, k;
    for (i = 0; i < a->n_res; i++) {
        resource_t *r = &a->res[i];
        const elkfw_resource_conf_t *nr;
        if (!r->in_use) {
            continue;
        }
        nr = elkfw_conf_resource(next, r->own.name, strlen(r->own.name));
        r->removing = nr == NULL;
        r->has_pending = nr != NULL &&
            (!elkfw_resource_conf_same(&r->own, nr) ||
             a->conf.drift_factor_ppm != next->drift_factor_ppm ||
             a->conf.drift_fixed_ms != next->drift_fixed_ms);
        if (r->has_pending) {
            r->pending = *nr;
        }
        for (k = 0; r->removing && k < sizeof a->waiters / sizeof a->waiters[0]; k++) {
            if (a->waiters[k].client >= 0 && a->waiters[k].res == i) {
                client_err(a, a->waiters[k].client, ELK_E_RESOURCE_UNKNOWN,
                           "removed from the configuration");
                a->waiters[k].client = -1;
            }
        }
        if ((r->removing || r->has_pending) && owned_by(a, r, r->owner)) {
            elkd_log(a, ELK_LOG_INFO, "%s: %s once its lease (token %" PRIu64 ") is released",
                     r->own.name, r->removing ? "goes" : "new settings apply",
                     elk_lock_token(&r->lock));
        }
    }
    a->conf = *next; /* settled resources take the new drift settings */
    for (i = 0; i < next->n_resources; i++) {
        if (find_res(a, next->resources[i].name) == NULL) {
            reload_add(a, &next->resources[i]);
        }
    }
    settle_reloaded(a, now, &(uint64_t){UINT64_MAX});
}

/* SIGHUP: check the file as --check does; on any error keep everything running as it
 * is and say why. Otherwise apply what may change while leases are held
 * (elkfw/reload.h). */
/* Every in-use slot takes its resource's allow lists from next (resolved into allow,
 * indexed like next->resources): who may take a resource changes at once, held or not. */
static void reload_allow(agent_t *a, const elkfw_conf_t *next, const elkfw_allow_t *allow)
{
    size_t i, k;
    for (i = 0; i < a->n_res; i++) {
        for (k = 0; a->res[i].in_use && k < next->n_resources; k++) {
            if (strcmp(a->res[i].own.name, next->resources[k].name) == 0) {
                a->allow[i] = allow[k];
            }
        }
    }
}

/* A valid but risky configuration (max_hold = 0, ...) is said in the log too, not only
 * by --check: at start and after each reload. */
static void log_conf_warnings(agent_t *a)
{
    char w[ELKFW_ERR_MAX];
    size_t pos = 0;
    while (elkfw_conf_warning(&a->conf, &pos, w, sizeof w)) {
        elkd_log(a, ELK_LOG_WARN, "%s", w);
    }
}

static void reload_config(agent_t *a, uint64_t now)
{
    elkfw_conf_t *next = malloc(sizeof *next);
    elkfw_allow_t allow[ELKFW_MAX_RESOURCES];
    gid_t gid;
    elkfw_reload_plan_t plan;
    const char *busy;
    char err[ELKFW_ERR_MAX], old_events[ELKFW_STR_MAX];
    uint32_t old_events_max = a->conf.agent.events_max;
    int rc;
    err[0] = '\0';
    snprintf(old_events, sizeof old_events, "%s", a->conf.agent.events_file);
    elkfw_notify_reloading(&a->notify);
    if (next == NULL) {
        snprintf(err, sizeof err, "out of memory");
    } else if (read_conf(a, next, allow, &gid, err, sizeof err) == ELK_OK) {
        elkfw_reload_plan(&a->conf, next, &plan);
        if (plan.restart_key != NULL) {
            elkd_log(a, ELK_LOG_WARN,
                     "reload: [agent] %s changed; only a restart applies it (the running value is "
                     "kept)",
                     plan.restart_key);
            strcpy(next->agent.socket_path, a->conf.agent.socket_path);
            next->agent.log_target = a->conf.agent.log_target;
            next->agent.socket_mode = a->conf.agent.socket_mode;
            strcpy(next->agent.socket_group, a->conf.agent.socket_group);
        }
        if (plan.fleet_key != NULL && (busy = fleet_in_use(a)) != NULL) {
            snprintf(err, sizeof err,
                     "%s changed, which would change the quorum of held leases, and %s is held or "
                     "in use; release it (or restart elkd) to apply that",
                     plan.fleet_key, busy);
        } else if (plan.fleet_key != NULL) {
            rc = rebuild_fleet(a, next, err, sizeof err);
            if (rc == ELK_OK) {
                elkd_log(
                    a, ELK_LOG_INFO,
                    "reload: %s changed and no lease was held: fleet set up again (%zu node%s, "
                    "%zu resource%s)",
                    plan.fleet_key, a->conf.n_nodes, a->conf.n_nodes == 1 ? "" : "s", a->n_res,
                    a->n_res == 1 ? "" : "s");
            }
        } else {
            reload_resources(a, next, now);
            elkd_log(a, ELK_LOG_INFO,
                     "reload: %zu resource%s added, %zu changed (held leases keep their settings "
                     "until released), %zu removed",
                     plan.added, plan.added == 1 ? "" : "s", plan.changed, plan.removed);
        }
        if (err[0] == '\0') {
            reload_allow(a, next, allow);
        }
    }
    free(next);
    (void)elkfw_notify_send(&a->notify, "READY=1");
    if (err[0] != '\0') {
        a->reload_failures++;
        snprintf(a->reload_error, sizeof a->reload_error, "%s", err);
        elkd_log(a, ELK_LOG_ERROR, "reload failed, keeping the running configuration: %s", err);
        return;
    }
    a->reloads++;
    a->reload_error[0] = '\0';
    evlog_apply(a, old_events, old_events_max);
    log_conf_warnings(a);
    a->log_level = a->level_override >= 0 ? a->level_override : a->conf.agent.log_level;
    a->lib_log.level = a->log_level;
}

static bool shutdown_done(agent_t *a, uint64_t now)
{
    size_t i;
    for (i = 0; i < a->n_res; i++) {
        if (a->res[i].shutdown_release_at != 0) {
            return false; /* a holder still has its stop margin */
        }
        if (elkfw_sup_stopping(&a->res[i].sup)) {
            return false; /* a holder's command is still being stopped */
        }
        if (elk_lock_busy(&a->res[i].lock) && now - a->shutdown_started < ELKD_SHUTDOWN_GRACE_MS) {
            return false; /* background release rounds still in flight */
        }
    }
    return true;
}

static void handle_signals(agent_t *a, uint64_t now)
{
    struct signalfd_siginfo si;
    while (read(a->signal_fd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
            begin_shutdown(a, now, si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
        } else if (si.ssi_signo == SIGHUP && !a->shutting_down) {
            reload_config(a, now);
        }
    }
}

/* Local waiters that ran out of time get their answer; lowers *next to the next one. */
static void expire_waiters(agent_t *a, uint64_t now, uint64_t *next)
{
    size_t i;
    for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
        waiter_t *w = &a->waiters[i];
        if (w->client < 0) {
            continue;
        }
        if (a->clients[w->client].fd < 0 || a->clients[w->client].id != w->client_id) {
            w->client = -1;
        } else if (now >= w->deadline) {
            /* say what stood in the way: another client of this agent */
            const resource_t *r = &a->res[w->res];
            char detail[160];
            if (r->owner >= 0 && owned_by(a, r, r->owner)) {
                snprintf(detail, sizeof detail, "%s; held by pid %d on this agent", r->conf->name,
                         (int)a->clients[r->owner].pid);
            } else {
                snprintf(detail, sizeof detail, "%s", r->conf->name);
            }
            record_event(a, ELKFW_EV_REFUSED, r, w->client, 0, now, 0, ELK_E_LOCK_TIMEOUT);
            client_err(a, w->client, ELK_E_LOCK_TIMEOUT, detail);
            a->res[w->res].metrics.refusals++;
            w->client = -1;
        } else if (w->deadline < *next) {
            *next = w->deadline;
        }
    }
}

/* Shutdown releases once holders had their stop margin; supervised commands being
 * stopped are stepped. */
static void step_resources(agent_t *a, uint64_t now, uint64_t *next)
{
    size_t i;
    for (i = 0; i < a->n_res; i++) {
        resource_t *r = &a->res[i];
        if (r->shutdown_release_at != 0) {
            if (now >= r->shutdown_release_at || !owned_by(a, r, r->owner)) {
                release_when_stopped(a, r, now, "shutting down");
            } else if (r->shutdown_release_at < *next) {
                *next = r->shutdown_release_at;
            }
        }
        supervise_step(a, r, now, next);
    }
}

/* Holds, takes or waits for nothing (a supervised command's lease stays owned by the
 * connection until it ends): a connection the idle bound may close. */
static bool client_holds_nothing(agent_t *a, int slot)
{
    size_t i;
    for (i = 0; i < a->n_res; i++) {
        if (owned_by(a, &a->res[i], slot)) {
            return false;
        }
    }
    return !client_pending(a, slot, NULL);
}

/* A complete request line read but not served yet (back-pressure held it). */
static bool client_has_line(const client_t *c)
{
    return c->in.len > c->in.consumed &&
        memchr(c->in.buf + c->in.consumed, '\n', c->in.len - c->in.consumed) != NULL;
}

/* The stall and idle bounds of one client, after its flush: true if it is to be closed
 * (*why says why); lowers *next to when a bound next runs out. */
static bool client_bounds(agent_t *a, int slot, uint64_t now, uint64_t *next, const char **why)
{
    client_t *c = &a->clients[slot];
    uint32_t stall = a->conf.agent.client_stall_timeout_ms;
    uint32_t idle = a->conf.agent.client_idle_timeout_ms;
    if (c->out_stuck_since != 0) {
        uint64_t at = c->out_stuck_since + stall;
        if (now >= at) {
            client_stalled(a, c, now - c->out_stuck_since, "[agent] client_stall_timeout");
            *why = "stalled";
            return true;
        }
        *next = at < *next ? at : *next;
        return false;
    }
    if (idle == 0 || c->out_len > 0 || c->close_after_flush || !client_holds_nothing(a, slot)) {
        return false;
    }
    if (now >= c->active_at + idle) {
        elkd_log(a, ELK_LOG_INFO,
                 "client %" PRIu64 " (uid %u, pid %d, %s) closed: it held nothing and sent nothing "
                 "for %" PRIu64 " ms ([agent] client_idle_timeout)",
                 c->id, (unsigned)c->peer.uid, (int)c->pid, c->peer.exe, now - c->active_at);
        *why = "idle";
        return true;
    }
    *next = c->active_at + idle < *next ? c->active_at + idle : *next;
    return false;
}

/* Write what is queued for each client; close those dropped, stalled, idle or done. */
static void flush_clients(agent_t *a, uint64_t now, uint64_t *next)
{
    size_t i;
    for (i = 0; i < ELKD_MAX_CLIENTS; i++) {
        client_t *c = &a->clients[i];
        const char *why = "dropped";
        if (c->fd < 0) {
            continue;
        }
        client_flush(a, (int)i, now);
        if (c->drop || client_bounds(a, (int)i, now, next, &why)) {
            client_close(a, (int)i, now, why);
        } else if (c->close_after_flush && c->out_len == 0) {
            client_close(a, (int)i, now, "QUIT");
        } else if (c->out_len < ELKD_OUT_SOFT && client_has_line(c) &&
                   !client_pending(a, (int)i, NULL)) {
            *next = now; /* room again: serve the requests back-pressure held */
        }
    }
}

/* The service manager's view: READY=1 once the fleet has a quorum, or once the wait for it
 * is over (STATUS= says what is missing); STATUS= whenever the summary changes. The wait
 * covers a fresh fleet's vote-hygiene quarantine too (about a TTL: a server just started
 * cannot be told from one that restarted empty). */
static void notify_state(agent_t *a, uint64_t now, uint64_t *next)
{
    char msg[sizeof a->sd_status + 16];
    size_t i, held = 0, ready = elk_fleet_ready_count(&a->fleet);
    bool quorum = elk_client_ready(&a->client);
    uint64_t by = a->ready_by;
    if (a->notify.fd < 0 || a->shutting_down) {
        return;
    }
    for (i = 0; i < a->fleet.count; i++) {
        uint64_t q = elk_client_node_quarantine(&a->client, i);
        by = q > by ? q : by;
    }
    if (!a->ready_sent && !quorum && now < by) {
        if (by < *next) {
            *next = by;
        }
        return;
    }
    for (i = 0; i < a->n_res; i++) {
        held += a->res[i].in_use && elk_lock_is_held(&a->res[i].lock, now);
    }
    snprintf(msg, sizeof msg, "%s%zu/%zu nodes ready%s, %zu lease%s held, %zu client%s",
             a->ready_sent ? "STATUS=" : "READY=1\nSTATUS=", ready, a->fleet.count,
             quorum ? "" : " (no quorum: waiting for the fleet)", held, held == 1 ? "" : "s",
             clients_connected(a), clients_connected(a) == 1 ? "" : "s");
    if (strcmp(strstr(msg, "STATUS=") + 7, a->sd_status) != 0 || !a->ready_sent) {
        snprintf(a->sd_status, sizeof a->sd_status, "%s", strstr(msg, "STATUS=") + 7);
        (void)elkfw_notify_send(&a->notify, msg);
        a->ready_sent = true;
    }
}

/* The local clock suspect: the library says once when a spell begins (all connected nodes'
 * clocks jump alike: this gateway's own clock is the likely cause); elkd says when it ends. */
static void local_clock_step(agent_t *a)
{
    bool on = elk_client_local_clock_suspect(&a->client, NULL, NULL) == ELK_E_LOCAL_CLOCK;
    if (a->local_clock_suspect && !on) {
        elkd_log(a, ELK_LOG_INFO,
                 "local clock: the nodes' clocks no longer jump alike (the clock check's "
                 "quarantines still run out as they stand)");
    }
    a->local_clock_suspect = on;
}

/* One step of the agent by the clock: the lock engine, local waiters, resources,
 * client output. Returns the time of the next step, or 0 once a shutdown is complete. */
/* Vote hygiene: the library warns when it quarantines a node; elkd says when the
 * quarantine is over, and wakes up for that moment. */
static void hygiene_step(agent_t *a, uint64_t now, uint64_t *next)
{
    size_t i;
    for (i = 0; i < a->fleet.count; i++) {
        uint64_t until = elk_client_node_quarantine(&a->client, i);
        if (until > now) {
            if (a->quarantine_until[i] == 0) {
                elkd_log(a, ELK_LOG_INFO,
                         "node %s (%s:%u): quarantined, no vote for %" PRIu64 " ms (%s)",
                         a->conf.nodes[i].name, a->conf.nodes[i].host,
                         (unsigned)a->conf.nodes[i].port, until - now,
                         elk_client_node_hygiene(&a->client, i));
            }
            a->quarantine_until[i] = until;
            *next = until < *next ? until : *next;
        } else if (a->quarantine_until[i] != 0) {
            a->quarantine_until[i] = 0;
            elkd_log(a, ELK_LOG_INFO, "node %s (%s:%u): quarantine over, it may vote again (%s)",
                     a->conf.nodes[i].name, a->conf.nodes[i].host, (unsigned)a->conf.nodes[i].port,
                     elk_client_node_hygiene(&a->client, i));
        }
    }
    local_clock_step(a);
}

static uint64_t agent_tick(agent_t *a, uint64_t now)
{
    uint64_t next = elk_client_poll(&a->client, now);
    size_t i;
    now = a->clock.now_ms(a->clock.ctx);
    expire_waiters(a, now, &next);
    step_resources(a, now, &next);
    settle_reloaded(a, now, &next);
    notify_state(a, now, &next);
    node_summaries(a, now, &next);
    hygiene_step(a, now, &next);
    metrics_step(a, now, &next);
    elkfw_lograte_flush(&a->lograte, now, &next, log_summary, a);
    if (serve_waiting_requests(a, now)) {
        next = now; /* an ACQUIRE among them queued requests the next poll sends */
    }
    flush_clients(a, now, &next);
    if (a->shutting_down && shutdown_done(a, now)) {
        for (i = 0; i < ELKD_MAX_CLIENTS; i++) {
            if (a->clients[i].fd >= 0) {
                client_flush(a, (int)i, now);
                client_close(a, (int)i, now, "agent stopped");
            }
        }
        elkd_log(a, ELK_LOG_INFO, "stopped");
        return 0;
    }
    if (a->shutting_down && next > now + 50) {
        next = now + 50; /* watch the release rounds finish */
    }
    return next;
}

/* What each descriptor in the poll set is. */
typedef enum poll_kind { POLL_SIGNALS, POLL_LISTEN, POLL_CLIENT, POLL_NODE } poll_kind_t;

#define ELKD_POLL_MAX (2 + ELKD_MAX_CLIENTS + CONFIG_ELK_MAX_NODES)

typedef struct poll_set {
    struct pollfd pfd[ELKD_POLL_MAX];
    poll_kind_t kind[ELKD_POLL_MAX];
    int slot[ELKD_POLL_MAX]; /* POLL_CLIENT: the client slot */
    size_t n;
} poll_set_t;

static void poll_add(poll_set_t *ps, int fd, short events, poll_kind_t kind, int slot)
{
    ps->pfd[ps->n].fd = fd;
    ps->pfd[ps->n].events = events;
    ps->pfd[ps->n].revents = 0;
    ps->kind[ps->n] = kind;
    ps->slot[ps->n] = slot;
    ps->n++;
}

static void poll_build(const agent_t *a, poll_set_t *ps)
{
    elk_wait_t waits[CONFIG_ELK_MAX_NODES];
    size_t i, nw;
    ps->n = 0;
    poll_add(ps, a->signal_fd, POLLIN, POLL_SIGNALS, -1);
    if (a->listen_fd >= 0) {
        poll_add(ps, a->listen_fd, POLLIN, POLL_LISTEN, -1);
    }
    for (i = 0; i < ELKD_MAX_CLIENTS; i++) {
        const client_t *c = &a->clients[i];
        /* A buffer full of requests behind an unanswered ACQUIRE: not read (a hang-up is
         * seen once the ACQUIRE is answered, at the latest when its wait ends). */
        bool full = c->in.len == c->in.cap && c->in.consumed == 0;
        /* back-pressure: no reading while its answers wait to be read (a hang-up shows as
         * a failed send) */
        bool read =
            c->out_len < ELKD_OUT_SOFT && !(full && client_pending((agent_t *)a, (int)i, NULL));
        short ev = (short)((read ? POLLIN : 0) | (c->out_len > 0 ? POLLOUT : 0));
        if (c->fd >= 0 && ev != 0) {
            poll_add(ps, c->fd, ev, POLL_CLIENT, (int)i);
        }
    }
    nw = elk_fleet_waits(&a->fleet, waits, CONFIG_ELK_MAX_NODES);
    for (i = 0; i < nw; i++) {
        if (waits[i].fd >= 0) {
            poll_add(ps, waits[i].fd,
                     (short)(((waits[i].events & ELK_WAIT_READ) ? POLLIN : 0) |
                             ((waits[i].events & ELK_WAIT_WRITE) ? POLLOUT : 0)),
                     POLL_NODE, -1);
        }
    }
}

static void poll_dispatch(agent_t *a, const poll_set_t *ps, uint64_t now)
{
    size_t i;
    for (i = 0; i < ps->n; i++) {
        const struct pollfd *p = &ps->pfd[i];
        if (p->revents == 0) {
            continue;
        }
        switch (ps->kind[i]) {
        case POLL_SIGNALS:
            handle_signals(a, now);
            break;
        case POLL_LISTEN:
            if (a->listen_fd >= 0) {
                accept_clients(a, now);
            }
            break;
        case POLL_CLIENT:
            /* the slot may have been closed (and reused) by an earlier entry */
            if (a->clients[ps->slot[i]].fd == p->fd &&
                (p->revents & (POLLIN | POLLHUP | POLLERR))) {
                client_readable(a, ps->slot[i], now);
            }
            break;
        case POLL_NODE:
            break; /* the next elk_client_poll does the I/O */
        }
    }
}

static int run_loop(agent_t *a)
{
    poll_set_t ps;
    for (;;) {
        uint64_t now = a->clock.now_ms(a->clock.ctx);
        uint64_t next = agent_tick(a, now), wd;
        int timeout;
        if (next == 0) {
            return ELKD_EXIT_OK;
        }
        now = a->clock.now_ms(a->clock.ctx);
        wd = elkfw_notify_watchdog(&a->notify, now); /* pinged only while this loop turns */
        next = wd < next ? wd : next;
        poll_build(a, &ps);
        timeout = next <= now ? 0 : (next - now > 60000u ? 60000 : (int)(next - now));
        if (poll(ps.pfd, ps.n, timeout) < 0 && errno != EINTR) {
            elkd_log(a, ELK_LOG_ERROR, "poll: %s", strerror(errno));
            return ELKD_EXIT_RUNTIME;
        }
        poll_dispatch(a, &ps, a->clock.now_ms(a->clock.ctx));
    }
}

/* ------------------------------------------------------------------ startup */

static void usage(FILE *f)
{
    fprintf(
        f,
        "Usage: elkd [-c PATH] [-f] [--log stderr|syslog] [--log-level LEVEL] [--socket PATH] "
        "[--check]\n"
        "            [--print-acl]\n"
        "The edgelock agent: holds leases on a Redis fleet for local programs (see elk(1)).\n"
        "\n"
        "  -c, --config PATH     configuration file (default " ELKD_DEFAULT_CONFIG ")\n"
        "  -f, --foreground      stay in the foreground (default: detach once the socket is up)\n"
        "      --log TARGET      stderr or syslog (overrides [agent] log)\n"
        "      --log-level L     error, warn, info or debug (overrides [agent] log_level)\n"
        "  -s, --socket PATH     control socket (overrides [agent] socket)\n"
        "      --check           check the configuration, its TLS files and secrets, and exit\n"
        "      --print-acl       print the least-privilege Redis ACL rule for the lock user and "
        "exit\n"
        "  -h, --help            this text\n"
        "  -V, --version         print the version\n"
        "\n"
        "Exit codes: 0 ok (also after SIGTERM/SIGINT), 1 runtime failure, 2 bad configuration or\n"
        "usage (with --check also unusable TLS files and secrets every user can read), 3 cannot "
        "bind\n"
        "the control socket or give it its mode and group, 4 fleet setup failed (e.g. TLS "
        "files).\n");
}

static int parse_level(const char *s)
{
    if (strcmp(s, "error") == 0)
        return ELK_LOG_ERROR;
    if (strcmp(s, "warn") == 0)
        return ELK_LOG_WARN;
    if (strcmp(s, "info") == 0)
        return ELK_LOG_INFO;
    if (strcmp(s, "debug") == 0)
        return ELK_LOG_DEBUG;
    return -1;
}

/* systemd names the stream it connected to stderr in $JOURNAL_STREAM ("dev:ino"). */
static bool stderr_is_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    return js != NULL && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &st) == 0 &&
        (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* Fork into the background; the parent exits with the child's startup result. */
static int daemonize(agent_t *a)
{
    int p[2];
    pid_t pid;
    if (pipe2(p, O_CLOEXEC) != 0) {
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        return -1;
    }
    if (pid > 0) {
        unsigned char code = ELKD_EXIT_RUNTIME;
        close(p[1]);
        if (read(p[0], &code, 1) != 1) {
            code = ELKD_EXIT_RUNTIME;
        }
        _exit(code);
    }
    close(p[0]);
    setsid();
    a->ready_pipe = p[1];
    return 0;
}

static void detach_stdio(agent_t *a)
{
    int fd = open("/dev/null", O_RDWR);
    if (fd >= 0) {
        dup2(fd, 0);
        dup2(fd, 1);
        if (a->log_target == ELKFW_LOG_SYSLOG) {
            dup2(fd, 2);
        }
        if (fd > 2) {
            close(fd);
        }
    }
}

static int fail_startup(agent_t *a, int code)
{
    if (a->ready_pipe >= 0) {
        unsigned char c = (unsigned char)code;
        (void)!write(a->ready_pipe, &c, 1);
    }
    return code;
}

/* Command line: options into the agent. Returns -1 to go on, else an exit code. */
typedef struct elkd_args {
    const char *log_arg, *level_arg;
    bool check_only;
    bool print_acl;
} elkd_args_t;

/* An option getopt refused (unknown, or its value missing): one line with the closest
 * option when it looks like a slip, then where the usage is. */
static int bad_option(const struct option *opts, const char *arg)
{
    char names[12][24];
    const char *cands[12];
    size_t n = 0;
    const char *guess;
    for (; opts[n].name != NULL && n < 12; n++) {
        snprintf(names[n], sizeof names[n], "--%s", opts[n].name);
        cands[n] = names[n];
    }
    guess = arg[0] == '-' && arg[1] == '-' ? elkfw_suggest(arg, strcspn(arg, "="), cands, n) : NULL;
    if (guess != NULL && strncmp(arg, guess, strlen(guess)) != 0) {
        fprintf(stderr, "elkd: unknown option '%s' (did you mean %s?)\n", arg, guess);
    } else {
        fprintf(stderr, "elkd: unknown option '%s'\n", arg);
    }
    fputs("Try 'elkd --help' for more information.\n", stderr);
    return ELKD_EXIT_CONFIG;
}

static int parse_args(agent_t *a, int argc, char **argv, elkd_args_t *args)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"foreground", no_argument, NULL, 'f'},
        {"log", required_argument, NULL, 'L'},    {"log-level", required_argument, NULL, 'l'},
        {"socket", required_argument, NULL, 's'}, {"check", no_argument, NULL, 'C'},
        {"print-acl", no_argument, NULL, 'A'},    {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0}};
    int opt;
    memset(args, 0, sizeof *args);
    opterr = 0; /* a wrong option is said in one line below, with the closest one */
    while ((opt = getopt_long(argc, argv, ":c:fs:hV", opts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            a->conf_path = optarg;
            break;
        case 'f':
            a->foreground = true;
            break;
        case 'L':
            args->log_arg = optarg;
            break;
        case 'l':
            args->level_arg = optarg;
            break;
        case 's':
            a->socket_override = optarg;
            break;
        case 'C':
            args->check_only = true;
            break;
        case 'A':
            args->print_acl = true;
            break;
        case 'h':
            usage(stdout);
            return ELKD_EXIT_OK;
        case 'V':
            printf("elkd %s\n", ELK_VERSION_STRING);
            return ELKD_EXIT_OK;
        case ':':
            fprintf(stderr,
                    "elkd: option '%s' needs a value\nTry 'elkd --help' for more "
                    "information.\n",
                    argv[optind - 1]);
            return ELKD_EXIT_CONFIG;
        default:
            return bad_option(opts, argv[optind - 1]);
        }
    }
    if (optind != argc) {
        fprintf(stderr, "elkd: unexpected argument '%s' (see elkd --help)\n", argv[optind]);
        return ELKD_EXIT_CONFIG;
    }
    if (args->log_arg != NULL && strcmp(args->log_arg, "stderr") != 0 &&
        strcmp(args->log_arg, "syslog") != 0) {
        fprintf(stderr, "elkd: --log must be stderr or syslog, not '%s'\n", args->log_arg);
        return ELKD_EXIT_CONFIG;
    }
    if (args->level_arg != NULL && parse_level(args->level_arg) < 0) {
        fprintf(stderr, "elkd: --log-level must be error, warn, info or debug, not '%s'\n",
                args->level_arg);
        return ELKD_EXIT_CONFIG;
    }
    return -1;
}

/* The gateway id: from the file, else the host name's allowed characters, else "gw". */
static void pick_gateway_id(agent_t *a)
{
    char host[256];
    size_t k, o = 0;
    if (a->conf.gateway_id[0] != '\0') {
        strcpy(a->gateway_id, a->conf.gateway_id);
        return;
    }
    if (gethostname(host, sizeof host) != 0) {
        strcpy(host, "gw");
    }
    host[sizeof host - 1] = '\0';
    for (k = 0; host[k] != '\0' && o < CONFIG_ELK_GATEWAY_ID_MAX_LEN; k++) {
        if (elkfw_name_valid(&host[k], 1, 1)) {
            a->gateway_id[o++] = host[k];
        }
    }
    if (o == 0) {
        strcpy(a->gateway_id, "gw");
    }
}

/* The file into c with the command line's socket, its allow lists resolved into allow
 * (indexed like c->resources) and its socket group into *gid: what --check checks before
 * it tries the TLS files, and all a reload checks before it applies anything (new TLS
 * material is set up for real then, and the running fleet set up again if that fails).
 * Returns ELK_OK, or ELK_E_CONFIG with the reason in err. */
static int read_conf(const agent_t *a, elkfw_conf_t *c, elkfw_allow_t *allow, gid_t *gid, char *err,
                     size_t errlen)
{
    if (elkfw_conf_load(c, a->conf_path, err, errlen) != ELK_OK) {
        return ELK_E_CONFIG;
    }
    if (a->socket_override != NULL) {
        if (strlen(a->socket_override) >= sizeof c->agent.socket_path) {
            snprintf(err, errlen, "--socket path is longer than %zu bytes",
                     sizeof c->agent.socket_path - 1);
            return ELK_E_CONFIG;
        }
        strcpy(c->agent.socket_path, a->socket_override);
    }
    if (elkfw_access_resolve(c, allow, err, errlen) != ELK_OK ||
        elkfw_access_socket_group(c, gid, err, errlen) != ELK_OK) {
        return ELK_E_CONFIG;
    }
    return ELK_OK;
}

/* --check: what setup would refuse, refused now (exit 2, which the unit does not restart):
 * the TLS files are parsed as elkd will (CA, certificate, key), and a build without TLS
 * refuses tls = on. Then what is allowed to whom, so an open resource is never a surprise. */
static int check_config(agent_t *a)
{
    char err[ELKFW_ERR_MAX];
    size_t i, pos = 0;
    int rc;
    elk_posix_clock(&a->clock);
    elk_posix_entropy(&a->entropy);
    rc = setup_fleet(a, err, sizeof err);
    teardown_fleet(a);
    if (rc != ELK_OK) {
        fprintf(stderr, "elkd: %s\n", err);
        return ELKD_EXIT_CONFIG;
    }
    for (i = 0; i < a->conf.n_resources; i++) {
        const elkfw_resource_conf_t *r = &a->conf.resources[i];
        if (a->allow[i].open) {
            printf("%s: [resource %s] is open to every local user that can reach the socket (set "
                   "allow_users or "
                   "allow_groups)\n",
                   a->conf_path, r->name);
        } else {
            printf("%s: [resource %s] allow_users = %s; allow_groups = %s\n", a->conf_path, r->name,
                   r->allow_users[0] ? r->allow_users : "-",
                   r->allow_groups[0] ? r->allow_groups : "-");
        }
    }
    if (a->conf.agent.safety_check != ELKFW_SAFETY_OFF) {
        printf("%s: safety check: on every connection and again every %" PRIu32
               " ms on each connected node; a node whose settings turn unsafe (CONFIG SET "
               "maxmemory-policy) is %s within %" PRIu64 " ms\n",
               a->conf_path, elk_client_safety_recheck_ms(&a->client),
               a->conf.agent.safety_check == ELKFW_SAFETY_REFUSE ? "refused its vote" : "warned of",
               elk_client_safety_bound_ms(&a->client));
    }
    /* risky but valid: said, and --check still passes */
    while (elkfw_conf_warning(&a->conf, &pos, err, sizeof err)) {
        printf("%s\n", err);
    }
    printf("%s: configuration ok (%s, %zu node%s, %zu resource%s, gateway %s)\n", a->conf_path,
           elkfw_mode_name(a->conf.mode), a->conf.n_nodes, a->conf.n_nodes == 1 ? "" : "s",
           a->conf.n_resources, a->conf.n_resources == 1 ? "" : "s", a->gateway_id);
    return ELKD_EXIT_OK;
}

/* The file, with the command line's overrides. Returns -1 to go on, else an exit code. */
static int load_config(agent_t *a, const elkd_args_t *args)
{
    char err[ELKFW_ERR_MAX];
    if (read_conf(a, &a->conf, a->allow, &a->socket_gid, err, sizeof err) != ELK_OK) {
        fprintf(stderr, "elkd: %s\n", err);
        return ELKD_EXIT_CONFIG;
    }
    a->log_target = args->log_arg != NULL
        ? (strcmp(args->log_arg, "syslog") == 0 ? ELKFW_LOG_SYSLOG : ELKFW_LOG_STDERR)
        : a->conf.agent.log_target;
    a->level_override = args->level_arg != NULL ? parse_level(args->level_arg) : -1;
    a->log_level = a->level_override >= 0 ? a->level_override : a->conf.agent.log_level;
    pick_gateway_id(a);
    if (args->print_acl) {
        char line[600];
        (void)elkfw_acl_line(&a->conf, a->conf.nodes[0].user, line, sizeof line);
        printf("%s\n", line);
        return ELKD_EXIT_OK;
    }
    if (args->check_only) {
        return check_config(a);
    }
    return -1;
}

/* Fleet, signals, control socket; then tells a waiting parent (daemon mode) we are up.
 * Returns -1 when ready, else an exit code. */
static int start_agent(agent_t *a)
{
    char err[ELKFW_ERR_MAX];
    sigset_t mask;
    int rc;
    elk_posix_clock(&a->clock);
    elk_posix_entropy(&a->entropy);
    a->started_at = a->clock.now_ms(a->clock.ctx);
    a->lib_log.ctx = a;
    a->lib_log.write = lib_log_write;
    a->lib_log.level = a->log_level;
    rc = setup_fleet(a, err, sizeof err);
    if (rc != ELK_OK) {
        fprintf(stderr, "elkd: %s\n", err);
        if (a->log_target == ELKFW_LOG_SYSLOG) {
            syslog(LOG_ERR, "%s", err);
        }
        return fail_startup(a,
                            rc == ELK_E_INVALID_ARG || rc == ELK_E_NAME_INVALID ||
                                    rc == ELK_E_NAME_TOO_LONG
                                ? ELKD_EXIT_CONFIG
                                : ELKD_EXIT_FLEET);
    }
    log_conf_warnings(a);
    evlog_apply(a, "", 0);
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    a->signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (a->signal_fd < 0) {
        fprintf(stderr, "elkd: signalfd: %s\n", strerror(errno));
        return fail_startup(a, ELKD_EXIT_RUNTIME);
    }
    a->listen_fd = elkfw_access_listen(a->conf.agent.socket_path, a->conf.agent.socket_mode,
                                       a->socket_gid, err, sizeof err);
    if (a->listen_fd < 0) {
        fprintf(stderr, "elkd: %s\n", err);
        if (a->log_target == ELKFW_LOG_SYSLOG) {
            syslog(LOG_ERR, "%s", err);
        }
        teardown_fleet(a);
        return fail_startup(a, ELKD_EXIT_SOCKET);
    }
    /* READY=1 waits for a quorum at most as long as a first connection may take. */
    a->ready_by = a->clock.now_ms(a->clock.ctx) + a->conf.connect_timeout_ms + 1000u;
    if (a->ready_pipe >= 0) {
        /* The socket accepts connections now: let the parent exit 0. */
        char ok = 0;
        (void)!write(a->ready_pipe, &ok, 1);
        close(a->ready_pipe);
        a->ready_pipe = -1;
    }
    return -1;
}

static int elkd_main(agent_t *a, int argc, char **argv)
{
    elkd_args_t args;
    int rc, i;

    a->conf_path = ELKD_DEFAULT_CONFIG;
    a->listen_fd = -1;
    a->signal_fd = -1;
    a->ready_pipe = -1;
    a->notify.fd = -1;
    a->evlog.fd = -1;
    a->log_level = ELK_LOG_INFO;
    for (i = 0; i < ELKD_MAX_CLIENTS; i++) {
        a->clients[i].fd = -1;
    }
    for (i = 0; i < (int)(sizeof a->waiters / sizeof a->waiters[0]); i++) {
        a->waiters[i].client = -1;
    }
    if ((rc = parse_args(a, argc, argv, &args)) >= 0 || (rc = load_config(a, &args)) >= 0) {
        return rc;
    }
    if (a->log_target == ELKFW_LOG_SYSLOG) {
        openlog("elkd", LOG_PID, LOG_DAEMON);
    }
    elkfw_notify_init(&a->notify);
    a->journal = a->log_target == ELKFW_LOG_STDERR && stderr_is_journal();
    signal(SIGPIPE, SIG_IGN); /* port/posix has no MSG_NOSIGNAL (lwIP mirror) */
    if (!a->foreground && daemonize(a) != 0) {
        fprintf(stderr, "elkd: cannot fork into the background: %s\n", strerror(errno));
        return ELKD_EXIT_RUNTIME;
    }
    if ((rc = start_agent(a)) >= 0) {
        return rc;
    }
    if (!a->foreground) {
        detach_stdio(a);
    }
    elkd_log(a, ELK_LOG_INFO,
             "elkd %s started: gateway %s, %s fleet of %zu node%s, %zu resource%s, socket %s",
             ELK_VERSION_STRING, a->gateway_id, elkfw_mode_name(a->conf.mode), a->conf.n_nodes,
             a->conf.n_nodes == 1 ? "" : "s", a->n_res, a->n_res == 1 ? "" : "s",
             a->conf.agent.socket_path);
    rc = run_loop(a);
    elkfw_evlog_close(&a->evlog);
    elkfw_notify_close(&a->notify);
    teardown_fleet(a);
    if (a->listen_fd >= 0) {
        close(a->listen_fd);
        unlink(a->conf.agent.socket_path);
    }
    return rc;
}

int main(int argc, char **argv)
{
    /* The whole agent in one object (client slots with their output queues, the buffer
     * pool, the TLS contexts): hundreds of KiB, taken once at start, never per lock. */
    agent_t *a = calloc(1, sizeof *a);
    int rc;
    if (a == NULL) {
        fprintf(stderr, "elkd: out of memory for the agent (%zu bytes)\n", sizeof *a);
        return ELKD_EXIT_RUNTIME;
    }
    rc = elkd_main(a, argc, argv);
    free(a);
    return rc;
}
