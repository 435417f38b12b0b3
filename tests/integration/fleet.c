/* SPDX-License-Identifier: MIT */
/*
 * Real redis-server fleet for integration tests. See fleet.h for the contract.
 * Test code (C11, POSIX): it may fork, sleep and allocate; lib/ rules do not apply.
 */
#define _GNU_SOURCE
#include "fleet.h"
#include "redis_proc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef ELK_TF_GEN_CERTS
#error "ELK_TF_GEN_CERTS (path of gen-certs.sh) must be defined by the build"
#endif

#define MAX_LISTENERS 8

/* Process-wide bookkeeping so atexit and signal handlers can reach every child. */
static elk_tf_t *g_fleets[ELK_TF_MAX_FLEETS];
static elk_tf_listener_t *g_listeners[MAX_LISTENERS];
static elk_tf_certs_t g_certs;
static int g_certs_state; /* 0 not yet, 1 ok, -1 failed */
static int g_hooks_installed;
static pid_t g_owner_pid;

static bool keep_dirs(void)
{
    const char *k = getenv("ELK_TF_KEEP");
    return k != NULL && k[0] != '\0' && k[0] != '0';
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    (void)remove(path);
    return 0;
}

static void rm_tree(const char *dir)
{
    if (dir[0] == '\0' || keep_dirs()) {
        if (dir[0] != '\0') {
            fprintf(stderr, "fleet: keeping %s (ELK_TF_KEEP)\n", dir);
        }
        return;
    }
    (void)nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Async-signal-safe: only kill(). */
static void kill_all_children(void)
{
    for (size_t f = 0; f < ELK_TF_MAX_FLEETS; f++) {
        elk_tf_t *fl = g_fleets[f];
        if (fl == NULL) {
            continue;
        }
        for (size_t i = 0; i < fl->count; i++) {
            if (fl->servers[i].pid > 0) {
                kill(fl->servers[i].pid, SIGKILL);
            }
        }
    }
    for (size_t l = 0; l < MAX_LISTENERS; l++) {
        if (g_listeners[l] != NULL && g_listeners[l]->pid > 0) {
            kill(g_listeners[l]->pid, SIGKILL);
        }
    }
}

static void on_fatal_signal(int sig)
{
    if (getpid() == g_owner_pid) {
        kill_all_children();
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void at_exit_cleanup(void)
{
    if (getpid() != g_owner_pid) {
        return; /* a forked child that fell through must not tear down the parent's fleet */
    }
    for (size_t f = 0; f < ELK_TF_MAX_FLEETS; f++) {
        if (g_fleets[f] != NULL) {
            elk_tf_stop(g_fleets[f]);
        }
    }
    for (size_t l = 0; l < MAX_LISTENERS; l++) {
        if (g_listeners[l] != NULL) {
            elk_tf_listener_stop(g_listeners[l]);
        }
    }
    if (g_certs_state == 1) {
        rm_tree(g_certs.dir);
    }
}

static void install_hooks(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT};
    if (g_hooks_installed) {
        return;
    }
    g_hooks_installed = 1;
    g_owner_pid = getpid();
    atexit(at_exit_cleanup);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
    /* A test writing to a killed server must see EPIPE, not die (elkd ignores it too). */
    signal(SIGPIPE, SIG_IGN);
}

static void registry_add(elk_tf_t *f)
{
    for (size_t i = 0; i < ELK_TF_MAX_FLEETS; i++) {
        if (g_fleets[i] == f) {
            return;
        }
    }
    for (size_t i = 0; i < ELK_TF_MAX_FLEETS; i++) {
        if (g_fleets[i] == NULL) {
            g_fleets[i] = f;
            return;
        }
    }
}

static void registry_remove(elk_tf_t *f)
{
    for (size_t i = 0; i < ELK_TF_MAX_FLEETS; i++) {
        if (g_fleets[i] == f) {
            g_fleets[i] = NULL;
        }
    }
}

static int registry_has_room(const elk_tf_t *f)
{
    for (size_t i = 0; i < ELK_TF_MAX_FLEETS; i++) {
        if (g_fleets[i] == NULL || g_fleets[i] == f) {
            return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ certificates */

static void cert_path(char *out, const char *name)
{
    snprintf(out, ELK_TF_PATH_MAX, "%s/%s", g_certs.dir, name);
}

const elk_tf_certs_t *elk_tf_certs(void)
{
    if (g_certs_state == 1) {
        return &g_certs;
    }
    if (g_certs_state == -1) {
        return NULL;
    }
    install_hooks();
    snprintf(g_certs.dir, sizeof g_certs.dir, "/tmp/elk-certs-XXXXXX");
    if (mkdtemp(g_certs.dir) == NULL) {
        fprintf(stderr, "fleet: mkdtemp for certificates failed: %s\n", strerror(errno));
        g_certs_state = -1;
        return NULL;
    }
    char cmd[2 * ELK_TF_PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "/bin/sh '%s' '%s' >/dev/null", ELK_TF_GEN_CERTS, g_certs.dir);
    int rc = system(cmd);
    if (rc != 0) {
        fprintf(stderr, "fleet: %s failed (status %d): is openssl installed?\n", ELK_TF_GEN_CERTS,
                rc);
        rm_tree(g_certs.dir);
        g_certs_state = -1;
        return NULL;
    }
    cert_path(g_certs.ca_crt, "ca.crt");
    cert_path(g_certs.server_crt, "server.crt");
    cert_path(g_certs.server_key, "server.key");
    cert_path(g_certs.wronghost_crt, "wronghost.crt");
    cert_path(g_certs.wronghost_key, "wronghost.key");
    cert_path(g_certs.expired_crt, "expired.crt");
    cert_path(g_certs.expired_key, "expired.key");
    cert_path(g_certs.other_ca_crt, "other-ca.crt");
    cert_path(g_certs.othersrv_crt, "othersrv.crt");
    cert_path(g_certs.othersrv_key, "othersrv.key");
    cert_path(g_certs.client_crt, "client.crt");
    cert_path(g_certs.client_key, "client.key");
    cert_path(g_certs.other_client_crt, "other-client.crt");
    cert_path(g_certs.other_client_key, "other-client.key");
    g_certs_state = 1;
    return &g_certs;
}

int elk_tf_read_file(const char *path, uint8_t *buf, size_t cap, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL || cap == 0) {
        fprintf(stderr, "fleet: cannot read %s: %s\n", path, strerror(errno));
        if (fp != NULL) {
            fclose(fp);
        }
        return -1;
    }
    size_t n = fread(buf, 1, cap - 1, fp);
    int too_big = !feof(fp);
    fclose(fp);
    if (too_big) {
        fprintf(stderr, "fleet: %s does not fit %zu bytes\n", path, cap);
        return -1;
    }
    buf[n] = '\0';
    if (len != NULL) {
        *len = n;
    }
    return 0;
}

/* ------------------------------------------------------------ ports */

uint16_t elk_tf_free_port(void)
{
    return elk_rp_free_port();
}

/* ------------------------------------------------------------ servers */

void elk_tf_options_defaults(elk_tf_options_t *o)
{
    memset(o, 0, sizeof *o);
    o->count = 1;
    o->server_cert = ELK_TF_CERT_VALID;
    o->start_timeout_ms = 10000;
}

static void print_log_tail(const elk_tf_server_t *s)
{
    FILE *fp = fopen(s->log, "r");
    if (fp == NULL) {
        return;
    }
    char lines[12][256];
    size_t n = 0;
    while (fgets(lines[n % 12], sizeof lines[0], fp) != NULL) {
        n++;
    }
    fclose(fp);
    fprintf(stderr, "fleet: last lines of %s:\n", s->log);
    for (size_t i = n > 12 ? n - 12 : 0; i < n; i++) {
        fprintf(stderr, "  | %s", lines[i % 12]);
    }
}

static bool log_says_in_use(const elk_tf_server_t *s)
{
    FILE *fp = fopen(s->log, "r");
    if (fp == NULL) {
        return false;
    }
    char line[512];
    bool found = false;
    while (fgets(line, sizeof line, fp) != NULL) {
        if (strstr(line, "Address already in use") != NULL) {
            found = true;
        }
    }
    fclose(fp);
    return found;
}

static void cert_files(elk_tf_cert_t which, const char **crt, const char **key)
{
    const elk_tf_certs_t *c = &g_certs;
    switch (which) {
    case ELK_TF_CERT_WRONG_HOST:
        *crt = c->wronghost_crt;
        *key = c->wronghost_key;
        break;
    case ELK_TF_CERT_EXPIRED:
        *crt = c->expired_crt;
        *key = c->expired_key;
        break;
    case ELK_TF_CERT_OTHER_CA:
        *crt = c->othersrv_crt;
        *key = c->othersrv_key;
        break;
    case ELK_TF_CERT_VALID:
    default:
        *crt = c->server_crt;
        *key = c->server_key;
        break;
    }
}

static void close_ctl(elk_tf_server_t *s)
{
    if (s->ctl != NULL) {
        redisFree(s->ctl);
        s->ctl = NULL;
    }
}

static void reap(elk_tf_server_t *s, unsigned grace_ms)
{
    if (s->pid <= 0) {
        return;
    }
    (void)elk_rp_stop(s->pid, grace_ms);
    s->paused = false;
    s->pid = 0;
}

static pid_t spawn(elk_tf_t *f, size_t i)
{
    elk_tf_server_t *s = &f->servers[i];
    const elk_tf_options_t *o = &f->opts;
    char sdir[ELK_TF_PATH_MAX];
    snprintf(sdir, sizeof sdir, "%s/s%zu", f->dir, i);
    mkdir(sdir, 0700);
    elk_rp_opts_t ro = {
        .port = s->port,
        .tls = o->tls,
        .tls_ca = g_certs.ca_crt,
        .tls_auth_clients = o->tls_auth_clients,
        .unixsocket = s->sock,
        .dir = sdir,
        .log_path = s->log,
        .requirepass = o->requirepass,
        .acl_user = o->acl_user,
        .acl_password = o->acl_password,
        .acl_rules = o->acl_rules,
        .extra_args = o->extra_args,
    };
    if (o->tls) {
        cert_files(o->server_cert, &ro.tls_cert, &ro.tls_key);
    }
    return elk_rp_spawn(&ro);
}

static bool auth_ctl(const elk_tf_t *f, redisContext *c)
{
    redisReply *r = NULL;
    if (f->opts.acl_user != NULL && f->opts.acl_rules == NULL) {
        r = redisCommand(c, "AUTH %s %s", f->opts.acl_user,
                         f->opts.acl_password ? f->opts.acl_password : "");
    } else if (f->opts.requirepass != NULL) {
        r = redisCommand(c, "AUTH %s", f->opts.requirepass);
    } else {
        return true;
    }
    bool ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    if (r != NULL) {
        freeReplyObject(r);
    }
    return ok;
}

static redisContext *open_ctl(const elk_tf_t *f, const elk_tf_server_t *s, unsigned timeout_ms)
{
    struct timeval tv = {timeout_ms / 1000u, (long)(timeout_ms % 1000u) * 1000L};
    redisContext *c = redisConnectUnixWithTimeout(s->sock, tv);
    if (c == NULL) {
        return NULL;
    }
    if (c->err || redisSetTimeout(c, tv) != REDIS_OK || !auth_ctl(f, c)) {
        redisFree(c);
        return NULL;
    }
    return c;
}

/* 0 ready, -1 failed, -2 exited because the port was taken (caller may retry). */
static int wait_ready(elk_tf_t *f, size_t i)
{
    elk_tf_server_t *s = &f->servers[i];
    uint64_t end = elk_rp_now_ms() + (f->opts.start_timeout_ms ? f->opts.start_timeout_ms : 10000u);
    while (elk_rp_now_ms() < end) {
        int status;
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            s->pid = 0;
            if (log_says_in_use(s)) {
                return -2;
            }
            fprintf(stderr, "fleet: redis-server %zu (port %u) exited during start\n", i,
                    (unsigned)s->port);
            print_log_tail(s);
            return -1;
        }
        redisContext *c = open_ctl(f, s, 1000);
        if (c != NULL) {
            redisReply *r = redisCommand(c, "PING");
            bool pong = r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
            if (r != NULL) {
                freeReplyObject(r);
            }
            if (pong) {
                s->ctl = c;
                return 0;
            }
            redisFree(c);
        }
        elk_rp_sleep_ms(10);
    }
    fprintf(stderr, "fleet: redis-server %zu (port %u) did not answer PING in time\n", i,
            (unsigned)s->port);
    print_log_tail(s);
    reap(s, 0);
    return -1;
}

/* Start server i; new_port picks a fresh ephemeral port on each collision, otherwise
 * the same port is retried for a while (restart: clients know that port). */
static int start_one(elk_tf_t *f, size_t i, bool new_port)
{
    elk_tf_server_t *s = &f->servers[i];
    for (int attempt = 0; attempt < (new_port ? 8 : 50); attempt++) {
        if (new_port) {
            s->port = elk_tf_free_port();
            if (s->port == 0) {
                fprintf(stderr, "fleet: no free port on 127.0.0.1\n");
                return -1;
            }
        }
        /* A fresh log per attempt so a stale "in use" line cannot mislead. */
        remove(s->log);
        remove(s->sock);
        s->pid = spawn(f, i);
        if (s->pid < 0) {
            s->pid = 0;
            return -1;
        }
        int rc = wait_ready(f, i);
        if (rc == 0) {
            return 0;
        }
        if (rc == -1) {
            return -1;
        }
        if (!new_port) {
            elk_rp_sleep_ms(100);
        }
    }
    fprintf(stderr, "fleet: port %u stayed in use; giving up\n", (unsigned)s->port);
    return -1;
}

int elk_tf_start(elk_tf_t *f, const elk_tf_options_t *opts)
{
    if (f == NULL) {
        return -1;
    }
    install_hooks();
    for (size_t k = 0; k < ELK_TF_MAX_FLEETS; k++) {
        if (g_fleets[k] == f) {
            elk_tf_stop(f); /* started twice: do not lose track of the first servers */
        }
    }
    memset(f, 0, sizeof *f);
    if (opts != NULL) {
        f->opts = *opts;
    } else {
        elk_tf_options_defaults(&f->opts);
    }
    if (f->opts.count == 0 || f->opts.count > ELK_TF_MAX_SERVERS) {
        fprintf(stderr, "fleet: count %zu out of range 1..%d\n", f->opts.count, ELK_TF_MAX_SERVERS);
        return -1;
    }
    if (!registry_has_room(f)) {
        fprintf(stderr, "fleet: more than %d fleets at once\n", ELK_TF_MAX_FLEETS);
        return -1;
    }
    if (f->opts.tls && elk_tf_certs() == NULL) {
        return -1;
    }
    snprintf(f->dir, sizeof f->dir, "/tmp/elk-fleet-XXXXXX");
    if (mkdtemp(f->dir) == NULL) {
        fprintf(stderr, "fleet: mkdtemp failed: %s\n", strerror(errno));
        f->dir[0] = '\0';
        return -1;
    }
    f->count = f->opts.count;
    for (size_t i = 0; i < f->count; i++) {
        snprintf(f->servers[i].sock, ELK_TF_PATH_MAX, "%s/s%zu.sock", f->dir, i);
        snprintf(f->servers[i].log, ELK_TF_PATH_MAX, "%s/s%zu.log", f->dir, i);
    }
    registry_add(f);
    f->started = true;
    for (size_t i = 0; i < f->count; i++) {
        if (start_one(f, i, true) != 0) {
            elk_tf_stop(f);
            return -1;
        }
    }
    return 0;
}

void elk_tf_stop(elk_tf_t *f)
{
    if (f == NULL || !f->started) {
        return;
    }
    /* Ask all to stop first, then wait, so N servers cost one grace period, not N. */
    for (size_t i = 0; i < f->count; i++) {
        elk_tf_server_t *s = &f->servers[i];
        close_ctl(s);
        if (s->pid > 0) {
            if (s->paused) {
                kill(s->pid, SIGCONT);
                s->paused = false;
            }
            kill(s->pid, SIGTERM);
        }
    }
    for (size_t i = 0; i < f->count; i++) {
        reap(&f->servers[i], 3000);
    }
    rm_tree(f->dir);
    f->dir[0] = '\0';
    f->started = false;
    registry_remove(f);
}

size_t elk_tf_count(const elk_tf_t *f)
{
    return f == NULL ? 0 : f->count;
}

uint16_t elk_tf_port(const elk_tf_t *f, size_t i)
{
    return (f == NULL || i >= f->count) ? 0 : f->servers[i].port;
}

elk_endpoint_t elk_tf_endpoint(const elk_tf_t *f, size_t i)
{
    elk_endpoint_t ep;
    ep.host = "127.0.0.1";
    ep.port = elk_tf_port(f, i);
    ep.server_name = (f != NULL && f->opts.tls) ? "localhost" : NULL;
    return ep;
}

static elk_tf_server_t *server(elk_tf_t *f, size_t i)
{
    if (f == NULL || !f->started || i >= f->count) {
        fprintf(stderr, "fleet: no server %zu\n", i);
        return NULL;
    }
    return &f->servers[i];
}

/* Stops server i, given grace_ms to end on SIGTERM before SIGKILL (0: SIGKILL at once). */
static int stop_one(elk_tf_t *f, size_t i, unsigned grace_ms)
{
    elk_tf_server_t *s = server(f, i);
    if (s == NULL || s->pid <= 0) {
        return -1;
    }
    close_ctl(s);
    reap(s, grace_ms);
    return 0;
}

int elk_tf_kill(elk_tf_t *f, size_t i)
{
    return stop_one(f, i, 0);
}

int elk_tf_term(elk_tf_t *f, size_t i)
{
    return stop_one(f, i, 5000);
}

int elk_tf_restart(elk_tf_t *f, size_t i)
{
    elk_tf_server_t *s = server(f, i);
    if (s == NULL) {
        return -1;
    }
    close_ctl(s);
    reap(s, 0);
    return start_one(f, i, false);
}

int elk_tf_pause(elk_tf_t *f, size_t i)
{
    elk_tf_server_t *s = server(f, i);
    if (s == NULL || s->pid <= 0 || s->paused) {
        return -1;
    }
    if (kill(s->pid, SIGSTOP) != 0) {
        return -1;
    }
    /* SIGSTOP is asynchronous: wait until the kernel reports the stop. */
    int status;
    if (waitpid(s->pid, &status, WUNTRACED) != s->pid || !WIFSTOPPED(status)) {
        return -1;
    }
    s->paused = true;
    return 0;
}

int elk_tf_resume(elk_tf_t *f, size_t i)
{
    elk_tf_server_t *s = server(f, i);
    if (s == NULL || s->pid <= 0 || !s->paused) {
        return -1;
    }
    if (kill(s->pid, SIGCONT) != 0) {
        return -1;
    }
    s->paused = false;
    return 0;
}

int elk_tf_heal(elk_tf_t *f)
{
    if (f == NULL || !f->started) {
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < f->count; i++) {
        if (f->servers[i].paused && elk_tf_resume(f, i) != 0) {
            rc = -1;
        }
        if (f->servers[i].pid <= 0 && elk_tf_restart(f, i) != 0) {
            rc = -1;
        }
    }
    return rc;
}

bool elk_tf_running(const elk_tf_t *f, size_t i)
{
    return f != NULL && f->started && i < f->count && f->servers[i].pid > 0;
}

redisContext *elk_tf_redis(elk_tf_t *f, size_t i)
{
    elk_tf_server_t *s = server(f, i);
    if (s == NULL || s->pid <= 0 || s->paused) {
        return NULL;
    }
    if (s->ctl == NULL) {
        s->ctl = open_ctl(f, s, 5000);
    }
    return s->ctl;
}

redisReply *elk_tf_cmd(elk_tf_t *f, size_t i, const char *fmt, ...)
{
    redisContext *c = elk_tf_redis(f, i);
    if (c == NULL) {
        return NULL;
    }
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r == NULL) {
        /* The context is unusable after an I/O error; open a new one next time. */
        close_ctl(&f->servers[i]);
    }
    return r;
}

/* ------------------------------------------------------------ misbehaving listener */

static void listener_child(int lfd, elk_tf_listener_mode_t mode)
{
    size_t nheld = 0;
    for (;;) {
        int c = accept(lfd, NULL, NULL);
        if (c < 0) {
            if (errno == EINTR) {
                continue;
            }
            _exit(1);
        }
        if (mode == ELK_TF_LISTEN_READ_CLOSE || mode == ELK_TF_LISTEN_REPLY_ERR) {
            /* Read what arrives within a second, so the client has sent its first flight. */
            struct timeval tv = {1, 0};
            setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            char buf[4096];
            (void)recv(c, buf, sizeof buf, 0);
            if (mode == ELK_TF_LISTEN_REPLY_ERR) {
                static const char err[] = "-ERR unknown command\r\n";
                (void)send(c, err, sizeof err - 1, 0);
                /* Let the reply arrive before the FIN so the client reads it first. */
                shutdown(c, SHUT_WR);
                (void)recv(c, buf, sizeof buf, 0);
            }
            close(c);
        } else if (mode == ELK_TF_LISTEN_SILENT) {
            /* Keep it open (the descriptor leaks on purpose until the child is killed). */
            if (++nheld > 64) {
                close(c);
            }
        } else {
            close(c);
        }
    }
}

int elk_tf_listener_start(elk_tf_listener_t *l, elk_tf_listener_mode_t mode)
{
    install_hooks();
    memset(l, 0, sizeof *l);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return -1;
    }
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        fprintf(stderr, "fleet: listener socket failed: %s\n", strerror(errno));
        close(fd);
        return -1;
    }
    size_t slot = MAX_LISTENERS;
    for (size_t i = 0; i < MAX_LISTENERS; i++) {
        if (g_listeners[i] == NULL || g_listeners[i] == l) {
            slot = i;
            break;
        }
    }
    if (slot == MAX_LISTENERS) {
        fprintf(stderr, "fleet: more than %d listeners at once\n", MAX_LISTENERS);
        close(fd);
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(fd);
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(1);
        }
        listener_child(fd, mode);
        _exit(0);
    }
    close(fd);
    l->pid = pid;
    l->port = ntohs(a.sin_port);
    g_listeners[slot] = l;
    return 0;
}

void elk_tf_listener_stop(elk_tf_listener_t *l)
{
    if (l == NULL) {
        return;
    }
    if (l->pid > 0) {
        kill(l->pid, SIGKILL);
        while (waitpid(l->pid, NULL, 0) < 0 && errno == EINTR) {
        }
        l->pid = 0;
    }
    for (size_t i = 0; i < MAX_LISTENERS; i++) {
        if (g_listeners[i] == l) {
            g_listeners[i] = NULL;
        }
    }
}

int elk_tf_start_each(elk_tf_t *fleets, int n, void (*configure)(int i, elk_tf_options_t *opts))
{
    for (int i = 0; i < n; i++) {
        elk_tf_options_t o;
        elk_tf_options_defaults(&o);
        configure(i, &o);
        if (elk_tf_start(&fleets[i], &o) != 0) {
            return -1;
        }
    }
    return 0;
}

void elk_tf_stop_each(elk_tf_t *fleets, int n)
{
    for (int i = 0; i < n; i++) {
        elk_tf_stop(&fleets[i]);
    }
}
