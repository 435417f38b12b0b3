/* SPDX-License-Identifier: MIT */
/* Scripted transport (see fake_transport.h). */
#include "fake_transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elk/err.h"

static void fake_die(const char *what)
{
    /* A test that overfills a fake is a broken test: stop loudly, not silently wrong. */
    fprintf(stderr, "fake_transport: %s\n", what);
    abort();
}

void fake_transport_init(fake_transport_t *ft)
{
    memset(ft, 0, sizeof *ft);
    ft->fd = 42;
    ft->wait_events = ELK_WAIT_READ;
}

/* The head of a script queue: returns its index and moves the head on. */
static size_t ft_take(size_t *head, size_t *n)
{
    size_t i = *head;
    *head = (i + 1) % FAKE_TRANSPORT_STEPS;
    (*n)--;
    return i;
}

static int ft_open(void *ctx, const elk_endpoint_t *ep)
{
    fake_transport_t *ft = ctx;
    int r = ELK_OK;
    ft->open_calls++;
    if (ft->open_n > 0) {
        r = ft->open_q[ft_take(&ft->open_head, &ft->open_n)];
    }
    if (ep != NULL) {
        ft->last_endpoint = *ep;
    }
    ft->ready = false;
    ft->is_open = (r == ELK_OK);
    return r;
}

static int ft_progress(void *ctx)
{
    fake_transport_t *ft = ctx;
    int r = 1;
    ft->progress_calls++;
    if (!ft->is_open) {
        return ELK_E_STATE;
    }
    if (ft->progress_n > 0) {
        r = ft->progress_q[ft_take(&ft->progress_head, &ft->progress_n)];
    }
    if (r == 1) {
        ft->ready = true;
    }
    return r;
}

static int32_t ft_send(void *ctx, const uint8_t *buf, size_t len)
{
    fake_transport_t *ft = ctx;
    int32_t lim = -1; /* -1 here: no limit scripted */
    size_t n = len;
    ft->send_calls++;
    if (!ft->is_open) {
        return ELK_E_STATE;
    }
    if (ft->send_n > 0) {
        lim = ft->send_q[ft_take(&ft->send_head, &ft->send_n)];
        if (lim <= 0) {
            return lim;
        }
        if ((size_t)lim < n) {
            n = (size_t)lim;
        }
    }
    if (n > INT32_MAX) {
        n = INT32_MAX;
    }
    ft->tx_total += n;
    const uint8_t *rec = NULL;
    if (ft->tx_len + n <= FAKE_TRANSPORT_TX_CAP) {
        memcpy(ft->tx + ft->tx_len, buf, n);
        rec = ft->tx + ft->tx_len;
        ft->tx_len += n;
    } else {
        ft->tx_overflow = true;
    }
    if (ft->on_send != NULL) {
        ft->on_send(ft->on_send_user, ft, rec != NULL ? rec : buf, n);
    }
    return (int32_t)n;
}

static int32_t ft_recv(void *ctx, uint8_t *buf, size_t len)
{
    fake_transport_t *ft = ctx;
    ft->recv_calls++;
    if (!ft->is_open) {
        return ELK_E_STATE;
    }
    if (ft->rx_n == 0 || len == 0) {
        return 0;
    }
    fake_rx_step_t *s = &ft->rx_q[ft->rx_head];
    if (s->len == 0) {
        int32_t r = s->result;
        ft->rx_head = (ft->rx_head + 1) % FAKE_TRANSPORT_STEPS;
        ft->rx_n--;
        return r;
    }
    /* Like a socket, hand over every byte that has arrived, across pushed chunks, up to
     * len: a short read then means "nothing more now" (the contract in platform.h). A
     * scripted result (close, error) stays for the next call. */
    size_t got = 0;
    while (got < len && ft->rx_n > 0 && ft->rx_q[ft->rx_head].len > 0) {
        s = &ft->rx_q[ft->rx_head];
        size_t n = s->len < len - got ? s->len : len - got;
        memcpy(buf + got, ft->rx + s->off, n);
        s->off += n;
        s->len -= n;
        got += n;
        if (s->len == 0) {
            ft->rx_head = (ft->rx_head + 1) % FAKE_TRANSPORT_STEPS;
            ft->rx_n--;
        }
    }
    return (int32_t)got;
}

