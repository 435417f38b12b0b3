/* SPDX-License-Identifier: MIT */
/*
 * elk-faultproxy against a local echo server (forked here) and a real
 * redis-server: forwarding is byte-exact, and each fault does what it says.
 * Time is only ever checked from below (a delay adds at least the delay).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "test_main.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elk_tooltest.h"

#ifndef ELK_FAULTPROXY_BIN
#error "ELK_FAULTPROXY_BIN must name the elk-faultproxy binary"
#endif

struct fx {
    pid_t echo_pid, proxy_pid;
    int echo_port, port, ctl;
};

/* Echo server: one forked child per connection, echoing until EOF. */
static pid_t start_echo(int *port)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 16) < 0)
        return -1;
    socklen_t sl = sizeof sa;
    getsockname(lfd, (struct sockaddr *)&sa, &sl);
    *port = ntohs(sa.sin_port);
    pid_t pid = fork();
    if (pid != 0) {
        setpgid(pid, pid); /* also done by the child: whoever runs first */
        close(lfd);
        return pid;
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a test that crashed */
    signal(SIGCHLD, SIG_IGN);
    signal(SIGTERM, SIG_DFL);
    setpgid(0, 0); /* so stopping the server also stops its per-connection children */
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            continue;
        if (fork() == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            close(lfd);
            char buf[65536];
            ssize_t n;
            while ((n = recv(fd, buf, sizeof buf, 0)) > 0)
                if (elk_tt_send_all(fd, buf, (size_t)n) < 0)
                    break;
            _exit(0);
        }
        close(fd);
    }
}

static pid_t start_proxy(int upstream, int *port, int *ctl, const char *extra)
{
    char up[16];
    snprintf(up, sizeof up, "%d", upstream);
    char *argv[8] = {ELK_FAULTPROXY_BIN, "--upstream", up, "--seed", "42", NULL, NULL, NULL};
    if (extra) {
        argv[5] = (char *)extra;
    }
    int ports[2];
    pid_t pid = elk_tt_spawn(argv, ports, 2, 5000);
    *port = ports[0];
    *ctl = ports[1];
    return pid;
}

/* An echo server and a proxy in front of it, started with the option `extra` (or none).
 * Returns 0, or -1 when either did not start (what started is in f, for fx_stop). */
static int fx_start(struct fx *f, const char *extra)
{
    f->echo_pid = start_echo(&f->echo_port);
    if (f->echo_pid < 0)
        return -1;
    f->proxy_pid = start_proxy(f->echo_port, &f->port, &f->ctl, extra);
    return f->proxy_pid < 0 ? -1 : 0;
}

static void fx_stop(struct fx *f)
{
    if (f->proxy_pid > 0)
        elk_tt_stop(f->proxy_pid);
    if (f->echo_pid > 0) {
        kill(-f->echo_pid, SIGKILL);
        elk_tt_stop(f->echo_pid);
    }
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    *state = f;
    return fx_start(f, NULL);
}

static int teardown(void **state)
{
    struct fx *f = *state;
    fx_stop(f);
    free(f);
    return 0;
}

static void ctl_ok(struct fx *f, const char *cmd)
{
    char reply[1024];
    int rc = elk_tt_ctl(f->ctl, cmd, reply, sizeof reply);
    if (rc != 0)
        print_error("control '%s' answered '%s'\n", cmd, reply);
    assert_int_equal(rc, 0);
}

/* A connection through the proxy that has carried the byte b there and back. */
static int connect_echoed(struct fx *f, char b)
{
    int fd = elk_tt_connect(f->port, 10000);
    assert_true(fd >= 0);
    assert_int_equal(elk_tt_send_all(fd, &b, 1), 0);
    char c = 0;
    assert_int_equal(elk_tt_recv_upto(fd, &c, 1, 10000, NULL), 1);
    assert_int_equal(c, b);
    return fd;
}

