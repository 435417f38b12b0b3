/* SPDX-License-Identifier: MIT */
/*
 * elk-faultproxy: a loopback TCP proxy that injects network faults between a
 * client and one Redis server, switchable while connections are open.
 *
 *   elk-faultproxy --upstream PORT [--listen PORT] [--control PORT]
 *                  [--delay MS] [--jitter MS] [--throttle BYTES_PER_S]
 *                  [--blackhole] [--hold] [--refuse] [--seed N]
 *
 * On start it prints one line to stdout, "<listen_port> <control_port>\n", and
 * flushes, so a harness can `read` both (port 0 = ephemeral, the default).
 * Only 127.0.0.0/8 is ever listened on or connected to: any other address given
 * with --upstream-host is refused, so a test can never reach a real network.
 *
 * Control channel: a line protocol on 127.0.0.1:<control_port> (see
 * tests/tools/README.md). One command per line, one reply line ("OK ..." or
 * "ERR ...") per command:
 *   delay MS [up|down|both]   added one-way delay; order is always preserved
 *   jitter MS                 extra random delay in [0, MS] per chunk (order kept)
 *   throttle BPS              cap each direction of each connection (0 = off)
 *   blackhole                 accept, read and discard everything (no replies)
 *   hold                      stop forwarding, keep the bytes; `pass` releases them
 *   refuse                    close new connections at once
 *   drop [rst|fin]            close every open connection now (default rst)
 *   cut N                     forward N bytes of the next server->client chunk,
 *                             then close that connection (one shot)
 *   pass                      clear every fault (held bytes are then delivered)
 *   status                    counters and current faults
 *   quit                      exit the proxy
 *
 * Single-threaded poll loop; the heap is fine here (this is test tooling).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tool_server.h"

#define MAX_CONNS 256
#define MAX_CTL 8
#define CHUNK_MAX 16384
#define QUEUE_LIMIT (4u << 20) /* stop reading a side while this much waits to go out */

enum { UP = 0, DOWN = 1 }; /* UP: client -> server, DOWN: server -> client */

struct chunk {
    struct chunk *next;
    uint64_t release_at;
    size_t len, off;
    uint8_t data[];
};

struct dir {
    struct chunk *head, *tail;
    size_t queued;
    uint64_t last_release; /* keeps order when jitter would reorder */
    double tokens;         /* throttle bucket */
    uint64_t refill_at;
    uint64_t bytes; /* forwarded */
    bool eof;       /* source closed */
};

struct conn {
    bool used;
    int cfd, sfd;
    bool connecting;
    bool close_after_flush; /* set by cut */
    struct dir d[2];
};

struct ctl {
    bool used;
    int fd;
    char buf[512];
    size_t len;
};

static struct {
    uint32_t delay_ms[2];
    uint32_t jitter_ms;
    uint64_t throttle_bps;
    bool blackhole, hold, refuse;
    long cut_bytes; /* -1 none */
} F;

static struct {
    uint64_t accepted, dropped, cut, refused, discarded;
} S;

static struct conn conns[MAX_CONNS];
static struct ctl ctls[MAX_CTL];
static struct in_addr upstream_addr;
static uint16_t upstream_port;
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static bool quit_requested;

static bool is_loopback(struct in_addr a)
{
    return (ntohl(a.s_addr) >> 24) == 127u;
}

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void free_queue(struct dir *d)
{
    struct chunk *c = d->head;
    while (c) {
        struct chunk *n = c->next;
        free(c);
        c = n;
    }
    d->head = d->tail = NULL;
    d->queued = 0;
}