static void ft_close(void *ctx)
{
    fake_transport_t *ft = ctx;
    ft->close_calls++;
    ft->is_open = false;
    ft->ready = false;
}

static int ft_wait(void *ctx, unsigned *events)
{
    fake_transport_t *ft = ctx;
    ft->wait_calls++;
    if (!ft->is_open) {
        if (events != NULL) {
            *events = ELK_WAIT_NONE;
        }
        return -1;
    }
    if (events != NULL) {
        *events = ft->wait_events;
    }
    return ft->fd;
}

elk_transport_t fake_transport_iface(fake_transport_t *ft)
{
    elk_transport_t t = {ft, ft_open, ft_progress, ft_send, ft_recv, ft_close, ft_wait};
    return t;
}

#define FT_ENQUEUE(ft, q, head, n, value)                                                          \
    do {                                                                                           \
        if ((ft)->n >= FAKE_TRANSPORT_STEPS) {                                                     \
            fake_die("script queue full (FAKE_TRANSPORT_STEPS)");                                  \
        }                                                                                          \
        (ft)->q[((ft)->head + (ft)->n) % FAKE_TRANSPORT_STEPS] = (value);                          \
        (ft)->n++;                                                                                 \
    } while (0)

void fake_transport_script_open(fake_transport_t *ft, int result)
{
    FT_ENQUEUE(ft, open_q, open_head, open_n, result);
}

void fake_transport_script_progress(fake_transport_t *ft, int result)
{
    FT_ENQUEUE(ft, progress_q, progress_head, progress_n, result);
}

void fake_transport_script_send(fake_transport_t *ft, int32_t result)
{
    FT_ENQUEUE(ft, send_q, send_head, send_n, result);
}

/* Move the unread bytes of every queued chunk to the front of rx. */
static void ft_rx_compact(fake_transport_t *ft)
{
    size_t w = 0;
    for (size_t i = 0; i < ft->rx_n; i++) {
        fake_rx_step_t *s = &ft->rx_q[(ft->rx_head + i) % FAKE_TRANSPORT_STEPS];
        if (s->len > 0) {
            memmove(ft->rx + w, ft->rx + s->off, s->len);
            s->off = w;
            w += s->len;
        }
    }
    ft->rx_used = w;
}

void fake_transport_push_rx(fake_transport_t *ft, const void *data, size_t len)
{
    if (len == 0) {
        return;
    }
    if (ft->rx_used + len > FAKE_TRANSPORT_RX_CAP) {
        ft_rx_compact(ft);
        if (ft->rx_used + len > FAKE_TRANSPORT_RX_CAP) {
            fake_die("rx buffer full (FAKE_TRANSPORT_RX_CAP)");
        }
    }
    memcpy(ft->rx + ft->rx_used, data, len);
    fake_rx_step_t s = {ft->rx_used, len, 0};
    ft->rx_used += len;
    FT_ENQUEUE(ft, rx_q, rx_head, rx_n, s);
}

void fake_transport_push_rx_str(fake_transport_t *ft, const char *s)
{
    fake_transport_push_rx(ft, s, strlen(s));
}

void fake_transport_push_rx_split(fake_transport_t *ft, const char *s, size_t chunk)
{
    size_t len = strlen(s);
    if (chunk == 0) {
        chunk = 1;
    }
    for (size_t off = 0; off < len; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        fake_transport_push_rx(ft, s + off, n);
    }
}

void fake_transport_push_rx_result(fake_transport_t *ft, int32_t result)
{
    fake_rx_step_t s = {0, 0, result};
    FT_ENQUEUE(ft, rx_q, rx_head, rx_n, s);
}

void fake_transport_clear_rx(fake_transport_t *ft)
{
    ft->rx_head = 0;
    ft->rx_n = 0;
    ft->rx_used = 0;
}

size_t fake_transport_rx_pending(const fake_transport_t *ft)
{
    return ft->rx_n;
}

const uint8_t *fake_transport_sent(const fake_transport_t *ft, size_t *len)
{
    if (len != NULL) {
        *len = ft->tx_len;
    }
    return ft->tx;
}

