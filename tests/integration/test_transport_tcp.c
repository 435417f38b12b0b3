/* SPDX-License-Identifier: MIT */
/* port/posix TCP transport against a real redis-server on 127.0.0.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include "test_main.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "elk/port_posix.h"
#include "fleet.h"

#define TMO 5000u

static elk_tf_t fleet;

static int setup(void **state)
{
    (void)state;
    elk_tf_options_t o;
    elk_tf_options_defaults(&o);
    o.count = 1;
    return elk_tf_start(&fleet, &o);
}

static int teardown(void **state)
{
    (void)state;
    elk_tf_stop(&fleet);
    return 0;
}

static int heal(void **state)
{
    (void)state;
    return elk_tf_heal(&fleet);
}

static void ensure_running(void)
{
    if (!elk_tf_running(&fleet, 0)) {
        assert_int_equal(elk_tf_restart(&fleet, 0), 0);
    }
}

/* A fresh TCP transport in *t (state in *tcp), connected to ep. */
static void open_to(elk_posix_tcp_t *tcp, elk_transport_t *t, const elk_endpoint_t *ep)
{
    assert_int_equal(elk_posix_tcp_init(tcp, NULL, t), ELK_OK);
    assert_int_equal(elk_tf_xport_connect(t, ep, TMO), 1);
}

/* PING on t answered +PONG. */
static void ping_pong(const elk_transport_t *t)
{
    uint8_t buf[64];
    size_t len;
    assert_int_equal(elk_tf_xport_send_all(t, "PING\r\n", 6, TMO), ELK_OK);
    assert_int_equal(elk_tf_xport_recv_until(t, buf, sizeof buf, "\r\n", TMO, &len), ELK_OK);
    assert_string_equal((char *)buf, "+PONG\r\n");
}

static void test_ping_round_trip(void **state)
{
    (void)state;
    elk_posix_tcp_t tcp;
    elk_transport_t t;
    uint8_t buf[256];
    size_t len;
    elk_endpoint_t ep = elk_tf_endpoint(&fleet, 0);

    open_to(&tcp, &t, &ep);
    unsigned ev = 0;
    assert_true(t.wait(t.ctx, &ev) >= 0);
    assert_true(ev & ELK_WAIT_READ);

    static const char ping[] = "*1\r\n$4\r\nPING\r\n";
    assert_int_equal(elk_tf_xport_send_all(&t, ping, sizeof ping - 1, TMO), ELK_OK);
    assert_int_equal(elk_tf_xport_recv_until(&t, buf, sizeof buf, "\r\n", TMO, &len), ELK_OK);
    assert_int_equal(len, 7);
    assert_memory_equal(buf, "+PONG\r\n", 7);

    /* Pipelined: two commands in one write, two replies in order. */
    static const char two[] = "*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n*1\r\n$4\r\nPING\r\n";
    assert_int_equal(elk_tf_xport_send_all(&t, two, sizeof two - 1, TMO), ELK_OK);
    assert_int_equal(elk_tf_xport_recv_until(&t, buf, sizeof buf, "+PONG\r\n", TMO, &len), ELK_OK);
    assert_string_equal((char *)buf, "$3\r\nabc\r\n+PONG\r\n");

    t.close(t.ctx);
    assert_int_equal(t.wait(t.ctx, &ev), -1);
    t.close(t.ctx); /* closing twice is harmless */
}

/* A value larger than the socket buffers forces partial sends, "would block" and the
 * WRITE wait; the server's copy proves every byte arrived in order. */
