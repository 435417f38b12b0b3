/* SPDX-License-Identifier: MIT */
/*
 * port/lwip transport and wait against a scripted lwIP: the lwip_* socket calls are
 * defined here (taking the place of liblwip's), so every errno path, including the
 * ones a real stack rarely produces (ETIMEDOUT, ENOMEM, a failing fcntl), is driven
 * deterministically. The real-stack test is lwip.redis_roundtrip.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "lwip/def.h"
#include "lwip/sockets.h"
#include "lwip/sys.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include "test_main.h"

#include "elk/port_lwip.h"

/* ------------------------------------------------------------ scripted lwIP */

typedef struct fake {
    int socket_ret, socket_errno, socket_family;
    int getfl_ret, setfl_ret, fcntl_errno, setfl_arg;
    int nodelay_ret, nodelay_errno, nodelay_val, nodelay_level, nodelay_opt;
    int connect_ret, connect_errno;
    int poll_ret, poll_errno;
    short poll_revents, poll_events_seen;
    int poll_fd_seen, poll_timeout_seen;
    nfds_t poll_n_seen;
    int so_error, getsockopt_ret;
    ssize_t io_ret;
    int io_errno, io_flags;
    size_t io_len;
    int closes, closed_sock;
    uint32_t slept;
} fake_t;

static fake_t f;

static void fake_reset(void)
{
    memset(&f, 0, sizeof(f));
    f.socket_ret = 3;
    f.getfl_ret = O_RDWR;
    f.connect_ret = -1;
    f.connect_errno = EINPROGRESS;
    f.closed_sock = -1;
}

int lwip_socket(int domain, int type, int protocol)
{
    assert_int_equal(type, SOCK_STREAM);
    (void)protocol;
    f.socket_family = domain;
    errno = f.socket_errno;
    return f.socket_ret;
}

int lwip_fcntl(int s, int cmd, int val)
{
    assert_int_equal(s, f.socket_ret);
    errno = f.fcntl_errno;
    if (cmd == F_GETFL) {
        return f.getfl_ret;
    }
    assert_int_equal(cmd, F_SETFL);
    f.setfl_arg = val;
    return f.setfl_ret;
}

int lwip_setsockopt(int s, int level, int optname, const void *optval, socklen_t optlen)
{
    (void)s;
    assert_int_equal(optlen, sizeof(int));
    f.nodelay_level = level;
    f.nodelay_opt = optname;
    f.nodelay_val = *(const int *)optval;
    errno = f.nodelay_errno;
    return f.nodelay_ret;
}

int lwip_connect(int s, const struct sockaddr *name, socklen_t namelen)
{
    (void)s;
    if (name->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)name;
        assert_int_equal(namelen, sizeof(*sin));
        assert_int_equal(lwip_ntohs(sin->sin_port), 6379);
        assert_int_equal(lwip_ntohl(sin->sin_addr.s_addr), 0xC0000201u); /* 192.0.2.1 */
    } else {
        assert_int_equal(name->sa_family, AF_INET6);
        assert_int_equal(namelen, sizeof(struct sockaddr_in6));
    }
    errno = f.connect_errno;
    return f.connect_ret;
}

int lwip_poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    f.poll_n_seen = nfds;
    f.poll_fd_seen = fds[0].fd;
    f.poll_events_seen = fds[0].events;
    f.poll_timeout_seen = timeout;
    for (nfds_t i = 0; i < nfds; i++) {
        fds[i].revents = (i == 0) ? f.poll_revents : 0;
    }
    errno = f.poll_errno;
    return f.poll_ret;
}

int lwip_getsockopt(int s, int level, int optname, void *optval, socklen_t *optlen)
{
    (void)s;
    assert_int_equal(level, SOL_SOCKET);
    assert_int_equal(optname, SO_ERROR);
    assert_int_equal(*optlen, sizeof(int));
    *(int *)optval = f.so_error;
    return f.getsockopt_ret;
}

ssize_t lwip_send(int s, const void *dataptr, size_t size, int flags)
{
    (void)s;
    (void)dataptr;
    f.io_len = size;
    f.io_flags = flags;
    errno = f.io_errno;
    return f.io_ret;
}