static void conn_close(struct conn *c, bool rst)
{
    if (!c->used)
        return;
    if (rst) {
        /* linger 0 makes close() send RST, as a crashed peer or a middlebox would */
        struct linger lg = {1, 0};
        setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        if (c->sfd >= 0)
            setsockopt(c->sfd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    close(c->cfd);
    if (c->sfd >= 0)
        close(c->sfd);
    free_queue(&c->d[UP]);
    free_queue(&c->d[DOWN]);
    memset(c, 0, sizeof *c);
}

static void accept_client(int lfd, uint64_t now)
{
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            return;
        if (F.refuse) {
            S.refused++;
            struct linger lg = {1, 0};
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
            close(fd);
            continue;
        }
        struct conn *c = NULL;
        for (int i = 0; i < MAX_CONNS; i++)
            if (!conns[i].used) {
                c = &conns[i];
                break;
            }
        if (!c) {
            fprintf(stderr, "elk-faultproxy: too many connections, closing one\n");
            close(fd);
            continue;
        }
        int sfd = socket(AF_INET, SOCK_STREAM, 0);
        if (sfd < 0) {
            close(fd);
            continue;
        }
        set_nonblock(fd);
        set_nonblock(sfd);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct sockaddr_in sa = {
            .sin_family = AF_INET, .sin_port = htons(upstream_port), .sin_addr = upstream_addr};
        int rc = connect(sfd, (struct sockaddr *)&sa, sizeof sa);
        if (rc < 0 && errno != EINPROGRESS) {
            close(sfd);
            close(fd);
            continue;
        }
        memset(c, 0, sizeof *c);
        c->used = true;
        c->cfd = fd;
        c->sfd = sfd;
        c->connecting = rc < 0;
        for (int k = 0; k < 2; k++) {
            c->d[k].tokens = 0;
            c->d[k].refill_at = now;
        }
        S.accepted++;
    }
}

static uint64_t release_time(struct dir *d, int k, uint64_t now)
{
    uint64_t t = now + F.delay_ms[k];
    if (F.jitter_ms)
        t += tool_rng(&rng_state) % (F.jitter_ms + 1u);
    if (t < d->last_release)
        t = d->last_release; /* never reorder bytes within a stream */
    d->last_release = t;
    return t;
}

/* Read from the source side of direction k into its queue. Returns false on close/error. */
static bool pump_in(struct conn *c, int k, uint64_t now)
{
    int src = k == UP ? c->cfd : c->sfd;
    struct dir *d = &c->d[k];
    uint8_t buf[CHUNK_MAX];
    ssize_t n = recv(src, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) {
        d->eof = true;
        return true;
    }
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    if (F.blackhole) {
        S.discarded += (uint64_t)n;
        return true;
    }
    size_t len = (size_t)n;
    if (k == DOWN && F.cut_bytes >= 0) {
        if ((size_t)F.cut_bytes < len)
            len = (size_t)F.cut_bytes;
        c->close_after_flush = true;
        F.cut_bytes = -1;
        S.cut++;
    }
    struct chunk *ch = malloc(sizeof *ch + len);
    if (!ch)
        return false;
    ch->next = NULL;
    ch->len = len;
    ch->off = 0;
    ch->release_at = release_time(d, k, now);
    memcpy(ch->data, buf, len);
    if (d->tail)
        d->tail->next = ch;
    else
        d->head = ch;
    d->tail = ch;
    d->queued += len;
    return true;
}

/* Write what is due in direction k. Returns false on error. */
static bool pump_out(struct conn *c, int k, uint64_t now)
{
    int dst = k == UP ? c->sfd : c->cfd;
    struct dir *d = &c->d[k];
    if (F.hold)
        return true;
    while (d->head && d->head->release_at <= now) {
        struct chunk *ch = d->head;
        size_t want = ch->len - ch->off;
        if (F.throttle_bps) {
            /* token bucket: refill by elapsed time, burst capped to 1/10 s (min 1 byte) */
            double cap = (double)F.throttle_bps / 10.0;
            if (cap < 1.0)
                cap = 1.0;
            d->tokens += (double)(now - d->refill_at) * (double)F.throttle_bps / 1000.0;
            d->refill_at = now;
            if (d->tokens > cap)
                d->tokens = cap;
            if (d->tokens < 1.0)
                return true;
            if ((double)want > d->tokens)
                want = (size_t)d->tokens;
        }
        ssize_t n = send(dst, ch->data + ch->off, want, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        if (F.throttle_bps)
            d->tokens -= (double)n;
        ch->off += (size_t)n;
        d->queued -= (size_t)n;
        d->bytes += (uint64_t)n;
        if (ch->off < ch->len)
            return true;
        d->head = ch->next;
        if (!d->head)
            d->tail = NULL;
        free(ch);
    }
    return true;
}

static uint64_t next_wake(uint64_t now)
{
    uint64_t best = UINT64_MAX;
    if (F.hold)
        return best;
    for (int i = 0; i < MAX_CONNS; i++) {
        if (!conns[i].used)
            continue;
        for (int k = 0; k < 2; k++) {
            struct dir *d = &conns[i].d[k];
            if (!d->head)
                continue;
            uint64_t t = d->head->release_at;
            if (F.throttle_bps && d->tokens < 1.0) {
                uint64_t need =
                    (uint64_t)((1.0 - d->tokens) * 1000.0 / (double)F.throttle_bps) + 1u;
                if (t < now + need)
                    t = now + need;
            }
            if (t < best)
                best = t;
        }
    }
    return best;
}

static void ctl_reply(struct ctl *cl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ctl_reply(struct ctl *cl, const char *fmt, ...)
{
    char out[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, sizeof out - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof out - 2)
        n = (int)sizeof out - 2;
    out[n++] = '\n';
    /* control replies are tiny; a blocking write on loopback is fine */
    ssize_t w = send(cl->fd, out, (size_t)n, MSG_NOSIGNAL);
    (void)w;
}

static int open_conns(void)
{
    int n = 0;
    for (int i = 0; i < MAX_CONNS; i++)
        n += conns[i].used;
    return n;
}

static void ctl_delay(struct ctl *cl, int argc, char **argv)
{
    uint64_t v = 0;
    if (!tool_parse_u64(argv[1], &v) || v > 600000) {
        ctl_reply(cl, "ERR usage: delay MS [up|down|both] (MS <= 600000)");
        return;
    }
    const char *which = argc > 2 ? argv[2] : "both";
    if (!strcmp(which, "up") || !strcmp(which, "both"))
        F.delay_ms[UP] = (uint32_t)v;
    if (!strcmp(which, "down") || !strcmp(which, "both"))
        F.delay_ms[DOWN] = (uint32_t)v;
    if (strcmp(which, "up") && strcmp(which, "down") && strcmp(which, "both")) {
        ctl_reply(cl, "ERR direction must be up, down or both");
        return;
    }
    ctl_reply(cl, "OK delay up=%u down=%u", F.delay_ms[UP], F.delay_ms[DOWN]);
}

/* jitter MS, throttle BYTES_PER_S, cut N: one number, bounded, into its setting. */
static void ctl_number(struct ctl *cl, int argc, char **argv)
{
    uint64_t v = 0;
    (void)argc;
    if (!strcmp(argv[0], "jitter")) {
        if (!tool_parse_u64(argv[1], &v) || v > 600000) {
            ctl_reply(cl, "ERR usage: jitter MS");
            return;
        }
        F.jitter_ms = (uint32_t)v;
        ctl_reply(cl, "OK jitter %u", F.jitter_ms);
    } else if (!strcmp(argv[0], "throttle")) {
        if (!tool_parse_u64(argv[1], &v)) {
            ctl_reply(cl, "ERR usage: throttle BYTES_PER_S (0 = off)");
            return;
        }
        F.throttle_bps = v;
        ctl_reply(cl, "OK throttle %llu", (unsigned long long)v);
    } else {
        if (!tool_parse_u64(argv[1], &v) || v > 1000000000) {
            ctl_reply(cl, "ERR usage: cut N (bytes of the next server reply chunk to forward)");
            return;
        }
        F.cut_bytes = (long)v;
        ctl_reply(cl, "OK cut %ld", F.cut_bytes);
    }
}

/* blackhole, hold, refuse: a fault switched on until pass. */
static void ctl_flag(struct ctl *cl, int argc, char **argv)
{
    (void)argc;
    if (!strcmp(argv[0], "blackhole"))
        F.blackhole = true;
    else if (!strcmp(argv[0], "hold"))
        F.hold = true;
    else
        F.refuse = true;
    ctl_reply(cl, "OK %s", argv[0]);
}

static void ctl_drop(struct ctl *cl, int argc, char **argv)
{
    bool rst = argc < 2 || !strcmp(argv[1], "rst");
    if (argc > 1 && strcmp(argv[1], "rst") && strcmp(argv[1], "fin")) {
        ctl_reply(cl, "ERR usage: drop [rst|fin]");
        return;
    }
    int n = 0;
    for (int i = 0; i < MAX_CONNS; i++)
        if (conns[i].used) {
            conn_close(&conns[i], rst);
            n++;
        }
    S.dropped += (uint64_t)n;
    ctl_reply(cl, "OK dropped %d (%s)", n, rst ? "rst" : "fin");
}

static void ctl_pass(struct ctl *cl, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    F.delay_ms[UP] = F.delay_ms[DOWN] = 0;
    F.jitter_ms = 0;
    F.throttle_bps = 0;
    F.blackhole = F.hold = F.refuse = false;
    F.cut_bytes = -1;
    ctl_reply(cl, "OK pass");
}

static void ctl_status(struct ctl *cl, int argc, char **argv)
{
    uint64_t up = 0, down = 0;
    (void)argc;
    (void)argv;
    for (int i = 0; i < MAX_CONNS; i++)
        if (conns[i].used) {
            up += conns[i].d[UP].bytes;
            down += conns[i].d[DOWN].bytes;
        }
    ctl_reply(cl,
              "OK conns=%d accepted=%llu dropped=%llu refused=%llu cut=%llu discarded=%llu "
              "open_up_bytes=%llu open_down_bytes=%llu delay_up=%u delay_down=%u jitter=%u "
              "throttle=%llu blackhole=%d hold=%d refuse=%d cut_pending=%ld",
              open_conns(), (unsigned long long)S.accepted, (unsigned long long)S.dropped,
              (unsigned long long)S.refused, (unsigned long long)S.cut,
              (unsigned long long)S.discarded, (unsigned long long)up, (unsigned long long)down,
              F.delay_ms[UP], F.delay_ms[DOWN], F.jitter_ms, (unsigned long long)F.throttle_bps,
              F.blackhole, F.hold, F.refuse, F.cut_bytes);
}

static void ctl_quit(struct ctl *cl, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    ctl_reply(cl, "OK bye");
    quit_requested = true;
}

static const struct {
    const char *name;
    void (*run)(struct ctl *cl, int argc, char **argv);
} ctl_commands[] = {
    {"delay", ctl_delay}, {"jitter", ctl_number}, {"throttle", ctl_number}, {"blackhole", ctl_flag},
    {"hold", ctl_flag},   {"refuse", ctl_flag},   {"drop", ctl_drop},       {"cut", ctl_number},
    {"pass", ctl_pass},   {"status", ctl_status}, {"quit", ctl_quit},
};

static void ctl_command(struct ctl *cl, char *line)
{
    char *argv[4] = {0};
    int argc = 0;
    for (char *tok = strtok(line, " \t\r"); tok && argc < 4; tok = strtok(NULL, " \t\r"))
        argv[argc++] = tok;
    if (argc == 0)
        return;
    for (size_t i = 0; i < sizeof ctl_commands / sizeof ctl_commands[0]; i++)
        if (!strcmp(argv[0], ctl_commands[i].name)) {
            ctl_commands[i].run(cl, argc, argv);
            return;
        }
    ctl_reply(cl,
              "ERR unknown command '%s' (delay jitter throttle blackhole hold refuse drop "
              "cut pass status quit)",
              argv[0]);
}

static void ctl_read(struct ctl *cl)
{
    ssize_t n = recv(cl->fd, cl->buf + cl->len, sizeof cl->buf - 1 - cl->len, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        close(cl->fd);
        cl->used = false;
        return;
    }
    if (n < 0)
        return;
    cl->len += (size_t)n;
    cl->buf[cl->len] = 0;
    char *nl;
    while ((nl = memchr(cl->buf, '\n', cl->len)) != NULL) {
        *nl = 0;
        size_t consumed = (size_t)(nl - cl->buf) + 1;
        char line[sizeof cl->buf];
        memcpy(line, cl->buf, consumed);
        memmove(cl->buf, nl + 1, cl->len - consumed);
        cl->len -= consumed;
        ctl_command(cl, line);
    }
    if (cl->len == sizeof cl->buf - 1) {
        ctl_reply(cl, "ERR line too long");
        cl->len = 0;
    }
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: elk-faultproxy --upstream PORT [--upstream-host 127.x.y.z] [--listen PORT]\n"
            "         [--control PORT] [--delay MS] [--jitter MS] [--throttle BYTES_PER_S]\n"
            "         [--blackhole] [--hold] [--refuse] [--seed N]\n"
            "Prints \"<listen_port> <control_port>\" on stdout; loopback (127.0.0.0/8) only.\n"
            "Control: one command per line on the control port (delay, jitter, throttle,\n"
            "blackhole, hold, refuse, drop [rst|fin], cut N, pass, status, quit).\n");
}

static uint64_t up_port, listen_port, ctl_port;
static bool have_up;
static const char *up_host = "127.0.0.1";

static enum tool_opt option(int o, const char *arg)
{
    uint64_t v;
    switch (o) {
    case 'u':
        have_up = true;
        return tool_parse_port(arg, &up_port) && up_port != 0 ? TOOL_OPT_OK : TOOL_OPT_BAD;
    case 'H':
        up_host = arg;
        return TOOL_OPT_OK;
    case 'l':
        return tool_parse_port(arg, &listen_port) ? TOOL_OPT_OK : TOOL_OPT_BAD;
    case 'c':
        return tool_parse_port(arg, &ctl_port) ? TOOL_OPT_OK : TOOL_OPT_BAD;
    case 'd':
    case 'j':
        if (!tool_parse_u64(arg, &v) || v > 600000)
            return TOOL_OPT_BAD;
        if (o == 'd')
            F.delay_ms[UP] = F.delay_ms[DOWN] = (uint32_t)v;
        else
            F.jitter_ms = (uint32_t)v;
        return TOOL_OPT_OK;
    case 't':
        return tool_parse_u64(arg, &F.throttle_bps) ? TOOL_OPT_OK : TOOL_OPT_BAD;
    case 'b':
        F.blackhole = true;
        return TOOL_OPT_OK;
    case 'o':
        F.hold = true;
        return TOOL_OPT_OK;
    case 'r':
        F.refuse = true;
        return TOOL_OPT_OK;
    default:
        return TOOL_OPT_BAD;
    }
}

static bool check(void)
{
    if (!have_up) {
        usage(stderr);
        return false;
    }
    if (inet_pton(AF_INET, up_host, &upstream_addr) != 1 || !is_loopback(upstream_addr)) {
        fprintf(stderr,
                "elk-faultproxy: upstream host '%s' refused: only numeric 127.0.0.0/8 "
                "addresses are allowed\n",
                up_host);
        return false;
    }
    upstream_port = (uint16_t)up_port;
    return true;
}

static struct pollfd pfds[2 + MAX_CTL + 2 * MAX_CONNS];
static int owner[2 + MAX_CTL + 2 * MAX_CONNS]; /* >=0 conn*2+side, <0 ctl -1-idx */

/* Both descriptors of a connection, each with what it waits for now. */
static size_t poll_conn(size_t np, int i, uint64_t now)
{
    struct conn *c = &conns[i];
    short ce = 0, se = 0;
    if (c->connecting) {
        se = POLLOUT;
    } else {
        if (!c->d[UP].eof && c->d[UP].queued < QUEUE_LIMIT)
            ce |= POLLIN;
        if (!c->d[DOWN].eof && c->d[DOWN].queued < QUEUE_LIMIT)
            se |= POLLIN;
        if (!F.hold && c->d[UP].head && c->d[UP].head->release_at <= now)
            se |= POLLOUT;
        if (!F.hold && c->d[DOWN].head && c->d[DOWN].head->release_at <= now)
            ce |= POLLOUT;
    }
    /* a descriptor with nothing to wait for is left out: a peer that has
     * closed would otherwise report POLLHUP on every round (busy loop while
     * its last bytes are delayed or held) */
    owner[np] = i * 2;
    pfds[np++] = (struct pollfd){.fd = ce ? c->cfd : -1, .events = ce};
    owner[np] = i * 2 + 1;
    pfds[np++] = (struct pollfd){.fd = se ? c->sfd : -1, .events = se};
    return np;
}

static size_t poll_set(int lfd, int cfd, uint64_t now)
{
    size_t np = 0;
    pfds[np++] = (struct pollfd){.fd = lfd, .events = POLLIN};
    pfds[np++] = (struct pollfd){.fd = cfd, .events = POLLIN};
    for (int i = 0; i < MAX_CTL; i++)
        if (ctls[i].used) {
            owner[np] = -1 - i;
            pfds[np++] = (struct pollfd){.fd = ctls[i].fd, .events = POLLIN};
        }
    for (int i = 0; i < MAX_CONNS; i++)
        if (conns[i].used)
            np = poll_conn(np, i, now);
    return np;
}

static void accept_ctl(int cfd)
{
    int fd = accept(cfd, NULL, NULL);
    if (fd < 0)
        return;
    for (int i = 0; i < MAX_CTL; i++)
        if (!ctls[i].used) {
            ctls[i] = (struct ctl){.used = true, .fd = fd};
            return;
        }
    close(fd);
}

/* One ready descriptor of a connection: a finished connect upstream, or bytes in. */
static void conn_ready(size_t p, uint64_t now)
{
    struct conn *c = &conns[owner[p] / 2];
    int side = owner[p] % 2; /* 0 client fd, 1 server fd */
    if (!c->used || pfds[p].fd < 0 || (side == 0 ? c->cfd : c->sfd) != pfds[p].fd)
        return; /* not polled, or closed earlier in this round */
    short re = pfds[p].revents;
    if (!re)
        return;
    if (side == 1 && c->connecting) {
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(c->sfd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err)
            conn_close(c, true); /* upstream down: the client sees RST as with a dead server */
        else
            c->connecting = false;
        return;
    }
    if ((re & (POLLIN | POLLHUP | POLLERR)) && !pump_in(c, side == 0 ? UP : DOWN, now))
        conn_close(c, true);
}

/* flush due data on every connection, then apply closes */
static void flush_all(uint64_t now)
{
    for (int i = 0; i < MAX_CONNS; i++) {
        struct conn *c = &conns[i];
        if (!c->used || c->connecting)
            continue;
        if (!pump_out(c, UP, now) || !pump_out(c, DOWN, now)) {
            conn_close(c, true);
            continue;
        }
        if (c->close_after_flush && !c->d[DOWN].head) {
            conn_close(c, false);
            continue;
        }
        /* a side that closed: once its bytes are through, close the pair */
        if ((c->d[UP].eof && !c->d[UP].head) || (c->d[DOWN].eof && !c->d[DOWN].head))
            conn_close(c, false);
    }
}

static int serve(int lfd, int cfd)
{
    while (!quit_requested) {
        uint64_t now = tool_now_ms();
        size_t np = poll_set(lfd, cfd, now);
        uint64_t wake = next_wake(now);
        int timeout = -1;
        if (wake != UINT64_MAX)
            timeout = wake <= now ? 0 : (int)(wake - now > 1000 ? 1000 : wake - now);
        int rc = poll(pfds, np, timeout);
        if (rc < 0 && errno != EINTR) {
            perror("elk-faultproxy: poll");
            return 1;
        }
        now = tool_now_ms();
        if (pfds[0].revents)
            accept_client(lfd, now);
        if (pfds[1].revents)
            accept_ctl(cfd);
        for (size_t p = 2; p < np; p++) {
            if (owner[p] < 0 && pfds[p].revents) {
                struct ctl *cl = &ctls[-1 - owner[p]];
                if (cl->used && cl->fd == pfds[p].fd)
                    ctl_read(cl);
            }
        }
        for (size_t p = 2; p < np; p++)
            if (owner[p] >= 0)
                conn_ready(p, now);
        flush_all(now);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {TOOL_ARG("upstream", 'u'),
                                         TOOL_ARG("upstream-host", 'H'),
                                         TOOL_ARG("listen", 'l'),
                                         TOOL_ARG("control", 'c'),
                                         TOOL_ARG("delay", 'd'),
                                         TOOL_ARG("jitter", 'j'),
                                         TOOL_ARG("throttle", 't'),
                                         TOOL_FLAG("blackhole", 'b'),
                                         TOOL_FLAG("hold", 'o'),
                                         TOOL_FLAG("refuse", 'r'),
                                         TOOL_ARG("seed", 's'),
                                         TOOL_FLAG("help", 'h'),
                                         {0}};
    /* two listening sockets: the proxy's own, then the control port */
    const struct tool_spec spec = {"elk-faultproxy",          opts,      usage, option, check, 2,
                                   {&listen_port, &ctl_port}, &rng_state};
    int lfd[TOOL_MAX_LISTEN];
    F.cut_bytes = -1;
    int rc = tool_start(argc, argv, &spec, lfd);
    return rc >= 0 ? rc : serve(lfd[0], lfd[1]);
}