/* Send buf while reading the echo back concurrently; returns bytes echoed. */
static size_t echo_roundtrip(int fd, const uint8_t *buf, size_t len, uint8_t *back)
{
    size_t sent = 0, got = 0;
    while (got < len) {
        struct pollfd p = {.fd = fd, .events = POLLIN | (sent < len ? POLLOUT : 0)};
        if (poll(&p, 1, 10000) <= 0)
            break;
        if ((p.revents & POLLOUT) && sent < len) {
            ssize_t n = send(fd, buf + sent, len - sent > 7000 ? 7000 : len - sent,
                             MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0)
                sent += (size_t)n;
        }
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = recv(fd, back + got, len - got, MSG_DONTWAIT);
            if (n <= 0)
                break;
            got += (size_t)n;
        }
    }
    return got;
}

static void test_forward_byte_exact(void **state)
{
    struct fx *f = *state;
    size_t len = 1u << 20;
    uint8_t *buf = malloc(len), *back = malloc(len);
    uint32_t x = 12345;
    for (size_t i = 0; i < len; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    int fd = elk_tt_connect(f->port, 10000);
    assert_true(fd >= 0);
    assert_int_equal(echo_roundtrip(fd, buf, len, back), len);
    assert_memory_equal(buf, back, len);
    close(fd);
    free(buf);
    free(back);
}

static void test_delay_and_jitter_keep_order(void **state)
{
    struct fx *f = *state;
    ctl_ok(f, "delay 150");
    int fd = elk_tt_connect(f->port, 10000);
    assert_true(fd >= 0);
    uint64_t t0 = elk_tt_now_ms();
    assert_int_equal(elk_tt_send_all(fd, "ping", 4), 0);
    char got[8];
    assert_int_equal(elk_tt_recv_upto(fd, got, 4, 10000, NULL), 4);
    uint64_t elapsed = elk_tt_now_ms() - t0;
    assert_memory_equal(got, "ping", 4);
    /* up + down: at least twice the one-way delay */
    assert_true(elapsed >= 300);

    /* jitter may not reorder: many small writes come back in order */
    ctl_ok(f, "delay 1");
    ctl_ok(f, "jitter 20");
    char msg[401], back[400];
    for (int i = 0; i < 100; i++)
        snprintf(msg + i * 4, 5, "%04d", i);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(elk_tt_send_all(fd, msg + i * 4, 4), 0);
        usleep(1000);
    }
    assert_int_equal(elk_tt_recv_upto(fd, back, 400, 10000, NULL), 400);
    assert_memory_equal(msg, back, 400);
    close(fd);
    ctl_ok(f, "pass");
}

/* --delay MS on the command line: the proxy starts with MS of delay both ways, as the
 * control command `delay MS` would set it, before any control command is sent. */
static void test_delay_option_at_start(void **state)
{
    (void)state;
    struct fx f = {0};
    assert_int_equal(fx_start(&f, "--delay=150"), 0);
    char reply[1024];
    assert_int_equal(elk_tt_ctl(f.ctl, "status", reply, sizeof reply), 0);
    if (strstr(reply, "delay_up=150 delay_down=150") == NULL)
        print_error("status answered '%s'\n", reply);
    assert_non_null(strstr(reply, "delay_up=150 delay_down=150"));
    int fd = elk_tt_connect(f.port, 10000);
    assert_true(fd >= 0);
    uint64_t t0 = elk_tt_now_ms();
    assert_int_equal(elk_tt_send_all(fd, "ping", 4), 0);
    char got[4];
    assert_int_equal(elk_tt_recv_upto(fd, got, 4, 10000, NULL), 4);
    /* up + down: at least twice the one-way delay, however loaded the machine */
    assert_true(elk_tt_now_ms() - t0 >= 300);
    assert_memory_equal(got, "ping", 4);
    close(fd);
    fx_stop(&f);
    /* a delay beyond the 600000 ms the proxy accepts is refused at start (no ports line) */
    struct fx bad = {0};
    assert_int_equal(fx_start(&bad, "--delay=600001"), -1);
    fx_stop(&bad);
}

