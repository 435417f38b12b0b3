/* SPDX-License-Identifier: MIT */
/* The shared redis-server launcher: see redis_proc.h. */
#define _GNU_SOURCE
#include "redis_proc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RP_MAX_ARGS 96

uint64_t elk_rp_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void elk_rp_sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000u, (long)(ms % 1000u) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

uint16_t elk_rp_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return 0;
    }
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    uint16_t port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0) {
        port = ntohs(a.sin_port);
    }
    close(fd);
    return port;
}

/* Append "name value" to argv (value NULL: nothing); returns the new count. */
static size_t rp_opt(const char **argv, size_t n, const char *name, const char *value)
{
    if (value != NULL && n + 2 < RP_MAX_ARGS) {
        argv[n++] = name;
        argv[n++] = value;
    }
    return n;
}

/* argv for o into argv (RP_MAX_ARGS), with its strings in portbuf and userpw. */
static void rp_argv(const elk_rp_opts_t *o, const char **argv, char *portbuf, size_t portcap,
                    char *userpw, size_t pwcap)
{
    size_t n = 0;
    snprintf(portbuf, portcap, "%u", (unsigned)o->port);
    argv[n++] = "redis-server";
    n = rp_opt(argv, n, "--bind", "127.0.0.1");
    n = rp_opt(argv, n, "--port", o->tls ? "0" : portbuf);
    if (o->tls) {
        n = rp_opt(argv, n, "--tls-port", portbuf);
        n = rp_opt(argv, n, "--tls-cert-file", o->tls_cert);
        n = rp_opt(argv, n, "--tls-key-file", o->tls_key);
        n = rp_opt(argv, n, "--tls-ca-cert-file", o->tls_ca);
        n = rp_opt(argv, n, "--tls-auth-clients", o->tls_auth_clients ? "yes" : "no");
    }
    n = rp_opt(argv, n, "--unixsocket", o->unixsocket);
    n = rp_opt(argv, n, "--unixsocketperm", o->unixsocket != NULL ? "700" : NULL);
    n = rp_opt(argv, n, "--save", "");
    n = rp_opt(argv, n, "--appendonly", "no");
    n = rp_opt(argv, n, "--dir", o->dir);
    n = rp_opt(argv, n, "--daemonize", "no");
    n = rp_opt(argv, n, "--loglevel", o->loglevel != NULL ? o->loglevel : "notice");
    n = rp_opt(argv, n, "--requirepass", o->requirepass);
    if (o->acl_user != NULL) {
        snprintf(userpw, pwcap, ">%s", o->acl_password != NULL ? o->acl_password : "");
        static const char *const all[] = {"~*", "&*", "+@all", NULL};
        const char *const *rules = o->acl_rules != NULL ? o->acl_rules : all;
        n = rp_opt(argv, n, "--user", o->acl_user);
        argv[n++] = "on";
        argv[n++] = userpw;
        for (size_t k = 0; rules[k] != NULL && n < RP_MAX_ARGS - 8; k++) {
            argv[n++] = rules[k];
        }
    }
    for (size_t k = 0; o->extra_args != NULL && o->extra_args[k] != NULL && n < RP_MAX_ARGS - 1;
         k++) {
        argv[n++] = o->extra_args[k];
    }
    argv[n] = NULL;
}

pid_t elk_rp_spawn(const elk_rp_opts_t *o)
{
    const char *argv[RP_MAX_ARGS];
    char portbuf[8], userpw[160];
    rp_argv(o, argv, portbuf, sizeof portbuf, userpw, sizeof userpw);

    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "redis_proc: fork failed: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        /* No redis-server may outlive the test, even if the test is SIGKILLed. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(127);
        }
        int in = open("/dev/null", O_RDONLY);
        int out = o->log_path != NULL ? open(o->log_path, O_WRONLY | O_CREAT | O_APPEND, 0600)
                                      : open("/dev/null", O_WRONLY);
        if (in >= 0) {
            dup2(in, STDIN_FILENO);
        }
        if (out >= 0) {
            dup2(out, STDOUT_FILENO);
            dup2(out, STDERR_FILENO);
        }
        execvp("redis-server", (char *const *)argv);
        fprintf(stderr, "redis_proc: exec redis-server failed: %s\n", strerror(errno));
        _exit(127);
    }
    return pid;
}

/* One PING over a fresh TCP connection: true on +PONG within timeout_ms. */
static bool rp_ping(uint16_t port, unsigned timeout_ms)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return false;
    }
    struct timeval tv = {timeout_ms / 1000u, (long)(timeout_ms % 1000u) * 1000L};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    char buf[8];
    size_t got = 0;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        send(fd, "PING\r\n", 6, MSG_NOSIGNAL) == 6) {
        while (got < 7) {
            ssize_t n = recv(fd, buf + got, 7 - got, 0);
            if (n <= 0) {
                break;
            }
            got += (size_t)n;
        }
    }
    close(fd);
    return got == 7 && memcmp(buf, "+PONG\r\n", 7) == 0;
}

int elk_rp_wait_tcp(pid_t pid, uint16_t port, unsigned timeout_ms)
{
    uint64_t end = elk_rp_now_ms() + timeout_ms;
    while (elk_rp_now_ms() < end) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            return -2;
        }
        if (rp_ping(port, 500)) {
            return 0;
        }
        elk_rp_sleep_ms(20);
    }
    return -1;
}

int elk_rp_stop(pid_t pid, unsigned grace_ms)
{
    if (pid <= 0) {
        return -1;
    }
    int st = -1;
    kill(pid, SIGCONT);
    if (grace_ms > 0) {
        kill(pid, SIGTERM);
        uint64_t end = elk_rp_now_ms() + grace_ms;
        while (elk_rp_now_ms() < end) {
            if (waitpid(pid, &st, WNOHANG) == pid) {
                return st;
            }
            elk_rp_sleep_ms(5);
        }
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return st;
}