bool fake_transport_sent_eq(const fake_transport_t *ft, const char *s)
{
    size_t n = strlen(s);
    if (n != ft->tx_len || ft->tx_overflow) {
        fprintf(stderr, "fake_transport: sent %zu bytes: \"%.*s\"\n  expected %zu: \"%s\"\n",
                ft->tx_len, (int)(ft->tx_len > 400 ? 400 : ft->tx_len), (const char *)ft->tx, n, s);
        return false;
    }
    if (memcmp(ft->tx, s, n) != 0) {
        fprintf(stderr, "fake_transport: sent \"%.*s\"\n  expected \"%s\"\n", (int)n,
                (const char *)ft->tx, s);
        return false;
    }
    return true;
}

void fake_transport_clear_sent(fake_transport_t *ft)
{
    ft->tx_len = 0;
    ft->tx_overflow = false;
}

/* Parse "<prefix><digits>\r\n" at *pos; returns 1 ok, 0 incomplete, -1 malformed. */
static int ft_parse_len(const uint8_t *b, size_t n, size_t *pos, char prefix, size_t *out)
{
    size_t p = *pos;
    size_t v = 0;
    if (p >= n) {
        return 0;
    }
    if (b[p] != (uint8_t)prefix) {
        return -1;
    }
    p++;
    size_t digits = 0;
    while (p < n && b[p] >= '0' && b[p] <= '9') {
        v = v * 10u + (size_t)(b[p] - '0');
        if (v > FAKE_TRANSPORT_TX_CAP) {
            return -1;
        }
        p++;
        digits++;
    }
    if (p + 1 >= n) {
        return p >= n || b[p] == '\r' ? 0 : -1;
    }
    if (digits == 0 || b[p] != '\r' || b[p + 1] != '\n') {
        return -1;
    }
    *pos = p + 2;
    *out = v;
    return 1;
}

int fake_transport_pop_command(fake_transport_t *ft, fake_cmd_t *cmd)
{
    const uint8_t *b = ft->tx;
    size_t n = ft->tx_len;
    size_t pos = 0, argc = 0;
    int r = ft_parse_len(b, n, &pos, '*', &argc);
    if (r <= 0) {
        return r;
    }
    if (argc == 0 || argc > FAKE_CMD_MAX_ARGS) {
        return -1;
    }
    /* First find the end so the command can be moved out as a whole. */
    size_t offs[FAKE_CMD_MAX_ARGS], lens[FAKE_CMD_MAX_ARGS];
    for (size_t i = 0; i < argc; i++) {
        size_t len = 0;
        r = ft_parse_len(b, n, &pos, '$', &len);
        if (r <= 0) {
            return r;
        }
        if (pos + len + 2 > n) {
            return 0;
        }
        if (b[pos + len] != '\r' || b[pos + len + 1] != '\n') {
            return -1;
        }
        offs[i] = pos;
        lens[i] = len;
        pos += len + 2;
    }
    /* Keep the popped command's bytes alive at the end of tx: rotate it behind the rest. */
    static uint8_t scratch[FAKE_TRANSPORT_TX_CAP];
    size_t rest = n - pos;
    memcpy(scratch, b, pos);
    memmove(ft->tx, ft->tx + pos, rest);
    memcpy(ft->tx + rest, scratch, pos);
    ft->tx_len = rest;
    cmd->argc = argc;
    for (size_t i = 0; i < argc; i++) {
        cmd->argv[i] = ft->tx + rest + offs[i];
        cmd->len[i] = lens[i];
    }
    return 1;
}

bool fake_cmd_arg_eq(const fake_cmd_t *cmd, size_t i, const char *s)
{
    size_t n = strlen(s);
    return i < cmd->argc && cmd->len[i] == n && memcmp(cmd->argv[i], s, n) == 0;
}

bool fake_cmd_is(const fake_cmd_t *cmd, const char *s)
{
    size_t n = strlen(s);
    if (cmd->argc == 0 || cmd->len[0] != n) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        uint8_t a = cmd->argv[0][i], c = (uint8_t)s[i];
        if (a >= 'a' && a <= 'z') {
            a = (uint8_t)(a - 32);
        }
        if (c >= 'a' && c <= 'z') {
            c = (uint8_t)(c - 32);
        }
        if (a != c) {
            return false;
        }
    }
    return true;
}