static void test_delay_one_direction(void **state)
{
    struct fx *f = *state;
    ctl_ok(f, "delay 200 down");
    int fd = elk_tt_connect(f->port, 10000);
    uint64_t t0 = elk_tt_now_ms();
    elk_tt_send_all(fd, "x", 1);
    char c;
    assert_int_equal(elk_tt_recv_upto(fd, &c, 1, 10000, NULL), 1);
    assert_true(elk_tt_now_ms() - t0 >= 200);
    close(fd);
    ctl_ok(f, "pass");
}

static void test_blackhole_stops_replies(void **state)
{
    struct fx *f = *state;
    int fd = connect_echoed(f, 'a');
    char c;
    ctl_ok(f, "blackhole");
    elk_tt_send_all(fd, "b", 1);
    int eof = 0;
    assert_int_equal(elk_tt_recv_upto(fd, &c, 1, 500, &eof), 0);
    assert_int_equal(eof, 0); /* silent, not closed */
    /* a new connection is accepted but never answered either */
    int fd2 = elk_tt_connect(f->port, 10000);
    assert_true(fd2 >= 0);
    elk_tt_send_all(fd2, "c", 1);
    assert_int_equal(elk_tt_recv_upto(fd2, &c, 1, 300, &eof), 0);
    ctl_ok(f, "pass");
    /* after pass, data flows again ("b" and "c" were discarded, not delayed) */
    elk_tt_send_all(fd, "d", 1);
    assert_int_equal(elk_tt_recv_upto(fd, &c, 1, 10000, NULL), 1);
    assert_int_equal(c, 'd');
    close(fd);
    close(fd2);
}

static void test_hold_then_release(void **state)
{
    struct fx *f = *state;
    int fd = elk_tt_connect(f->port, 10000);
    ctl_ok(f, "hold");
    elk_tt_send_all(fd, "held", 4);
    char got[4];
    int eof = 0;
    assert_int_equal(elk_tt_recv_upto(fd, got, 4, 400, &eof), 0);
    assert_int_equal(eof, 0);
    ctl_ok(f, "pass");
    assert_int_equal(elk_tt_recv_upto(fd, got, 4, 10000, NULL), 4);
    assert_memory_equal(got, "held", 4);
    close(fd);
}

static void test_drop_closes(void **state)
{
    struct fx *f = *state;
    const char *modes[] = {"drop rst", "drop fin"};
    for (int m = 0; m < 2; m++) {
        int fd = connect_echoed(f, 'z');
        char c;
        ctl_ok(f, modes[m]);
        int eof = 0;
        assert_int_equal(elk_tt_recv_upto(fd, &c, 1, 10000, &eof), 0);
        assert_int_equal(eof, 1);
        close(fd);
    }
}

static void test_cut_truncates(void **state)
{
    struct fx *f = *state;
    /* settle the connection first so the next chunk is the one that is cut */
    int fd = connect_echoed(f, '0');
    ctl_ok(f, "cut 10");
    char msg[100], back[100];
    memset(msg, 'q', sizeof msg);
    elk_tt_send_all(fd, msg, sizeof msg);
    int eof = 0;
    size_t n = elk_tt_recv_upto(fd, back, sizeof back, 10000, &eof);
    assert_true(n <= 10);
    assert_true(n > 0);
    assert_memory_equal(back, msg, n);
    assert_int_equal(eof, 1);
    close(fd);
    /* one shot: the next connection is whole again */
    fd = elk_tt_connect(f->port, 10000);
    assert_int_equal(echo_roundtrip(fd, (const uint8_t *)msg, sizeof msg, (uint8_t *)back),
                     sizeof msg);
    close(fd);
}

static void test_throttle_slows(void **state)
{
    struct fx *f = *state;
    ctl_ok(f, "throttle 40000");
    int fd = elk_tt_connect(f->port, 20000);
    size_t len = 40000;
    uint8_t *buf = calloc(1, len), *back = calloc(1, len);
    uint64_t t0 = elk_tt_now_ms();
    assert_int_equal(echo_roundtrip(fd, buf, len, back), len);
    /* 40000 bytes at 40000 B/s with a 4000-byte burst: at least 0.9 s */
    assert_true(elk_tt_now_ms() - t0 >= 900);
    close(fd);
    free(buf);
    free(back);
    ctl_ok(f, "pass");
}