ssize_t lwip_recv(int s, void *mem, size_t len, int flags)
{
    (void)s;
    (void)mem;
    f.io_len = len;
    f.io_flags = flags;
    errno = f.io_errno;
    return f.io_ret;
}

int lwip_close(int s)
{
    f.closes++;
    f.closed_sock = s;
    return 0;
}

void sys_msleep(u32_t ms)
{
    f.slept = ms;
}

/* ------------------------------------------------------------------ helpers */

static const elk_endpoint_t ep4 = {"192.0.2.1", 6379, NULL};

static void open_connecting(elk_lwip_transport_t *ctx, elk_transport_t *t)
{
    fake_reset();
    elk_lwip_transport_init(ctx, t);
    assert_int_equal(t->open(t->ctx, &ep4), ELK_OK);
}

static void open_connected(elk_lwip_transport_t *ctx, elk_transport_t *t)
{
    open_connecting(ctx, t);
    f.poll_ret = 1;
    f.poll_revents = POLLOUT;
    assert_int_equal(t->progress(t->ctx), 1);
}

/* -------------------------------------------------------------------- tests */

static void test_open_sets_nonblocking_and_nodelay(void **state)
{
    (void)state;
    elk_lwip_transport_t ctx;
    elk_transport_t t;
    open_connecting(&ctx, &t);
    assert_int_equal(f.socket_family, AF_INET);
    assert_int_equal(f.setfl_arg, O_RDWR | O_NONBLOCK);
    assert_int_equal(f.nodelay_level, IPPROTO_TCP);
    assert_int_equal(f.nodelay_opt, TCP_NODELAY);
    assert_int_equal(f.nodelay_val, 1);

    unsigned ev = 0;
    assert_int_equal(t.wait(t.ctx, &ev), 3);
    assert_int_equal(ev, ELK_WAIT_WRITE);

    /* Not writable yet: still in progress, after a zero-timeout look. */
    f.poll_ret = 0;
    assert_int_equal(t.progress(t.ctx), 0);
    assert_int_equal(f.poll_fd_seen, 3);
    assert_int_equal(f.poll_events_seen, POLLOUT);
    assert_int_equal(f.poll_timeout_seen, 0);

    f.poll_ret = 1;
    f.poll_revents = POLLOUT;
    assert_int_equal(t.progress(t.ctx), 1);
    assert_int_equal(t.progress(t.ctx), 1);
    assert_int_equal(t.wait(t.ctx, &ev), 3);
    assert_int_equal(ev, ELK_WAIT_READ);
    assert_int_equal(f.closes, 0);

    t.close(t.ctx);
    assert_int_equal(f.closes, 1);
    assert_int_equal(f.closed_sock, 3);
    t.close(t.ctx);
    assert_int_equal(f.closes, 1); /* nothing left to close */
}

static void test_immediate_connect(void **state)
{
    (void)state;
    elk_lwip_transport_t ctx;
    elk_transport_t t;
    fake_reset();
    f.connect_ret = 0;
    f.connect_errno = 0;
    elk_lwip_transport_init(&ctx, &t);
    assert_int_equal(t.open(t.ctx, &ep4), ELK_OK);
    f.poll_ret = -1; /* progress must not need to poll */
    assert_int_equal(t.progress(t.ctx), 1);
}

static void test_ipv6_address(void **state)
{
    (void)state;
    elk_lwip_transport_t ctx;
    elk_transport_t t;
    fake_reset();
    elk_lwip_transport_init(&ctx, &t);
    elk_endpoint_t ep6 = {"2001:db8::1", 6379, NULL};
    assert_int_equal(t.open(t.ctx, &ep6), ELK_OK);
    assert_int_equal(f.socket_family, AF_INET6);
}