static void test_large_value_partial_io(void **state)
{
    (void)state;
    enum { VAL = 16 * 1024 * 1024 };
    elk_posix_tcp_t tcp;
    elk_transport_t t;
    elk_endpoint_t ep = elk_tf_endpoint(&fleet, 0);
    char *cmd = malloc(VAL + 128);
    uint8_t *rx = malloc(VAL + 128);
    assert_non_null(cmd);
    assert_non_null(rx);

    int hdr = snprintf(cmd, 128, "*3\r\n$3\r\nSET\r\n$7\r\nbig:key\r\n$%d\r\n", VAL);
    for (int i = 0; i < VAL; i++) {
        cmd[hdr + i] = (char)('a' + ((unsigned)i * 7919u) % 26u);
    }
    memcpy(cmd + hdr + VAL, "\r\n", 2);
    size_t cmdlen = (size_t)hdr + VAL + 2;
    static const char get[] = "*2\r\n$3\r\nGET\r\n$7\r\nbig:key\r\n";

    open_to(&tcp, &t, &ep);

    /* With the server paused nothing drains the socket: send must come to "would block"
     * (0) well before 16 MiB, and the wait set must then ask for WRITE. */
    assert_int_equal(elk_tf_pause(&fleet, 0), 0);
    size_t sent = 0;
    int32_t n;
    while ((n = t.send(t.ctx, (const uint8_t *)cmd + sent, cmdlen - sent)) > 0) {
        sent += (size_t)n;
        assert_true(sent < cmdlen);
    }
    assert_int_equal(n, 0);
    unsigned ev = 0;
    assert_true(t.wait(t.ctx, &ev) >= 0);
    assert_int_equal(ev, ELK_WAIT_READ | ELK_WAIT_WRITE);
    assert_int_equal(elk_tf_resume(&fleet, 0), 0);
    assert_int_equal(elk_tf_xport_send_all(&t, cmd + sent, cmdlen - sent, 30000), ELK_OK);
    assert_true(t.wait(t.ctx, &ev) >= 0);
    assert_int_equal(ev, ELK_WAIT_READ); /* WRITE interest ends with the first full send */
    size_t len;
    assert_int_equal(elk_tf_xport_recv_until(&t, rx, 64, "\r\n", TMO, &len), ELK_OK);
    assert_string_equal((char *)rx, "+OK\r\n");

    redisReply *r = elk_tf_cmd(&fleet, 0, "STRLEN big:key");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, VAL);
    freeReplyObject(r);

    /* Read it back through the transport: many recv calls, each partial. */
    assert_int_equal(elk_tf_xport_send_all(&t, get, sizeof get - 1, TMO), ELK_OK);
    size_t want = (size_t)(hdr - (int)strlen("*3\r\n$3\r\nSET\r\n$7\r\nbig:key\r\n")) + VAL + 2;
    size_t got = 0;
    while (got < want) {
        size_t n;
        /* "\r\n" appears after the header and at the end; keep reading until all bytes came. */
        assert_int_equal(elk_tf_xport_recv_until(&t, rx + got, VAL + 128 - got, "\n", TMO, &n),
                         ELK_OK);
        got += n;
    }
    assert_int_equal(got, want);
    char lenhdr[32];
    int lh = snprintf(lenhdr, sizeof lenhdr, "$%d\r\n", VAL);
    assert_memory_equal(rx, lenhdr, (size_t)lh);
    assert_memory_equal(rx + lh, cmd + hdr, VAL);

    t.close(t.ctx);
    free(cmd);
    free(rx);
}

static void test_connect_refused(void **state)
{
    (void)state;
    elk_posix_tcp_t tcp;
    elk_transport_t t;
    uint16_t port = elk_tf_free_port();
    assert_int_not_equal(port, 0);
    elk_endpoint_t ep = {"127.0.0.1", port, NULL};

    assert_int_equal(elk_posix_tcp_init(&tcp, NULL, &t), ELK_OK);
    int rc = elk_tf_xport_connect(&t, &ep, TMO);
    assert_int_equal(rc, ELK_E_CONNECT_REFUSED);
    assert_int_equal(elk_posix_tcp_last_errno(&tcp), 111 /* ECONNREFUSED on Linux */);
    /* The failure sticks until close or the next open, and a failed transport refuses
     * I/O with an error, never "would block" forever (the same as port/lwip). */
    assert_int_equal(t.progress(t.ctx), ELK_E_CONNECT_REFUSED);
    uint8_t b[4];
    unsigned ev;
    assert_int_equal(t.recv(t.ctx, b, sizeof b), ELK_E_STATE);
    assert_int_equal(t.send(t.ctx, b, sizeof b), ELK_E_STATE);
    assert_int_equal(t.wait(t.ctx, &ev), -1);
    t.close(t.ctx);
    /* Closed is not failed: nothing is being connected any more. */
    assert_int_equal(t.progress(t.ctx), ELK_E_STATE);
    assert_int_equal(elk_posix_tcp_last_errno(&tcp), 111); /* kept for logs */
}