static void test_refuse(void **state)
{
    struct fx *f = *state;
    ctl_ok(f, "refuse");
    int fd = elk_tt_connect(f->port, 10000);
    if (fd >= 0) { /* the TCP handshake completes in the kernel; then RST */
        char c;
        int eof = 0;
        assert_int_equal(elk_tt_recv_upto(fd, &c, 1, 10000, &eof), 0);
        assert_int_equal(eof, 1);
        close(fd);
    }
    ctl_ok(f, "pass");
    fd = elk_tt_connect(f->port, 10000);
    assert_true(fd >= 0);
    elk_tt_send_all(fd, "k", 1);
    char c;
    assert_int_equal(elk_tt_recv_upto(fd, &c, 1, 10000, NULL), 1);
    close(fd);
}

static void test_control_rejects_bad_commands(void **state)
{
    struct fx *f = *state;
    char reply[1024];
    assert_int_equal(elk_tt_ctl(f->ctl, "delay", reply, sizeof reply), -1);
    assert_true(strncmp(reply, "ERR", 3) == 0);
    assert_int_equal(elk_tt_ctl(f->ctl, "explode now", reply, sizeof reply), -1);
    assert_int_equal(elk_tt_ctl(f->ctl, "delay 5 sideways", reply, sizeof reply), -1);
    assert_int_equal(elk_tt_ctl(f->ctl, "status", reply, sizeof reply), 0);
    assert_non_null(strstr(reply, "accepted="));
}

static void test_refuses_non_loopback(void **state)
{
    (void)state;
    const char *hosts[] = {"10.0.0.1", "192.168.1.1", "8.8.8.8", "localhost"};
    for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            int dn = open("/dev/null", O_WRONLY);
            dup2(dn, 1);
            dup2(dn, 2);
            execl(ELK_FAULTPROXY_BIN, ELK_FAULTPROXY_BIN, "--upstream", "6379", "--upstream-host",
                  hosts[i], (char *)NULL);
            _exit(127);
        }
        int st = elk_tt_wait(pid, 5000);
        if (st == -1)
            elk_tt_stop(pid);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 2);
    }
}

static void test_real_redis_through_proxy(void **state)
{
    (void)state;
    int rport;
    pid_t redis = elk_tt_redis_start(&rport);
    if (redis < 0) {
        print_message("redis-server not available; skipping\n");
        skip();
    }
    int port, ctl;
    pid_t proxy = start_proxy(rport, &port, &ctl, NULL);
    assert_true(proxy > 0);
    int fd = elk_tt_connect(port, 10000);
    const char *cmd = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    elk_tt_send_all(fd, cmd, strlen(cmd));
    char back[64] = {0};
    const char *want = "+OK\r\n$5\r\nhello\r\n";
    assert_int_equal(elk_tt_recv_upto(fd, back, strlen(want), 10000, NULL), strlen(want));
    assert_string_equal(back, want);
    /* the redis reply cut in the middle of a bulk string */
    char reply[256];
    assert_int_equal(elk_tt_ctl(ctl, "cut 6", reply, sizeof reply), 0);
    const char *get = "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    elk_tt_send_all(fd, get, strlen(get));
    int eof = 0;
    memset(back, 0, sizeof back);
    assert_int_equal(elk_tt_recv_upto(fd, back, sizeof back - 1, 10000, &eof), 6);
    assert_string_equal(back, "$5\r\nhe");
    assert_int_equal(eof, 1);
    close(fd);
    elk_tt_stop(proxy);
    elk_tt_stop(redis);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    /* Each test with a proxy of its own (setup), then the ones that start their own. */
    int failed = ELK_RUN_EACH("proxy", setup, teardown, test_forward_byte_exact,
                              test_delay_and_jitter_keep_order, test_delay_one_direction,
                              test_blackhole_stops_replies, test_hold_then_release,
                              test_drop_closes, test_cut_truncates, test_throttle_slows,
                              test_refuse, test_control_rejects_bad_commands);
    return failed +
        ELK_RUN_TESTS(test_delay_option_at_start, test_refuses_non_loopback,
                      test_real_redis_through_proxy);
}