/* A failed connect reported through SO_ERROR: mapped, socket closed, sticky. */
static void so_error_case(int so_error, int expect)
{
    elk_lwip_transport_t ctx;
    elk_transport_t t;
    open_connecting(&ctx, &t);
    f.poll_ret = 1;
    f.poll_revents = POLLERR;
    f.so_error = so_error;
    assert_int_equal(t.progress(t.ctx), expect);
    assert_int_equal(f.closes, 1);
    assert_int_equal(t.progress(t.ctx), expect);
    assert_int_equal(elk_lwip_transport_errno(&ctx), so_error);
    unsigned ev;
    assert_int_equal(t.wait(t.ctx, &ev), -1);
}

static void test_connect_failures_through_so_error(void **state)
{
    (void)state;
    so_error_case(ECONNREFUSED, ELK_E_CONNECT_REFUSED);
    so_error_case(ECONNRESET, ELK_E_CONNECT_REFUSED);
    so_error_case(ETIMEDOUT, ELK_E_CONNECT_TIMEOUT);
    so_error_case(EHOSTUNREACH, ELK_E_CONNECT);
    so_error_case(ENOMEM, ELK_E_NO_RESOURCES);
}

static void test_setup_failures_close_the_socket(void **state)
{
    (void)state;
    elk_lwip_transport_t ctx;
    elk_transport_t t;

    fake_reset();
    elk_lwip_transport_init(&ctx, &t);
    f.socket_ret = -1;
    f.socket_errno = ENFILE;
    assert_int_equal(t.open(t.ctx, &ep4), ELK_E_NO_RESOURCES);
    assert_int_equal(f.closes, 0); /* no socket was made */

    fake_reset();
    f.getfl_ret = -1;
    f.fcntl_errno = EBADF;
    assert_int_equal(t.open(t.ctx, &ep4), ELK_E_IO);
    assert_int_equal(f.closes, 1);

    fake_reset();
    f.setfl_ret = -1;
    f.fcntl_errno = ENOSYS;
    assert_int_equal(t.open(t.ctx, &ep4), ELK_E_IO);
    assert_int_equal(f.closes, 1);

    fake_reset();
    f.nodelay_ret = -1;
    f.nodelay_errno = ENOPROTOOPT;
    assert_int_equal(t.open(t.ctx, &ep4), ELK_E_IO);
    assert_int_equal(f.closes, 1);
    assert_int_equal(elk_lwip_transport_errno(&ctx), ENOPROTOOPT);

    fake_reset();
    f.connect_errno = ENETUNREACH;
    assert_int_equal(t.open(t.ctx, &ep4), ELK_E_CONNECT);
    assert_int_equal(f.closes, 1);

    fake_reset();
    f.connect_errno = ECONNREFUSED;
    assert_int_equal(t.open(t.ctx, &ep4), ELK_E_CONNECT_REFUSED);

    /* lwIP's poll itself failing while connecting. */
    open_connecting(&ctx, &t);
    f.poll_ret = -1;
    f.poll_errno = EBADF;
    assert_int_equal(t.progress(t.ctx), ELK_E_CONNECT);
    assert_int_equal(f.closes, 1);

    /* Re-opening an open transport closes the old socket first. */
    open_connected(&ctx, &t);
    assert_int_equal(t.open(t.ctx, &ep4), ELK_OK);
    assert_int_equal(f.closes, 1);
}