/* A name (resolved from /etc/hosts, no DNS traffic) instead of a numeric address. */
static void test_connect_by_name(void **state)
{
    (void)state;
    elk_posix_tcp_t tcp;
    elk_transport_t t;
    elk_endpoint_t ep = {"localhost", elk_tf_port(&fleet, 0), NULL};

    open_to(&tcp, &t, &ep);
    ping_pong(&t);
    t.close(t.ctx);
}

static void test_peer_close_is_closed(void **state)
{
    (void)state;
    elk_posix_tcp_t tcp;
    elk_transport_t t;
    uint8_t buf[64];
    size_t len;
    elk_endpoint_t ep = elk_tf_endpoint(&fleet, 0);

    open_to(&tcp, &t, &ep);
    assert_int_equal(elk_tf_xport_send_all(&t, "*1\r\n$4\r\nQUIT\r\n", 14, TMO), ELK_OK);
    /* terminator NULL: read until the orderly close, which must surface as ELK_E_CLOSED. */
    assert_int_equal(elk_tf_xport_recv_until(&t, buf, sizeof buf, NULL, TMO, &len), ELK_OK);
    assert_string_equal((char *)buf, "+OK\r\n");
    assert_int_equal(t.recv(t.ctx, buf, sizeof buf), ELK_E_CLOSED);
    t.close(t.ctx);
}

static void test_server_killed(void **state)
{
    (void)state;
    elk_posix_tcp_t tcp;
    elk_transport_t t;
    uint8_t buf[64];
    size_t len;
    ensure_running();
    elk_endpoint_t ep = elk_tf_endpoint(&fleet, 0);

    open_to(&tcp, &t, &ep);
    assert_int_equal(elk_tf_kill(&fleet, 0), 0);
    assert_false(elk_tf_running(&fleet, 0));
    int rc = elk_tf_xport_recv_until(&t, buf, sizeof buf, "\r\n", TMO, &len);
    assert_int_equal(rc, ELK_E_CLOSED);
    t.close(t.ctx);

    /* Restart on the same port: a new connection works again. */
    assert_int_equal(elk_tf_restart(&fleet, 0), 0);
    assert_int_equal(elk_tf_port(&fleet, 0), ep.port);
    assert_int_equal(elk_tf_xport_connect(&t, &ep, TMO), 1);
    ping_pong(&t);
    t.close(t.ctx);
}

/* A paused (SIGSTOPped) server accepts in the kernel but answers nothing: the transport
 * must keep saying "would block" rather than error, and recover after SIGCONT. */
