/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "elk_tooltest.h"
#include "redis_proc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

uint64_t elk_tt_now_ms(void)
{
    return elk_rp_now_ms();
}

pid_t elk_tt_spawn(char *const argv[], int *ports, int nports, int timeout_ms)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a test that crashed */
        dup2(pfd[1], 1);
        int dn = open("/dev/null", O_RDONLY);
        if (dn >= 0)
            dup2(dn, 0);
        execv(argv[0], argv);
        fprintf(stderr, "elk_tt_spawn: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    char line[256];
    size_t n = 0;
    uint64_t end = elk_tt_now_ms() + (uint64_t)timeout_ms;
    while (n < sizeof line - 1) {
        uint64_t now = elk_tt_now_ms();
        if (now >= end)
            break;
        struct pollfd p = {.fd = pfd[0], .events = POLLIN};
        if (poll(&p, 1, (int)(end - now)) <= 0)
            break;
        ssize_t r = read(pfd[0], line + n, 1);
        if (r <= 0)
            break;
        if (line[n] == '\n')
            break;
        n++;
    }
    line[n] = 0;
    close(pfd[0]);
    int got = 0;
    char *p = line;
    while (got < nports) {
        char *e;
        long v = strtol(p, &e, 10);
        if (e == p)
            break;
        ports[got++] = (int)v;
        p = e;
    }
    if (got < nports) {
        fprintf(stderr, "elk_tt_spawn: %s printed '%s', expected %d port(s)\n", argv[0], line,
                nports);
        elk_tt_stop(pid);
        return -1;
    }
    return pid;
}

int elk_tt_wait(pid_t pid, int timeout_ms)
{
    uint64_t end = elk_tt_now_ms() + (uint64_t)timeout_ms;
    int st;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (r < 0)
            return -1;
        if (elk_tt_now_ms() >= end)
            return -1;
        usleep(10000);
    }
}

int elk_tt_stop(pid_t pid)
{
    return elk_rp_stop(pid, 2000);
}

int elk_tt_free_port(void)
{
    uint16_t p = elk_rp_free_port();
    return p != 0 ? (int)p : -1;
}

int elk_tt_connect(int port, int timeout_ms)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int elk_tt_send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

size_t elk_tt_recv_upto(int fd, void *buf, size_t len, int timeout_ms, int *eof)
{
    size_t got = 0;
    if (eof)
        *eof = 0;
    while (got < len) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, timeout_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        ssize_t n = recv(fd, (char *)buf + got, len - got, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            if (eof)
                *eof = 1;
            break;
        }
        if (n > 0)
            got += (size_t)n;
    }
    return got;
}

int elk_tt_ctl(int ctl_port, const char *cmd, char *reply, size_t reply_cap)
{
    int fd = elk_tt_connect(ctl_port, 5000);
    if (fd < 0) {
        snprintf(reply, reply_cap, "ERR cannot connect to control port %d", ctl_port);
        return -1;
    }
    char line[512];
    snprintf(line, sizeof line, "%s\n", cmd);
    elk_tt_send_all(fd, line, strlen(line));
    size_t n = 0;
    while (n < reply_cap - 1) {
        ssize_t r = recv(fd, reply + n, 1, 0);
        if (r <= 0 || reply[n] == '\n')
            break;
        n++;
    }
    reply[n] = 0;
    close(fd);
    return strncmp(reply, "OK", 2) == 0 ? 0 : -1;
}

pid_t elk_tt_redis_start(int *port)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        elk_rp_opts_t o = {.port = elk_rp_free_port(), .loglevel = "warning"};
        pid_t pid = elk_rp_spawn(&o);
        if (pid < 0)
            return -1;
        int rc = elk_rp_wait_tcp(pid, o.port, 5000);
        if (rc == 0) {
            *port = o.port;
            return pid;
        }
        elk_rp_stop(pid, 2000); /* died (port taken?) or silent: try another port */
    }
    return -1;
}