static void test_send(void **state)
{
    (void)state;
    elk_lwip_transport_t ctx;
    elk_transport_t t;
    uint8_t buf[100] = {0};
    unsigned ev;
    open_connected(&ctx, &t);

    f.io_ret = 60;
    assert_int_equal(t.send(t.ctx, buf, sizeof(buf)), 60);
    assert_int_equal(f.io_len, sizeof(buf));
    assert_true(f.io_flags & MSG_DONTWAIT);

    /* Would block: 0, and the wait set now asks for writability too. */
    f.io_ret = -1;
    f.io_errno = EWOULDBLOCK;
    assert_int_equal(t.send(t.ctx, buf, 40), 0);
    assert_int_equal(t.wait(t.ctx, &ev), 3);
    assert_int_equal(ev, ELK_WAIT_READ | ELK_WAIT_WRITE);
    f.io_errno = EAGAIN;
    assert_int_equal(t.send(t.ctx, buf, 40), 0);
    f.io_ret = 40;
    f.io_errno = 0;
    assert_int_equal(t.send(t.ctx, buf, 40), 40);
    assert_int_equal(t.wait(t.ctx, &ev), 3);
    assert_int_equal(ev, ELK_WAIT_READ);

    f.io_ret = -1;
    f.io_errno = ENOMEM;
    assert_int_equal(t.send(t.ctx, buf, 40), ELK_E_NO_RESOURCES);
    f.io_errno = ECONNRESET;
    assert_int_equal(t.send(t.ctx, buf, 40), ELK_E_CLOSED);
    f.io_errno = ENOTCONN;
    assert_int_equal(t.send(t.ctx, buf, 40), ELK_E_CLOSED);
    f.io_errno = EIO;
    assert_int_equal(t.send(t.ctx, buf, 40), ELK_E_IO);
    assert_int_equal(elk_lwip_transport_errno(&ctx), EIO);

    assert_int_equal(t.send(t.ctx, buf, 0), 0);
    assert_int_equal(t.send(t.ctx, NULL, 4), ELK_E_INVALID_ARG);
}

static void test_recv(void **state)
{
    (void)state;
    elk_lwip_transport_t ctx;
    elk_transport_t t;
    uint8_t buf[64];
    open_connected(&ctx, &t);

    f.io_ret = 10;
    assert_int_equal(t.recv(t.ctx, buf, sizeof(buf)), 10);
    assert_int_equal(f.io_len, sizeof(buf));
    assert_true(f.io_flags & MSG_DONTWAIT);

    f.io_ret = -1;
    f.io_errno = EAGAIN;
    assert_int_equal(t.recv(t.ctx, buf, sizeof(buf)), 0);
    f.io_ret = 0;
    f.io_errno = 0;
    assert_int_equal(t.recv(t.ctx, buf, sizeof(buf)), ELK_E_CLOSED);
    f.io_ret = -1;
    f.io_errno = ECONNABORTED;
    assert_int_equal(t.recv(t.ctx, buf, sizeof(buf)), ELK_E_CLOSED);
    f.io_errno = EBADF;
    assert_int_equal(t.recv(t.ctx, buf, sizeof(buf)), ELK_E_IO);
    assert_int_equal(t.recv(t.ctx, buf, 0), 0); /* nothing asked, nothing moved, like send */

    t.close(t.ctx);
    assert_int_equal(t.recv(t.ctx, buf, sizeof(buf)), ELK_E_STATE);
    assert_int_equal(t.send(t.ctx, buf, sizeof(buf)), ELK_E_STATE);
    assert_int_equal(t.progress(t.ctx), ELK_E_STATE);
}

/* The behaviour port/socket gives both ports, where port/lwip used to differ: I/O while
 * connecting waits (0), after a failed connect it is a state error, a local shortage on
 * recv is ELK_E_NO_RESOURCES, a shut-down stream is closed, and the errno kept for logs
 * is the failure's, not a later would-block's. */
static void test_shared_socket_behaviour(void **state)
{
    (void)state;
    elk_lwip_transport_t ctx;
    elk_transport_t t;
    uint8_t buf[16] = {0};

    open_connecting(&ctx, &t);
    f.io_ret = 5;
    assert_int_equal(t.send(t.ctx, buf, sizeof(buf)), 0);
    assert_int_equal(t.recv(t.ctx, buf, sizeof(buf)), 0);
    assert_int_equal(f.io_len, 0); /* nothing reached lwIP */

    f.poll_ret = 1;
    f.poll_revents = POLLOUT;
    f.so_error = ECONNREFUSED;
    assert_int_equal(t.progress(t.ctx), ELK_E_CONNECT_REFUSED);
    assert_int_equal(t.send(t.ctx, buf, sizeof(buf)), ELK_E_STATE);
    assert_int_equal(t.recv(t.ctx, buf, sizeof(buf)), ELK_E_STATE);

    open_connected(&ctx, &t);
    f.io_ret = -1;
    f.io_errno = ENOBUFS;
    assert_int_equal(t.recv(t.ctx, buf, sizeof(buf)), ELK_E_NO_RESOURCES);
    f.io_errno = ESHUTDOWN;
    assert_int_equal(t.recv(t.ctx, buf, sizeof(buf)), ELK_E_CLOSED);
    assert_int_equal(t.send(t.ctx, buf, sizeof(buf)), ELK_E_CLOSED);
    f.io_errno = EAGAIN;
    assert_int_equal(t.recv(t.ctx, buf, sizeof(buf)), 0);
    assert_int_equal(elk_lwip_transport_errno(&ctx), ESHUTDOWN);

    /* An empty host name is refused before any socket is made. */
    fake_reset();
    elk_endpoint_t empty = {"", 6379, NULL};
    assert_int_equal(t.open(t.ctx, &empty), ELK_E_INVALID_ARG);
    assert_int_equal(f.socket_family, 0);
}

