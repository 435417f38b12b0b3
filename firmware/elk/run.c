/* SPDX-License-Identifier: MIT */
/* elk run: a command driven under a lease (lease file, hooks, heartbeat, its process
 * group stopped before the lease can end). */
#include "elk.h"

int elk__make_signalfd(sigset_t *old)
{
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    /* tcsetpgrp from a background group (after handing the terminal to CMD) */
    sigaddset(&mask, SIGTTOU);
    sigprocmask(SIG_BLOCK, &mask, old);
    return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* The lease as the command sees it (format: elkfw/lease.h), replaced atomically (write
 * a temp file, rename) after the grant, every renewal and the loss (deadline 0). A
 * command, or `elk guard`, reads it before each step; ELK_DEADLINE_MS is only the
 * validity at start. */
typedef struct lease_file {
    char dir[256];
    char path[300];
    char tmp[300];
    bool made;
} lease_file_t;

static bool lease_file_create(lease_file_t *lf)
{
    const char *base = getenv("TMPDIR");
    if (base == NULL || base[0] == '\0') {
        base = "/tmp";
    }
    if ((size_t)snprintf(lf->dir, sizeof lf->dir, "%s/elk-run.XXXXXX", base) >= sizeof lf->dir ||
        mkdtemp(lf->dir) == NULL) {
        elkfw_say("cannot create a directory for the lease file under %s: %s (set TMPDIR)", base,
                  strerror(errno));
        return false;
    }
    snprintf(lf->path, sizeof lf->path, "%s/lease", lf->dir);
    snprintf(lf->tmp, sizeof lf->tmp, "%s/lease.tmp", lf->dir);
    lf->made = true;
    return true;
}

static bool lease_file_write(lease_file_t *lf, uint64_t token, uint64_t deadline)
{
    char line[ELKFW_LEASE_LINE_MAX];
    size_t n = elkfw_lease_format(line, sizeof line, token, deadline);
    int fd;
    bool ok;
    if (!lf->made || n == 0) {
        return false;
    }
    fd = open(lf->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        return false;
    }
    ok = write(fd, line, n) == (ssize_t)n;
    ok = close(fd) == 0 && ok;
    return ok && rename(lf->tmp, lf->path) == 0;
}

static void lease_file_remove(lease_file_t *lf)
{
    if (lf->made) {
        unlink(lf->tmp);
        unlink(lf->path);
        rmdir(lf->dir);
        lf->made = false;
    }
}

typedef enum run_stage { RUN_DRIVING, RUN_TERM_SENT, RUN_KILLED } run_stage_t;

/* elk run as a small supervisor: CMD drives while the lease holds; when the lease is
 * lost (or elkd goes away, or the deadline passes without word) CMD's process group
 * gets SIGTERM, and SIGKILL once the stop margin is over. */
typedef struct run_sup {
    agent_link_t *ak;
    const char *resource;
    const char *semaphore; /* the semaphore whose permit resource is, or NULL */
    lease_watch_t w;
    uint64_t token;
    uint32_t stop_margin;
    int sfd;
    pid_t child; /* CMD; also its process group id */
    int go_pipe; /* write end: CMD execs once elkd supervises its group */
    int tty;     /* terminal handed to CMD's group, -1 if none */
    bool conn_open, child_done;
    int status;
    run_stage_t stage;
    uint64_t kill_at;
    lease_file_t lf;
    const char *cmd_name;             /* CMD's argv[0], for messages */
    elkfw_hook_t on_suspect, on_lost; /* --on-suspect / --on-lost */
    elkfw_hb_t hb;                    /* --heartbeat */
    int hb_fd;                        /* the pipe's read end (-1: none, or closed at EOF) */
    int hb_wfd;                       /* its write end (closed here once CMD has it) */
    int hb_cmd_fd;                    /* that fd's number in CMD: ELK_HEARTBEAT_FD */
} run_sup_t;

static void run_signal_group(run_sup_t *rs, int sig)
{
    (void)kill(-rs->child, sig);
}

/* Start a hook for this lease; time_left_ms goes to ELK_TIME_LEFT_MS. */
static void run_hook(run_sup_t *rs, elkfw_hook_t *h, uint64_t time_left_ms, uint64_t now)
{
    elkfw_hook_lease_t hl = {rs->resource, rs->token, time_left_ms};
    (void)elkfw_hook_start(h, &hl, now);
}

/* Tell CMD (the whole group) to stop; SIGKILL follows at kill_at. The --on-lost hook goes
 * first: it is the early safe-position step, and the command may take the whole margin. */
static void run_stop(run_sup_t *rs, uint64_t now, const char *why, uint32_t margin)
{
    if (rs->stage != RUN_DRIVING) {
        return;
    }
    /* Time left: what LOST says remains before another holder may get the resource; while
     * the lease still holds (heartbeat missed), its validity; 0 when nothing is known. */
    run_hook(rs, &rs->on_lost,
             rs->w.lost ? rs->w.margin : (rs->w.deadline > now ? rs->w.deadline - now : 0), now);
    elkfw_say("%s: %s; sending SIGTERM to the command (SIGKILL in %" PRIu32 " ms)", rs->resource,
              why, margin);
    rs->w.stopped_already = true;
    (void)lease_file_write(&rs->lf, rs->token, 0);
    run_signal_group(rs, SIGTERM);
    rs->stage = RUN_TERM_SENT;
    rs->kill_at = now + margin;
}

/* No heartbeat within the interval: the command is taken for hung. No more KEEPALIVEs
 * (elkd stops renewing on its own a moment later), stop it, release once it is gone. */
static void run_heartbeat_missed(run_sup_t *rs, uint64_t now)
{
    char why[256];
    uint32_t grace =
        rs->stop_margin > ELKFW_SUP_KILL_GRACE_MS ? rs->stop_margin : ELKFW_SUP_KILL_GRACE_MS;
    snprintf(why, sizeof why, "heartbeat missed: %s wrote nothing to fd %d for %" PRIu32 " ms%s",
             rs->cmd_name, rs->hb_cmd_fd, rs->hb.interval_ms,
             rs->hb.eof ? " (it closed the pipe: no heartbeat could come any more)" : "");
    run_stop(rs, now, why, grace);
}

/* The heartbeat pipe is readable: every read with data is a beat; EOF closes it (not a
 * miss by itself, but no beat can come any more). */
static void run_heartbeat_read(run_sup_t *rs, uint64_t now)
{
    char buf[256];
    ssize_t n;
    while ((n = read(rs->hb_fd, buf, sizeof buf)) > 0) {
        elkfw_hb_beat(&rs->hb, now);
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(rs->hb_fd);
        rs->hb_fd = -1;
        rs->hb.eof = true;
    }
}

/* What runs beside the lease handling: the --on-suspect hook on a new SUSPECT, the
 * KEEPALIVEs the heartbeat asks for, the hooks' timeouts. Returns the earlier of wake and
 * when it must run again. */
static uint64_t run_step_extras(run_sup_t *rs, uint64_t now, uint64_t wake)
{
    if (rs->w.suspect_new) {
        rs->w.suspect_new = false;
        if (rs->stage == RUN_DRIVING && !rs->w.lost) {
            run_hook(rs, &rs->on_suspect, rs->w.deadline > now ? rs->w.deadline - now : 0, now);
        }
    }
    if (rs->stage == RUN_DRIVING && !rs->w.lost && rs->conn_open &&
        elkfw_hb_keepalive_due(&rs->hb, now) &&
        elk__lease_send_each(rs->ak, &rs->w, "KEEPALIVE", "") != 0) {
        rs->conn_open = false;
        rs->w.lost = true;
        rs->w.why = "lost the connection to elkd; the lease can no longer be trusted";
        wake = now; /* stop the command at once, not at the next timeout */
    }
    if (rs->stage == RUN_DRIVING && elkfw_hb_next(&rs->hb) < wake) {
        wake = elkfw_hb_next(&rs->hb);
    }
    elkfw_hook_step(&rs->on_suspect, now, &wake);
    elkfw_hook_step(&rs->on_lost, now, &wake);
    return wake;
}

/* One step by the clock and by what elkd said. Returns the next time to step. */
static uint64_t run_step(run_sup_t *rs, uint64_t now)
{
    agent_link_t *ak = rs->ak;
    uint64_t old_deadline = rs->w.deadline;
    elk__watch_lines(ak, &rs->w);
    if (rs->stage == RUN_DRIVING && !rs->w.lost && rs->conn_open && now >= rs->w.deadline) {
        /* A RENEWED may be waiting in the socket: take it in before giving up. */
        if (elk__agent_fill_now(ak) <= 0) {
            rs->conn_open = false;
            rs->w.lost = true;
            rs->w.why = "lost the connection to elkd; the lease can no longer be trusted";
        }
        elk__watch_lines(ak, &rs->w);
        now = elk__now_ms();
    }
    if (rs->w.deadline != old_deadline && !rs->w.lost) {
        (void)lease_file_write(&rs->lf, rs->token, rs->w.deadline);
    }
    if (rs->w.lost) {
        run_stop(rs, now, rs->w.why, rs->w.margin ? rs->w.margin : rs->stop_margin);
    } else if (now >= rs->w.deadline) {
        /* Belt and braces: if elkd hangs, our own copy of the deadline still stops CMD. */
        run_stop(rs, now, "lease deadline passed without word from elkd", rs->stop_margin);
    } else if (rs->stage == RUN_DRIVING && elkfw_hb_check_missed(&rs->hb, now)) {
        run_heartbeat_missed(rs, now);
    }
    if (rs->stage == RUN_TERM_SENT && now >= rs->kill_at) {
        elkfw_say("%s: stop margin over; killing the command", rs->resource);
        run_signal_group(rs, SIGKILL);
        rs->stage = RUN_KILLED;
    }
    return run_step_extras(rs, now,
                           rs->stage == RUN_DRIVING         ? rs->w.deadline
                               : rs->stage == RUN_TERM_SENT ? rs->kill_at
                                                            : UINT64_MAX);
}

static void run_on_signals(run_sup_t *rs)
{
    struct signalfd_siginfo si;
    while (read(rs->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGCHLD) {
            if (!rs->child_done && waitpid(rs->child, &rs->status, WNOHANG) == rs->child) {
                rs->child_done = true;
            }
            (void)elkfw_hook_reap(&rs->on_suspect);
            (void)elkfw_hook_reap(&rs->on_lost);
        } else if (si.ssi_signo != SIGTTOU) {
            /* Pass SIGINT/SIGTERM/SIGHUP on; we release when CMD has exited. */
            run_signal_group(rs, (int)si.ssi_signo);
        }
    }
}

/* CMD in a process group of its own, so one signal reaches everything it starts, and
 * with the kernel's parent-death signal, so it dies with elk run. It execs only once
 * the parent writes to the go pipe, i.e. once elkd knows the group and can stop it. */
/* A set's environment: ELK_RESOURCES "a,b" (as granted) and ELK_TOKENS "a=12,b=40" (each
 * lease's own token, for each actuator's guard); no ELK_RESOURCE / ELK_FENCE_TOKEN, which
 * would name one of them as if it were the only one. */
static void run_set_env(const lease_watch_t *w)
{
    char tokens[ELK_SET_MAX * (ELKFW_NAME_MAX + 24)];
    size_t k, len = 0;
    tokens[0] = '\0';
    for (k = 0; k < w->n_set; k++) {
        int n = snprintf(tokens + len, sizeof tokens - len, "%s%s=%" PRIu64, k ? "," : "",
                         w->set[k], w->set_token[k]);
        len += n > 0 ? (size_t)n : 0u;
    }
    setenv("ELK_RESOURCES", w->resource, 1);
    setenv("ELK_TOKENS", tokens, 1);
}

static pid_t run_fork(run_sup_t *rs, char **cmd, const sigset_t *old)
{
    int go[2];
    pid_t parent = getpid(), child;
    char tokbuf[32], dlbuf[32];
    if (pipe2(go, O_CLOEXEC) != 0) {
        elkfw_say("pipe: %s", strerror(errno));
        return -1;
    }
    snprintf(tokbuf, sizeof tokbuf, "%" PRIu64, rs->token);
    snprintf(dlbuf, sizeof dlbuf, "%" PRIu64,
             rs->w.deadline > elk__now_ms() ? rs->w.deadline - elk__now_ms() : 0);
    child = fork();
    if (child < 0) {
        elkfw_say("fork: %s", strerror(errno));
        close(go[0]);
        close(go[1]);
        return -1;
    }
    if (child == 0) {
        char b;
        close(go[1]);
        setpgid(0, 0);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
            _exit(EXIT_LOST); /* elk run is already gone */
        }
        if (read(go[0], &b, 1) != 1) {
            _exit(EXIT_LOST); /* elk run gave up (or died) before the command could start */
        }
        sigprocmask(SIG_SETMASK, old, NULL);
        signal(SIGPIPE, SIG_DFL);
        if (rs->w.n_set == 0) {
            setenv("ELK_RESOURCE", rs->resource, 1);
            setenv("ELK_FENCE_TOKEN", tokbuf, 1);
        } else {
            run_set_env(&rs->w);
        }
        if (rs->semaphore != NULL) {
            setenv("ELK_SEMAPHORE", rs->semaphore, 1);
            setenv("ELK_PERMIT", rs->resource + strlen(rs->semaphore) + 1u, 1);
        }
        setenv("ELK_DEADLINE_MS", dlbuf, 1);
        setenv("ELK_LEASE_FILE", rs->lf.path, 1);
        if (rs->hb_wfd >= 0) {
            /* the write end only, and only to CMD: elk's other children get neither */
            char fdbuf[16];
            close(rs->hb_fd);
            if (fcntl(rs->hb_wfd, F_SETFD, 0) != 0) {
                _exit(EXIT_NOEXEC);
            }
            snprintf(fdbuf, sizeof fdbuf, "%d", rs->hb_wfd);
            setenv("ELK_HEARTBEAT_FD", fdbuf, 1);
        }
        execvp(cmd[0], cmd);
        fprintf(stderr, "elk: cannot run '%s': %s\n", cmd[0], strerror(errno));
        _exit(errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
    }
    close(go[0]);
    if (rs->hb_wfd >= 0) {
        /* only CMD's group may hold the write end: its EOF then means CMD closed it */
        rs->hb_cmd_fd = rs->hb_wfd;
        close(rs->hb_wfd);
        rs->hb_wfd = -1;
    }
    setpgid(child, child);
    rs->go_pipe = go[1];
    rs->child = child;
    /* Interactive: CMD's group takes the terminal, as a shell's job would. */
    if (isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp() &&
        tcsetpgrp(STDIN_FILENO, child) == 0) {
        rs->tty = STDIN_FILENO;
    }
    return child;
}

/* Next reply (OK/ERR) to a request; events on the way update the watch. Returns 1 with
 * the reply in *m, 0 if the connection closed. */
static int run_reply(run_sup_t *rs, elkfw_ctl_msg_t *m)
{
    agent_link_t *ak = rs->ak;
    for (;;) {
        const char *line;
        size_t len;
        int rc = elk__agent_line(ak, &line, &len);
        if (rc <= 0) {
            return 0;
        }
        if (elkfw_ctl_parse_reply(line, len, m) != ELK_OK) {
            continue;
        }
        if (m->kind != ELKFW_MSG_EVENT) {
            return 1;
        }
        elk__watch_msg(&rs->w, m);
    }
}

/* Ask elkd to supervise CMD's group, then let CMD exec. Returns 0, or elk's exit code
 * when CMD never ran: a command elkd cannot stop must not drive under a lease. */
static int run_hand_over(run_sup_t *rs)
{
    agent_link_t *ak = rs->ak;
    elkfw_ctl_msg_t m;
    char tail[24];
    size_t k, leases = rs->w.n_set != 0 ? rs->w.n_set : 1u;
    bool sent;
    snprintf(tail, sizeof tail, " %ld", (long)rs->child);
    /* one SUPERVISE a lease: elkd stops the group at the loss of any of a set */
    sent = elk__lease_send_each(ak, &rs->w, "SUPERVISE", tail) == 0;
    for (k = 0; k < leases; k++) {
        if (!sent || run_reply(rs, &m) == 0) {
            elkfw_say(
                "%s: lost the connection to elkd before the command could start; not starting it",
                rs->resource);
            return rs->w.lost ? EXIT_LOST : EXIT_FAIL;
        }
        if (m.kind == ELKFW_MSG_ERR) {
            elkfw_say("%s: elkd refused to supervise the command: %.*s [%s]; not starting it",
                      rs->resource, (int)m.text_len, m.text, m.code);
            return elkfw_err_from_name(m.code) == ELK_E_SUPERVISE_DENIED ? EXIT_NOPERM : EXIT_FAIL;
        }
    }
    if (rs->w.lost || elk__now_ms() >= rs->w.deadline) {
        elkfw_say("%s: %s before the command could start; not starting it", rs->resource,
                  rs->w.lost ? rs->w.why : "the lease deadline passed");
        return rs->w.lost ? EXIT_LOST : EXIT_FAIL;
    }
    if (write(rs->go_pipe, "g", 1) != 1) {
        elkfw_say("%s: cannot start the command: %s", rs->resource, strerror(errno));
        return EXIT_FAIL;
    }
    close(rs->go_pipe);
    rs->go_pipe = -1;
    return 0;
}

/* CMD has exited: what it started in its group must not outlive the lease either.
 * Stop what is left (SIGTERM, SIGKILL after the stop margin) and wait for it. Returns
 * false if the group could not be confirmed gone: then the lease must not be released
 * by us; elkd, which knows the group, stops it or lets the lease run out. */
static bool run_reap_group(run_sup_t *rs)
{
    uint64_t kill_at, give_up;
    if (!elkfw_sup_group_alive(rs->child)) {
        return true;
    }
    elkfw_say("%s: the command exited but left processes in its group %ld; stopping them before "
              "releasing",
              rs->resource, (long)rs->child);
    run_signal_group(rs, SIGTERM);
    kill_at = elk__now_ms() + rs->stop_margin;
    give_up = kill_at + ELKFW_SUP_KILL_GRACE_MS;
    while (elkfw_sup_group_alive(rs->child)) {
        uint64_t now = elk__now_ms();
        uint64_t next = kill_at != 0 && kill_at < give_up ? kill_at : give_up;
        if (now >= give_up) {
            elkfw_say(
                "%s: process group %ld is still there after SIGKILL; leaving the lease to run out",
                rs->resource, (long)rs->child);
            return false;
        }
        if (kill_at != 0 && now >= kill_at) {
            run_signal_group(rs, SIGKILL);
            kill_at = 0;
            continue;
        }
        /* until a member ends (its pidfd), or SIGKILL's time, or giving up */
        (void)elkfw_sup_group_wait(rs->child, (int)(next - now));
    }
    return true;
}

static void run_supervise(run_sup_t *rs)
{
    agent_link_t *ak = rs->ak;
    while (!rs->child_done) {
        struct pollfd p[3] = {{rs->sfd, POLLIN, 0},
                              {rs->conn_open ? ak->fd : -1, POLLIN, 0},
                              {rs->stage == RUN_DRIVING ? rs->hb_fd : -1, POLLIN, 0}};
        uint64_t now = elk__now_ms();
        uint64_t wake = run_step(rs, now);
        int timeout = wake == UINT64_MAX
            ? -1
            : (wake <= now ? 0 : (int)(wake - now > 60000 ? 60000 : wake - now));
        if (poll(p, 3, timeout) < 0 && errno != EINTR) {
            break;
        }
        if (p[0].revents & POLLIN) {
            run_on_signals(rs);
        }
        if (p[2].revents) {
            run_heartbeat_read(rs, elk__now_ms());
        }
        if (rs->conn_open && p[1].revents) {
            if (elk__agent_fill_now(ak) <= 0) {
                rs->conn_open = false;
                if (!rs->w.lost) {
                    rs->w.lost = true;
                    rs->w.why = "lost the connection to elkd; the lease can no longer be trusted";
                }
            }
        }
    }
    /* A LOST that came with CMD's exit still counts (elkd may have stopped CMD for it). */
    if (rs->conn_open && elk__agent_fill_now(ak) <= 0) {
        rs->conn_open = false;
    }
    (void)run_step(rs, elk__now_ms());
}

/* We stopped CMD on our own copy of the deadline, a moment before elkd's LOST (same
 * deadline, same clock) could say why. CMD is gone; wait a little for that word so the
 * person reading this gets the cause, not only "deadline passed" (elkd's log has it in
 * any case). Briefly: whoever waits for this exit (a shell, a supervisor) must not be
 * kept long by an elkd that is paused. */
static void run_wait_cause(run_sup_t *rs)
{
    agent_link_t *ak = rs->ak;
    uint64_t until = elk__now_ms() + 50u;
    while (rs->conn_open && !rs->w.lost && elk__now_ms() < until) {
        struct pollfd p = {ak->fd, POLLIN, 0};
        if (poll(&p, 1, (int)(until - elk__now_ms())) <= 0) {
            break;
        }
        if (elk__agent_fill_now(ak) <= 0) {
            rs->conn_open = false;
        }
        elk__watch_lines(ak, &rs->w);
    }
}

static int run_exit_code(const run_sup_t *rs)
{
    if (rs->w.lost || rs->stage != RUN_DRIVING) {
        return EXIT_LOST;
    }
    if (WIFEXITED(rs->status)) {
        return WEXITSTATUS(rs->status);
    }
    if (WIFSIGNALED(rs->status)) {
        return 128 + WTERMSIG(rs->status);
    }
    return EXIT_FAIL;
}

/* What the grant and the lines behind it say: is the lease still usable now? */
bool elk__lease_usable(agent_link_t *ak, lease_watch_t *w, const elkfw_ctl_msg_t *grant,
                       bool *conn_open)
{
    w->deadline = elk__lease_deadline(grant, elk__now_ms());
    /* Whatever elkd wrote after the grant may already say the lease is gone (this process
     * may have been stopped or slow while it sat in the socket): read it all first. */
    if (elk__agent_fill_now(ak) <= 0) {
        w->lost = true;
        w->why = "lost the connection to elkd";
        *conn_open = false;
    }
    elk__watch_lines(ak, w);
    return !w->lost && elk__now_ms() < w->deadline;
}

/* elk run's arguments into o, and the command into *cmd: CMD after "--", or sh (filled
 * here) for -c STRING. Returns false when they are wrong (said in one line). */
static bool run_args(agent_link_t *ak, int argc, char **argv, elkfw_lock_opts_t *o, char **sh,
                     char ***cmd)
{
    int next = elkfw_cli_lock_args(argc, argv, true, ELKFW_HOOK_TIMEOUT_MS, o);
    if (next < 0) {
        return false;
    }
    ak->sock_path = o->sock_path != NULL ? o->sock_path : ak->sock_path;
    ak->held_code = o->held_code;
    if (o->command != NULL && next < argc) {
        elkfw_cli_usage_error("run",
                              "give the command either with -c STRING or after '--', not "
                              "both (got '%s' after it)",
                              argv[next]);
        return false;
    }
    if (o->command == NULL && (next >= argc || strcmp(argv[next], "--") != 0 || next + 1 >= argc)) {
        elkfw_cli_usage_error("run",
                              "missing the command: RESOURCE -- CMD [ARGS...], or RESOURCE "
                              "-c 'SHELL COMMAND'");
        return false;
    }
    if (strchr(o->resource, ',') == NULL && !elk__resource_ok(o->resource)) {
        return false; /* a list "a,b" is checked name by name (elk__set_parse) */
    }
    if (o->command != NULL) {
        /* as flock -c: the string goes to the shell */
        sh[0] = (char *)"/bin/sh";
        sh[1] = (char *)"-c";
        sh[2] = (char *)o->command;
        sh[3] = NULL;
        *cmd = sh;
    } else {
        *cmd = &argv[next + 1];
    }
    return true;
}

/* Before the lease goes (released, or left to elkd) and before elk exits (its hooks die
 * with it): a hook still running may be driving the actuator to its safe position, and
 * nobody else may drive meanwhile. Wait for it, bounded by its timeout, still reading
 * elkd's events. */
static void run_wait_hooks(run_sup_t *rs)
{
    while (elkfw_hook_running(&rs->on_suspect) || elkfw_hook_running(&rs->on_lost)) {
        struct pollfd p[2] = {{rs->sfd, POLLIN, 0}, {rs->conn_open ? rs->ak->fd : -1, POLLIN, 0}};
        uint64_t now = elk__now_ms(), wake = UINT64_MAX;
        elkfw_hook_step(&rs->on_suspect, now, &wake);
        elkfw_hook_step(&rs->on_lost, now, &wake);
        if (poll(p, 2, wake <= now ? 0 : (int)(wake - now)) < 0 && errno != EINTR) {
            return;
        }
        if (p[0].revents & POLLIN) {
            run_on_signals(rs);
        }
        if (rs->conn_open && p[1].revents) {
            rs->conn_open = elk__agent_fill_now(rs->ak) > 0;
            elk__watch_lines(rs->ak, &rs->w);
        }
    }
}

/* --heartbeat: the pipe CMD writes its heartbeats to. Both ends close-on-exec; CMD's
 * child side clears it on the write end only. */
static bool run_heartbeat_pipe(run_sup_t *rs)
{
    int hb[2];
    if (rs->hb.interval_ms == 0) {
        return true;
    }
    if (pipe2(hb, O_CLOEXEC) != 0 || fcntl(hb[0], F_SETFL, O_NONBLOCK) != 0) {
        elkfw_say("cannot make the heartbeat pipe: %s", strerror(errno));
        return false;
    }
    rs->hb_fd = hb[0];
    rs->hb_wfd = hb[1];
    return true;
}

/* With the lease granted: start cmd, drive it, stop it, release; elk run's exit code. */
static int run_command(run_sup_t *rs, char **cmd, const sigset_t *old)
{
    agent_link_t *ak = rs->ak;
    bool released_ok;
    int rc;
    if (!lease_file_create(&rs->lf) || !lease_file_write(&rs->lf, rs->token, rs->w.deadline) ||
        !run_heartbeat_pipe(rs) || run_fork(rs, cmd, old) < 0) {
        lease_file_remove(&rs->lf);
        elk__lease_release(ak, &rs->w);
        return EXIT_FAIL;
    }
    if ((rc = run_hand_over(rs)) != 0) {
        /* CMD never ran: closing the pipe ends the child, which is gone before we release. */
        close(rs->go_pipe);
        waitpid(rs->child, NULL, 0);
        lease_file_remove(&rs->lf);
        if (rs->conn_open && !rs->w.lost) {
            elk__lease_release(ak, &rs->w);
        }
        return rc;
    }
    /* CMD starts now: that counts as its first beat */
    elkfw_hb_start(&rs->hb, rs->hb.interval_ms, elk__now_ms());
    run_supervise(rs);
    if (rs->stage != RUN_DRIVING && !rs->hb.missed) {
        run_wait_cause(rs);
    }
    if (rs->tty >= 0) {
        (void)tcsetpgrp(rs->tty, getpgrp());
    }
    released_ok = run_reap_group(rs);
    run_wait_hooks(rs);
    lease_file_remove(&rs->lf);
    /* After a missed heartbeat the lease is still ours: CMD is gone, so give it back at once
     * rather than let it run out. */
    if (rs->conn_open && !rs->w.lost && (rs->stage == RUN_DRIVING || rs->hb.missed) &&
        released_ok) {
        elk__lease_release(ak, &rs->w);
    }
    return run_exit_code(rs);
}

/* elk run a,b -- CMD: every lease of the set taken (canonical order, all or nothing),
 * then CMD runs while all of them hold; its deadline is the earliest. */
static int run_set(run_sup_t *rs, const elkfw_lock_opts_t *ro, char **cmd, const sigset_t *old)
{
    static char asked[ELK_SET_MAX][ELKFW_NAME_MAX];
    static char joined[ELK_SET_MAX * ELKFW_NAME_MAX];
    size_t n, k, len = 0;
    int rc = elk__set_parse(rs->resource, asked, &n);
    if (rc != EXIT_OK) {
        return rc;
    }
    rc = elk__set_acquire(rs->ak, &rs->w, asked, n, ro->wait_ms, ro->heartbeat_ms, rs->sfd);
    if (rc != EXIT_OK) {
        return rc;
    }
    for (k = 0; k < rs->w.n_set; k++) {
        int w = snprintf(joined + len, sizeof joined - len, "%s%s", k ? "," : "", rs->w.set[k]);
        len += w > 0 ? (size_t)w : 0u;
    }
    rs->resource = joined;
    rs->w.resource = joined;
    rs->token = rs->w.set_token[0]; /* the lease file's: ELK_TOKENS has each */
    rs->stop_margin = rs->w.set_stop_margin;
    rs->w.deadline = rs->w.set_deadline[0];
    for (k = 1; k < rs->w.n_set; k++) {
        rs->w.deadline =
            rs->w.set_deadline[k] < rs->w.deadline ? rs->w.set_deadline[k] : rs->w.deadline;
    }
    if (elk__agent_fill_now(rs->ak) <= 0) {
        rs->w.lost = true;
        rs->w.why = "lost the connection to elkd";
        rs->conn_open = false;
    }
    elk__watch_lines(rs->ak, &rs->w);
    if (rs->w.lost || elk__now_ms() >= rs->w.deadline) {
        elkfw_say("%s: %s before the command could start; not starting it", rs->resource,
                  rs->w.lost ? rs->w.why : "the earliest lease deadline passed");
        if (rs->conn_open && !rs->w.lost) {
            elk__lease_release(rs->ak, &rs->w);
        }
        return EXIT_LOST;
    }
    return run_command(rs, cmd, old);
}

int elk__cmd_run(agent_link_t *ak, int argc, char **argv)
{
    elkfw_ctl_msg_t m;
    sigset_t old;
    run_sup_t rs;
    elkfw_lock_opts_t ro;
    char *sh[4], **cmd;
    int rc;

    memset(&rs, 0, sizeof rs);
    rs.ak = ak;
    rs.go_pipe = -1;
    rs.tty = -1;
    rs.hb_fd = rs.hb_wfd = -1;
    rs.conn_open = true;
    if (!run_args(ak, argc, argv, &ro, sh, &cmd)) {
        return EXIT_USAGE;
    }
    rs.resource = ro.resource;
    rs.cmd_name = ro.command != NULL ? "sh -c" : cmd[0];
    elkfw_hook_init(&rs.on_suspect, "suspect", ro.on_suspect, ro.hook_timeout_ms);
    elkfw_hook_init(&rs.on_lost, "lost", ro.on_lost, ro.hook_timeout_ms);
    elkfw_hb_start(&rs.hb, ro.heartbeat_ms, elk__now_ms());
    rs.sfd = elk__make_signalfd(&old);
    if (elk__agent_connect(ak) < 0) {
        return EXIT_UNREACHABLE;
    }
    if (strchr(rs.resource, ',') != NULL) {
        return run_set(&rs, &ro, cmd, &old);
    }
    rc = elk__acquire_lease(ak, rs.resource, ro.wait_ms, ro.heartbeat_ms, rs.sfd, &m);
    if (rc != EXIT_OK) {
        return rc;
    }
    if (strcmp(m.resource, rs.resource) != 0) {
        /* a semaphore's permit: the lease, its events, its token and its guard are the
         * permit's ("pumps#2"); ELK_SEMAPHORE and ELK_PERMIT tell the command */
        static char permit[ELKFW_NAME_MAX];
        snprintf(permit, sizeof permit, "%s", m.resource);
        rs.semaphore = rs.resource;
        rs.resource = permit;
    }
    rs.w.resource = rs.resource;
    rs.token = m.token;
    rs.stop_margin = m.stop_margin_ms;
    if (!elk__lease_usable(ak, &rs.w, &m, &rs.conn_open)) {
        elkfw_say("%s: %s before the command could start (token %" PRIu64
                  " is stale); not starting it",
                  rs.resource, rs.w.lost ? rs.w.why : "the lease deadline passed", m.token);
        if (rs.conn_open && !rs.w.lost) {
            elk__lease_release(ak, &rs.w);
        }
        return EXIT_LOST;
    }
    return run_command(&rs, cmd, &old);
}
