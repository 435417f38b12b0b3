/* SPDX-License-Identifier: MIT */
/*
 * elk: command-line client of elkd, and the actuator-side fencing guard.
 *
 *   elk run [-w SECS|-n] [-E CODE] [--on-suspect/--on-lost HOOK] [--heartbeat D]
 *           RESOURCE -- CMD... | -c STRING       flock(1) across the fleet
 *   elk acquire [-w SECS|-n] [-E CODE] RESOURCE   hold until SIGINT/SIGTERM
 *   elk status [--json]
 *   elk guard --state FILE [TOKEN] [-- CMD...]        accept or refuse a fencing token;
 *                                                     with CMD, run it holding the guard
 *
 * Exit codes: one cause each, elkfw/cli.h (the enum) and firmware/elk/cli.c (elkd's refusal
 * to the code); README "Exit codes" and elk(1) list them.
 *
 * This header is elk's own (not elkfw's): the connection to elkd (agent_link_t), what
 * events say about a held lease (lease_watch_t), and the functions one of elk's files
 * calls in another. main.c holds the command table; each file says at its top what it does.
 */
#ifndef ELK_CLI_ELK_H
#define ELK_CLI_ELK_H
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elk/err.h"
#include "elk/fence.h"
#include "elk/fence_file.h"
#include "elkfw/cli.h"
#include "elkfw/conf.h"
#include "elkfw/ctl.h"
#include "elkfw/guard.h"
#include "elkfw/heartbeat.h"
#include "elkfw/history.h"
#include "elkfw/hooks.h"
#include "elkfw/lease.h"
#include "elkfw/say.h"
#include "elkfw/suggest.h"
#include "elkfw/supervise.h"
#include "elkfw/watch.h"

#include "elk/version.h"

/* What a step of a waiting loop returns to say: no exit code yet, keep going. */
#define STEP_ON (-1)

#define ELK_DEFAULT_SOCKET "/run/elkd/elkd.sock"
/* Where the packaged configuration keeps the lease event record (events_file). */
#define ELK_DEFAULT_EVENTS_FILE "/var/lib/elkd/events"
/* One whole line from elkd, the longest being the STATUS JSON answer. */
#define REPLY_BUF ELK_CTL_REPLY_MAX

/* The connection to elkd: one per elk process, owned by main and passed down. */
typedef struct agent_link {
    const char *sock_path;
    int fd;             /* -1 until agent_connect */
    bool full;          /* elkd answered ELK_E_AGENT_FULL: every command exits EXIT_AGENT_FULL */
    int held_code;      /* exit code for "held by another holder" (elk run/acquire -E) */
    elkfw_linebuf_t lb; /* lines received, over store */
    char *store;        /* REPLY_BUF bytes from the heap (at the first connect; kept): the
                           build's largest configuration makes it megabytes, mostly unused */
} agent_link_t;
/* The most resources of one `elk run a,b,...` (all or nothing). */
#define ELK_SET_MAX 8
/* What the events buffered so far say about our lease. */
typedef struct lease_watch {
    const char *resource; /* the lease's name; for a set, its names joined by commas */
    /* elk run a,b: the leases of the set, in canonical order (names as granted: a
     * semaphore's is its permit), each with its deadline and token; deadline is the
     * earliest and lost is set by the loss of any. n_set 0: resource alone. */
    size_t n_set;
    char set[ELK_SET_MAX][ELKFW_NAME_MAX];
    uint64_t set_deadline[ELK_SET_MAX];
    uint64_t set_token[ELK_SET_MAX];
    uint32_t set_stop_margin; /* the longest of the set's stop margins */
    uint64_t deadline;
    bool lost;       /* LOST for this resource, or SHUTDOWN, or the connection closed */
    const char *why; /* the cause of LOST, "elkd is shutting down", ... */
    char why_buf[192];
    uint32_t margin;      /* LOST: ms before the lease can have expired anywhere */
    bool print;           /* elk acquire: one stdout line per event */
    bool stopped_already; /* run: the command was already told to stop (own deadline) */
    bool suspect_new;     /* run: a SUSPECT came that the --on-suspect hook has not seen */
} lease_watch_t;

/* Shared between elk's files (each says what it does at its top). */
uint64_t elk__now_ms(void);
int elk__agent_connect(agent_link_t *ak);
__attribute__((format(printf, 2, 3))) int elk__agent_send(agent_link_t *ak, const char *fmt, ...);
int elk__agent_fill(agent_link_t *ak);
int elk__agent_fill_now(agent_link_t *ak);
int elk__agent_wait(const agent_link_t *ak, uint64_t deadline);
uint64_t elk__lease_deadline(const elkfw_ctl_msg_t *m, uint64_t now);
void elk__watch_msg(lease_watch_t *w, const elkfw_ctl_msg_t *m);
void elk__watch_lines(agent_link_t *ak, lease_watch_t *w);
int elk__agent_line(agent_link_t *ak, const char **line, size_t *len);
void elk__print_err_reply(const elkfw_ctl_msg_t *m, const char *what);
int elk__exit_for_err(const agent_link_t *ak, const elkfw_ctl_msg_t *m);
int elk__acquire_lease(agent_link_t *ak, const char *resource, uint32_t wait_ms,
                       uint32_t keepalive_ms, int sfd, elkfw_ctl_msg_t *m);
int elk__acquire_lease_wait(agent_link_t *ak, const char *resource, uint32_t wait_ms,
                            uint32_t keepalive_ms, int sfd, elkfw_ctl_msg_t *m, bool show);
void elk__release_and_wait(agent_link_t *ak, const char *resource);
bool elk__is_permit_of(const char *permit, const char *semaphore);
int elk__set_parse(const char *arg, char names[][ELKFW_NAME_MAX], size_t *n);
int elk__set_acquire(agent_link_t *ak, lease_watch_t *w, char asked[][ELKFW_NAME_MAX], size_t n,
                     uint32_t wait_ms, uint32_t keepalive_ms, int sfd);
void elk__lease_release(agent_link_t *ak, const lease_watch_t *w);
int elk__lease_send_each(agent_link_t *ak, const lease_watch_t *w, const char *verb,
                         const char *tail);
int elk__set_index(const lease_watch_t *w, const char *name);
void elk__usage_main(FILE *f);
void elk__usage_run(FILE *f);
void elk__usage_acquire(FILE *f);
void elk__usage_status(FILE *f);
void elk__usage_reload(FILE *f);
void elk__usage_guard(FILE *f);
bool elk__want_help(int argc, char **argv);
bool elk__resource_ok(const char *r);
int elk__make_signalfd(sigset_t *old);
bool elk__lease_usable(agent_link_t *ak, lease_watch_t *w, const elkfw_ctl_msg_t *grant,
                       bool *conn_open);
int elk__cmd_run(agent_link_t *ak, int argc, char **argv);
int elk__cmd_acquire(agent_link_t *ak, int argc, char **argv);
int elk__cmd_status(agent_link_t *ak, int argc, char **argv);

#endif
