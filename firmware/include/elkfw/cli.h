/* SPDX-License-Identifier: MIT */
/*
 * elk's command line, the parts flock(1) users meet first: durations (a bare number is
 * seconds, as flock -w takes it), the options of run and acquire (-w, -n, -E, -c), usage
 * errors in one line, and the one table from elkd's refusal to elk's exit code.
 */
#ifndef ELKFW_CLI_H
#define ELKFW_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* elk's exit codes, one cause each (README "Exit codes", elk(1) EXIT STATUS). */
enum {
    EXIT_OK = 0,
    EXIT_FAIL = 1,
    EXIT_USAGE = 64,
    EXIT_STALE = 65,
    EXIT_STORAGE = 66,
    EXIT_UNREACHABLE = 69,  /* elkd not reachable, or shutting down before a grant */
    EXIT_NOT_ACQUIRED = 73, /* held by another holder (-E changes it) */
    EXIT_AGENT_FULL = 74,   /* elkd has no client slot for us (ELK_E_AGENT_FULL) */
    EXIT_LOST = 75,         /* the lease was lost while held */
    EXIT_FLEET = 76,        /* too few servers reachable (or voting) for a quorum */
    EXIT_NOPERM = 77,       /* allow_users / allow_groups, or supervision refused */
    EXIT_CONFIG = 78,       /* elkd refused its configuration (reload) */
    EXIT_NOEXEC = 126,
    EXIT_NOTFOUND = 127
};

/* A duration on elk's command line: a bare number is seconds ("10", "0.5", as flock -w),
 * or a number with a unit: "500ms", "1.5s", "2m", "1h". Returns true and *ms (at most
 * UINT32_MAX). */
bool elkfw_cli_duration(const char *s, uint32_t *ms);

/* The exit code for elkd's refusal: code (an ELK_E_ name) with its text (len bytes: a
 * timed-out wait names its last round's cause there, and that cause decides). held: the
 * code for "held by another holder" (elk's -E). */
int elkfw_cli_exit_for(const char *code, const char *text, size_t len, int held);

/* A usage error: "elk: <text>" and "Try 'elk[ cmd] --help' for more information." on
 * stderr (cmd NULL: elk itself). Returns EXIT_USAGE. */
__attribute__((format(printf, 2, 3))) int elkfw_cli_usage_error(const char *cmd, const char *fmt,
                                                                ...);

/* The options of elk run and elk acquire. */
typedef struct elkfw_lock_opts {
    const char *sock_path; /* --socket, NULL: not given */
    const char *resource;
    uint32_t wait_ms;       /* -w/--wait; 0: one attempt */
    bool nonblock;          /* -n/--nonblock: one attempt, whatever -w says */
    int held_code;          /* -E/--conflict-exit-code; EXIT_NOT_ACQUIRED by default */
    const char *command;    /* -c/--command STRING (run), NULL: CMD after "--" */
    const char *on_suspect; /* run's hooks, NULL: none */
    const char *on_lost;
    uint32_t heartbeat_ms; /* 0: no heartbeat */
    uint32_t hook_timeout_ms;
} elkfw_lock_opts_t;

/* Parse argv (argv[0] is the command: "run" or "acquire") into o (defaults first: no wait,
 * held_code 73, hook_timeout default_hook_ms). run: run's own options and -c are taken too.
 * Returns the index of the first argument after RESOURCE (and after -c STRING), or -1 after
 * a usage error was said (elkfw_cli_usage_error). */
int elkfw_cli_lock_args(int argc, char **argv, bool run, uint32_t default_hook_ms,
                        elkfw_lock_opts_t *o);

#endif /* ELKFW_CLI_H */