static void test_server_paused(void **state)
{
    (void)state;
    elk_posix_tcp_t tcp;
    elk_transport_t t;
    uint8_t buf[64];
    size_t len;
    ensure_running();
    elk_endpoint_t ep = elk_tf_endpoint(&fleet, 0);

    open_to(&tcp, &t, &ep);
    assert_int_equal(elk_tf_pause(&fleet, 0), 0);
    assert_null(elk_tf_redis(&fleet, 0));
    assert_int_equal(elk_tf_xport_send_all(&t, "PING\r\n", 6, TMO), ELK_OK);
    assert_int_equal(elk_tf_xport_recv_until(&t, buf, sizeof buf, "\r\n", 200, &len),
                     ELK_E_TIMEOUT);
    assert_int_equal(len, 0);
    assert_int_equal(elk_tf_resume(&fleet, 0), 0);
    assert_int_equal(elk_tf_xport_recv_until(&t, buf, sizeof buf, "\r\n", TMO, &len), ELK_OK);
    assert_string_equal((char *)buf, "+PONG\r\n");
    t.close(t.ctx);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    elk_posix_tcp_t tcp;
    elk_transport_t t;
    uint8_t b[4];
    unsigned ev = 123;

    assert_int_equal(elk_posix_tcp_init(NULL, NULL, &t), ELK_E_INVALID_ARG);
    assert_int_equal(elk_posix_tcp_init(&tcp, NULL, NULL), ELK_E_INVALID_ARG);
    assert_int_equal(elk_posix_tcp_init(&tcp, NULL, &t), ELK_OK);
    elk_endpoint_t no_host = {NULL, 6379, NULL};
    elk_endpoint_t empty = {"", 6379, NULL};
    elk_endpoint_t no_port = {"127.0.0.1", 0, NULL};
    assert_int_equal(t.open(t.ctx, NULL), ELK_E_INVALID_ARG);
    assert_int_equal(t.open(t.ctx, &no_host), ELK_E_INVALID_ARG);
    assert_int_equal(t.open(t.ctx, &empty), ELK_E_INVALID_ARG);
    assert_int_equal(t.open(t.ctx, &no_port), ELK_E_INVALID_ARG);
    /* Never opened: I/O is a state error, and there is nothing to wait on. */
    assert_int_equal(t.send(t.ctx, b, sizeof b), ELK_E_STATE);
    assert_int_equal(t.recv(t.ctx, b, sizeof b), ELK_E_STATE);
    assert_int_equal(t.wait(t.ctx, &ev), -1);
    assert_int_equal(ev, ELK_WAIT_NONE);
    assert_true(t.progress(t.ctx) < 0);
    t.close(t.ctx);
}

static int sockopt(int fd, int level, int name)
{
    int v = -1;
    socklen_t len = sizeof v;
    assert_int_equal(getsockopt(fd, level, name, &v, &len), 0);
    return v;
}

/* The socket options really reach the socket, and switching them off is honoured. */
static void test_options_applied(void **state)
{
    (void)state;
    elk_posix_tcp_options_t o;
    elk_posix_tcp_t tcp;
    elk_transport_t t;
    unsigned ev;
    ensure_running();
    elk_endpoint_t ep = elk_tf_endpoint(&fleet, 0);

    elk_posix_tcp_options_defaults(&o);
    assert_true(o.nodelay);
    assert_true(o.keepalive);
    o.keepalive_idle_s = 17;
    assert_int_equal(elk_posix_tcp_init(&tcp, &o, &t), ELK_OK);
    assert_int_equal(elk_tf_xport_connect(&t, &ep, TMO), 1);
    int fd = t.wait(t.ctx, &ev);
    assert_true(fd >= 0);
    assert_int_not_equal(sockopt(fd, IPPROTO_TCP, TCP_NODELAY), 0);
    assert_int_not_equal(sockopt(fd, SOL_SOCKET, SO_KEEPALIVE), 0);
    assert_int_equal(sockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE), 17);
    assert_int_equal(sockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL), 10);
    assert_int_equal(sockopt(fd, IPPROTO_TCP, TCP_KEEPCNT), 3);
    assert_int_not_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    assert_int_not_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    t.close(t.ctx);

    o.nodelay = false;
    o.keepalive = false;
    assert_int_equal(elk_posix_tcp_init(&tcp, &o, &t), ELK_OK);
    assert_int_equal(elk_tf_xport_connect(&t, &ep, TMO), 1);
    fd = t.wait(t.ctx, &ev);
    assert_int_equal(sockopt(fd, IPPROTO_TCP, TCP_NODELAY), 0);
    assert_int_equal(sockopt(fd, SOL_SOCKET, SO_KEEPALIVE), 0);
    ping_pong(&t);
    t.close(t.ctx);
}

int main(void)
{
    return ELK_RUN_FIXTURES("integration.transport_tcp", setup, teardown, heal, NULL,
                            test_ping_round_trip, test_large_value_partial_io, test_connect_refused,
                            test_connect_by_name, test_peer_close_is_closed, test_server_killed,
                            test_server_paused, test_bad_arguments, test_options_applied);
}