static void test_null_context(void **state)
{
    (void)state;
    elk_transport_t t;
    elk_lwip_transport_init(NULL, &t);
    uint8_t b[4];
    unsigned ev = 5;
    assert_int_equal(t.open(t.ctx, &ep4), ELK_E_INVALID_ARG);
    assert_int_equal(t.progress(t.ctx), ELK_E_INVALID_ARG);
    assert_int_equal(t.send(t.ctx, b, 4), ELK_E_INVALID_ARG);
    assert_int_equal(t.recv(t.ctx, b, 4), ELK_E_INVALID_ARG);
    assert_int_equal(t.wait(t.ctx, &ev), -1);
    assert_int_equal(ev, ELK_WAIT_NONE);
    t.close(t.ctx);
    assert_int_equal(elk_lwip_transport_errno(NULL), 0);
}

static void test_wait(void **state)
{
    (void)state;
    fake_reset();
    elk_lwip_waiter_t w[3] = {
        {7, ELK_WAIT_READ, 9}, {-1, ELK_WAIT_READ, 9}, {8, ELK_WAIT_READ | ELK_WAIT_WRITE, 9}};

    /* Only the valid sockets go to lwip_poll, with the timeout; errors count as both. */
    f.poll_ret = 1;
    f.poll_revents = POLLERR;
    assert_int_equal(elk_lwip_wait(w, 3, 250), 1);
    assert_int_equal(f.poll_n_seen, 2);
    assert_int_equal(f.poll_fd_seen, 7);
    assert_int_equal(f.poll_events_seen, POLLIN);
    assert_int_equal(f.poll_timeout_seen, 250);
    assert_int_equal(w[0].ready, ELK_WAIT_READ | ELK_WAIT_WRITE);
    assert_int_equal(w[1].ready, 0);
    assert_int_equal(w[2].ready, 0);

    f.poll_revents = POLLIN;
    assert_int_equal(elk_lwip_wait(w, 3, 0xFFFFFFFFu), 1);
    assert_int_equal(f.poll_timeout_seen, INT32_MAX); /* clamped, not negative */
    assert_int_equal(w[0].ready, ELK_WAIT_READ);

    f.poll_ret = 0;
    assert_int_equal(elk_lwip_wait(w, 3, 5), 0);
    assert_int_equal(w[0].ready, 0);

    f.poll_ret = -1;
    assert_int_equal(elk_lwip_wait(w, 3, 5), ELK_E_IO);

    /* Nothing to wait on: sleeps through lwIP. */
    f.poll_n_seen = 99;
    assert_int_equal(elk_lwip_wait(&w[1], 1, 42), 0);
    assert_int_equal(f.slept, 42);
    assert_int_equal(f.poll_n_seen, 99);
    assert_int_equal(elk_lwip_wait(NULL, 0, 3), 0);
    assert_int_equal(f.slept, 3);
}

int main(void)
{
    return ELK_RUN_TESTS(test_open_sets_nonblocking_and_nodelay, test_immediate_connect,
                         test_ipv6_address, test_connect_failures_through_so_error,
                         test_setup_failures_close_the_socket, test_send, test_recv,
                         test_shared_socket_behaviour, test_null_context, test_wait);
}
