/* SPDX-License-Identifier: MIT */
/* Blocking transport helpers for integration tests (see fleet.h). */
#define _GNU_SOURCE
#include <string.h>

#include "elk/port_posix.h"
#include "fleet.h"

/* Wait for what the transport asks for, until the absolute deadline. */
static int wait_for(const elk_transport_t *t, uint64_t deadline)
{
    elk_wait_t w;
    unsigned ev = 0;
    w.fd = t->wait(t->ctx, &ev);
    w.events = ev;
    if (w.fd < 0) {
        return ELK_E_STATE;
    }
    if (elk_posix_now_ms() >= deadline) {
        return ELK_E_TIMEOUT;
    }
    int rc = elk_posix_wait(&w, 1, deadline, NULL);
    return rc < 0 ? rc : ELK_OK;
}

int elk_tf_xport_connect(const elk_transport_t *t, const elk_endpoint_t *ep, unsigned timeout_ms)
{
    uint64_t deadline = elk_posix_now_ms() + timeout_ms;
    int rc = t->open(t->ctx, ep);
    if (rc < 0) {
        return rc;
    }
    for (;;) {
        rc = t->progress(t->ctx);
        if (rc != 0) {
            return rc;
        }
        rc = wait_for(t, deadline);
        if (rc == ELK_E_TIMEOUT) {
            return ELK_E_CONNECT_TIMEOUT;
        }
        if (rc < 0) {
            return rc;
        }
    }
}

int elk_tf_xport_send_all(const elk_transport_t *t, const void *buf, size_t len,
                          unsigned timeout_ms)
{
    uint64_t deadline = elk_posix_now_ms() + timeout_ms;
    const uint8_t *p = (const uint8_t *)buf;
    size_t done = 0;
    while (done < len) {
        int32_t n = t->send(t->ctx, p + done, len - done);
        if (n < 0) {
            return (int)n;
        }
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        int rc = wait_for(t, deadline);
        if (rc < 0) {
            return rc;
        }
    }
    return ELK_OK;
}

int elk_tf_xport_recv_until(const elk_transport_t *t, uint8_t *buf, size_t cap,
                            const char *terminator, unsigned timeout_ms, size_t *len)
{
    uint64_t deadline = elk_posix_now_ms() + timeout_ms;
    size_t got = 0;
    size_t tlen = terminator != NULL ? strlen(terminator) : 0;
    *len = 0;
    for (;;) {
        if (tlen > 0 && got >= tlen && memmem(buf, got, terminator, tlen) != NULL) {
            break;
        }
        if (got + 1 >= cap) {
            return ELK_E_BUF_TOO_SMALL;
        }
        int32_t n = t->recv(t->ctx, buf + got, cap - 1 - got);
        if (n > 0) {
            got += (size_t)n;
            buf[got] = '\0';
            *len = got;
            continue;
        }
        if (n == ELK_E_CLOSED && terminator == NULL) {
            break;
        }
        if (n < 0) {
            return (int)n;
        }
        int rc = wait_for(t, deadline);
        if (rc < 0) {
            return rc;
        }
    }
    if (got < cap) {
        buf[got] = '\0';
    }
    *len = got;
    return ELK_OK;
}

int elk_tf_xport_ping(const elk_transport_t *t, unsigned timeout_ms)
{
    uint8_t buf[64];
    size_t len;
    int rc = elk_tf_xport_send_all(t, "*1\r\n$4\r\nPING\r\n", 14, timeout_ms);
    if (rc == ELK_OK) {
        rc = elk_tf_xport_recv_until(t, buf, sizeof buf, "\r\n", timeout_ms, &len);
    }
    if (rc == ELK_OK && strcmp((char *)buf, "+PONG\r\n") != 0) {
        rc = ELK_E_UNEXPECTED_REPLY;
    }
    return rc;
}
