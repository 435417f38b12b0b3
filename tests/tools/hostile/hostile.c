/* SPDX-License-Identifier: MIT */
/*
 * elk-hostile-server: a TCP server on 127.0.0.1 that looks like Redis to a
 * client and then misbehaves in one chosen way, so a client's RESP decoder and
 * connection handling can be tested against every pathology a broken server,
 * a middlebox or an attacker could produce.
 *
 *   elk-hostile-server --mode MODE [--port PORT] [--after N] [--seed N]
 *                      [--drip-ms MS] [--only CMD[,CMD...]]
 *
 * Prints the listening port on stdout ("<port>\n") and flushes.
 * It parses the client's commands (RESP arrays of bulk strings, or inline) and
 * answers the first N commands (--after, default 0) like a well-behaved Redis
 * (PING, AUTH, HELLO, SELECT, SET, GET, DEL, EVAL, EVALSHA, SCRIPT, CONFIG,
 * CLIENT, PUBLISH ...). From then on every command gets the pathology of MODE;
 * with --only, only the commands named there (e.g. EVALSHA,EVAL; PROBE and SAFETY name
 * the vote-hygiene probe and the safety check, EVALs otherwise spared) do, and every
 * other command is answered well:
 *
 *   valid       never misbehave (control case)
 *   random      random bytes (seeded by --seed), then close
 *   truncated   the first half of a valid reply, then close
 *   huge        "$9999999999999999999\r\n" (length overflows int64)
 *   huge-array  "*2147483648\r\n" (more elements than any client can hold)
 *   negative    "$-2\r\n" (negative length other than -1)
 *   deep        "*1\r\n" repeated 100000 times, then ":1\r\n"
 *   wrong-type  a reply of the wrong type: ":1" to AUTH/HELLO/SELECT/PING,
 *               "$3\r\nabc" to SET, "+OK" to EVAL/EVALSHA/DEL, ...
 *   unsolicited a reply before any request (on connect) and two replies per command
 *   endless     "+" then an endless line with no CRLF (until the client leaves)
 *   drip        a valid reply, one byte every --drip-ms (default 100)
 *   garbage     valid replies for --after commands (default 3 in this mode), then garbage
 *   bad-type    a reply that starts with a byte no RESP version defines ('@')
 *   silent      read commands and never answer
 *   close       close the connection as soon as a command arrives
 *
 * The server is single-threaded (poll). Loopback only.
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
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "elk/lock_scripts.h"
#include "tool_server.h"

#define MAX_CONNS 64
#define IN_MAX 65536

enum mode {
    M_VALID,
    M_RANDOM,
    M_TRUNCATED,
    M_HUGE,
    M_HUGE_ARRAY,
    M_NEGATIVE,
    M_DEEP,
    M_WRONG_TYPE,
    M_UNSOLICITED,
    M_ENDLESS,
    M_DRIP,
    M_GARBAGE,
    M_BAD_TYPE,
    M_SILENT,
    M_CLOSE,
    M_COUNT_
};

static const char *const mode_names[M_COUNT_] = {
    "valid",    "random",  "truncated",  "huge",        "huge-array",
    "negative", "deep",    "wrong-type", "unsolicited", "endless",
    "drip",     "garbage", "bad-type",   "silent",      "close"};

struct conn {
    bool used;
    int fd;
    uint8_t in[IN_MAX];
    size_t in_len;
    uint8_t *out; /* pending output */
    size_t out_len, out_off, out_cap;
    bool close_after; /* close once out is flushed */
    bool endless;     /* keep streaming filler */
    bool drip;        /* the pathology started: one byte per drip_ms from now on */
    uint64_t next_drip;
    uint64_t commands;
};

/* The modes whose pathology is one fixed text (sent as out_str sends: up to a NUL). */
static const char *const fixed_reply[M_COUNT_] = {
    [M_HUGE] = "$9999999999999999999\r\n",
    [M_HUGE_ARRAY] = "*2147483648\r\n",
    [M_NEGATIVE] = "$-2\r\n",
    [M_GARBAGE] = "+OK\r\n\x01\xff garbage \x00\r\n$$$\r\n",
    [M_BAD_TYPE] = "@what\r\n",
};

static enum mode mode = M_VALID;
static long after = -1;
static uint32_t drip_ms = 100;
static uint64_t rng_state = 1;
static const char *only_cmds; /* comma-separated, NULL: every command */
static struct conn conns[MAX_CONNS];

static void out_append(struct conn *c, const void *p, size_t n)
{
    if (c->out_len + n > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 4096;
        while (cap < c->out_len + n)
            cap *= 2;
        uint8_t *nb = realloc(c->out, cap);
        if (!nb) {
            fprintf(stderr, "elk-hostile-server: out of memory\n");
            exit(1);
        }
        c->out = nb;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
}

static void out_str(struct conn *c, const char *s)
{
    out_append(c, s, strlen(s));
}

static void conn_close(struct conn *c)
{
    close(c->fd);
    free(c->out);
    memset(c, 0, sizeof *c);
}

/* arg1 (the first 63 bytes of an argument) names script `text`: its SHA1 after EVALSHA,
 * the start of its text after EVAL. */
static bool script_is(const char *cmd, const char *arg1, const char *text, const char *sha1)
{
    if (arg1 == NULL) {
        return false;
    }
    if (!strcasecmp(cmd, "EVALSHA")) {
        return strcmp(arg1, sha1) == 0;
    }
    return !strcasecmp(cmd, "EVAL") && strlen(arg1) >= 20 && strncmp(text, arg1, strlen(arg1)) == 0;
}

static long long wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What a well-behaved Redis 7 would answer (values are plausible, not stored): ACQUIRE
 * and EXTEND {1, TIME in us, the fleet marker made a day ago}, PROBE a server up for a day
 * that kept its marker. */
static void valid_reply(char *buf, size_t cap, const char *cmd, const char *arg1)
{
    if (script_is(cmd, arg1, ELK_LOCK_SCRIPT_ACQUIRE, ELK_LOCK_SCRIPT_ACQUIRE_SHA1) ||
        script_is(cmd, arg1, ELK_LOCK_SCRIPT_EXTEND, ELK_LOCK_SCRIPT_EXTEND_SHA1))
        snprintf(buf, cap, "*3\r\n:1\r\n:%lld\r\n:%lld\r\n", wall_ms() * 1000,
                 wall_ms() - 86400000);
    else if (script_is(cmd, arg1, ELK_LOCK_SCRIPT_PROBE, ELK_LOCK_SCRIPT_PROBE_SHA1))
        snprintf(buf, cap,
                 "*5\r\n$40\r\n0123456789abcdef0123456789abcdef01234567\r\n$5\r\n86400\r\n$40\r\n"
                 "fedcba9876543210fedcba9876543210fedcba98\r\n$1\r\n1\r\n:%lld\r\n",
                 wall_ms());
    else if (script_is(cmd, arg1, ELK_LOCK_SCRIPT_SAFETY, ELK_LOCK_SCRIPT_SAFETY_SHA1))
        snprintf(buf, cap, "*2\r\n$10\r\nnoeviction\r\n$1\r\n1\r\n");
    else if (!strcasecmp(cmd, "PING"))
        snprintf(buf, cap, "+PONG\r\n");
    else if (!strcasecmp(cmd, "HELLO")) {
        if (arg1 && !strcmp(arg1, "3"))
            snprintf(
                buf, cap,
                "%%7\r\n+server\r\n+redis\r\n+version\r\n+7.0.15\r\n+proto\r\n:3\r\n+id\r\n:7\r\n"
                "+mode\r\n+standalone\r\n+role\r\n+master\r\n+modules\r\n*0\r\n");
        else
            snprintf(buf, cap,
                     "*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n"
                     "$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:7\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n"
                     "$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n");
    } else if (!strcasecmp(cmd, "GET"))
        snprintf(buf, cap, "$-1\r\n");
    else if (!strcasecmp(cmd, "DEL") || !strcasecmp(cmd, "EXISTS") || !strcasecmp(cmd, "PUBLISH") ||
             !strcasecmp(cmd, "EVAL") || !strcasecmp(cmd, "EVALSHA") || !strcasecmp(cmd, "INCR") ||
             !strcasecmp(cmd, "PEXPIRE"))
        snprintf(buf, cap, ":1\r\n");
    else if (!strcasecmp(cmd, "SCRIPT") && arg1 && !strcasecmp(arg1, "LOAD"))
        snprintf(buf, cap, "$40\r\n0123456789abcdef0123456789abcdef01234567\r\n");
    else if (!strcasecmp(cmd, "CONFIG"))
        snprintf(buf, cap, "*0\r\n");
    else
        snprintf(buf, cap, "+OK\r\n");
}

/* A reply of a type the client cannot have expected for this command. */
static const char *wrong_reply(const char *cmd)
{
    if (!strcasecmp(cmd, "AUTH") || !strcasecmp(cmd, "HELLO") || !strcasecmp(cmd, "SELECT") ||
        !strcasecmp(cmd, "PING"))
        return ":1\r\n";
    if (!strcasecmp(cmd, "SET"))
        return "$3\r\nabc\r\n";
    if (!strcasecmp(cmd, "EVAL") || !strcasecmp(cmd, "EVALSHA") || !strcasecmp(cmd, "DEL"))
        return "+OK\r\n";
    if (!strcasecmp(cmd, "GET"))
        return "*2\r\n:1\r\n:2\r\n";
    return "%1\r\n:1\r\n:2\r\n";
}

static bool targeted(const char *cmd)
{
    if (!only_cmds)
        return true;
    size_t n = strlen(cmd);
    for (const char *p = only_cmds; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && strncasecmp(p, cmd, n) == 0)
            return true;
        p += l + (e ? 1 : 0);
    }
    return false;
}

static void respond(struct conn *c, const char *cmd, const char *arg1, uint64_t now)
{
    char valid[512];
    valid_reply(valid, sizeof valid, cmd, arg1);
    /* The vote-hygiene PROBE and the safety check are EVALs too; each is a target only
     * when --only names it ("PROBE", "SAFETY"): a server whose probe fails never gets a
     * vote, and a test of the lease scripts' replies would never see one sent. */
    if (script_is(cmd, arg1, ELK_LOCK_SCRIPT_PROBE, ELK_LOCK_SCRIPT_PROBE_SHA1)) {
        cmd = "PROBE";
    } else if (script_is(cmd, arg1, ELK_LOCK_SCRIPT_SAFETY, ELK_LOCK_SCRIPT_SAFETY_SHA1)) {
        cmd = "SAFETY";
    }
    if (!targeted(cmd)) {
        out_str(c, valid);
        return;
    }
    long valid_first = after >= 0 ? after : (mode == M_GARBAGE ? 3 : 0);
    c->commands++;
    if (mode == M_VALID || (long)c->commands <= valid_first) {
        out_str(c, valid);
        return;
    }
    if (fixed_reply[mode] != NULL) {
        out_str(c, fixed_reply[mode]);
        return;
    }
    switch (mode) {
    case M_RANDOM: {
        size_t n = 1 + (size_t)(tool_rng(&rng_state) % 512);
        for (size_t i = 0; i < n; i++) {
            uint8_t b = (uint8_t)tool_rng(&rng_state);
            out_append(c, &b, 1);
        }
        c->close_after = true;
        break;
    }
    case M_TRUNCATED: {
        size_t n = strlen(valid);
        /* a bulk reply is more interesting cut: "$10\r\nhello" */
        if (!strcasecmp(cmd, "GET") || n < 4) {
            out_str(c, "$10\r\nhello");
        } else {
            out_append(c, valid, n / 2);
        }
        c->close_after = true;
        break;
    }
    case M_DEEP:
        for (int i = 0; i < 100000; i++)
            out_str(c, "*1\r\n");
        out_str(c, ":1\r\n");
        break;
    case M_WRONG_TYPE:
        out_str(c, wrong_reply(cmd));
        break;
    case M_UNSOLICITED:
        out_str(c, valid);
        out_str(c, ":42\r\n");
        break;
    case M_ENDLESS:
        out_str(c, "+");
        c->endless = true;
        break;
    case M_DRIP:
        out_str(c, valid);
        if (!c->drip) {
            c->drip = true;
            c->next_drip = now + drip_ms;
        }
        break;
    case M_SILENT:
        break;
    case M_CLOSE:
        c->close_after = true;
        break;
    default:
        break;
    }
}

/* Parse as many complete commands as are buffered. Returns false on a client protocol error. */
static bool parse_commands(struct conn *c, uint64_t now)
{
    for (;;) {
        if (c->in_len == 0)
            return true;
        uint8_t *p = c->in, *end = c->in + c->in_len;
        char cmd[64] = "", arg1[64] = "";
        if (*p != '*') {
            /* inline command: one line of words */
            uint8_t *nl = memchr(p, '\n', c->in_len);
            if (!nl)
                return c->in_len < IN_MAX;
            size_t l = (size_t)(nl - p);
            char line[256];
            if (l >= sizeof line)
                l = sizeof line - 1;
            memcpy(line, p, l);
            line[l] = 0;
            sscanf(line, "%63s %63s", cmd, arg1);
            size_t used = (size_t)(nl + 1 - c->in);
            memmove(c->in, c->in + used, c->in_len - used);
            c->in_len -= used;
            if (cmd[0])
                respond(c, cmd, arg1[0] ? arg1 : NULL, now);
            continue;
        }
        uint8_t *nl = memchr(p, '\n', c->in_len);
        if (!nl)
            return c->in_len < IN_MAX;
        long argc = strtol((char *)p + 1, NULL, 10);
        if (argc < 1 || argc > 1024)
            return false;
        uint8_t *q = nl + 1;
        bool complete = true;
        for (long i = 0; i < argc; i++) {
            if (q >= end || *q != '$') {
                complete = q >= end;
                if (!complete)
                    return false;
                break;
            }
            uint8_t *l = memchr(q, '\n', (size_t)(end - q));
            if (!l) {
                complete = false;
                break;
            }
            long len = strtol((char *)q + 1, NULL, 10);
            if (len < 0 || len > IN_MAX)
                return false;
            uint8_t *data = l + 1;
            if (data + len + 2 > end) {
                complete = false;
                break;
            }
            char *dst = i == 0 ? cmd : (i == 1 ? arg1 : NULL);
            if (dst) {
                size_t cl = (size_t)len < 63 ? (size_t)len : 63;
                memcpy(dst, data, cl);
                dst[cl] = 0;
            }
            q = data + len + 2;
        }
        if (!complete)
            return c->in_len < IN_MAX;
        size_t used = (size_t)(q - c->in);
        memmove(c->in, c->in + used, c->in_len - used);
        c->in_len -= used;
        respond(c, cmd, arg1[0] ? arg1 : NULL, now);
    }
}

/* Write what may be written now. Returns false when the connection is finished. */
static bool flush_out(struct conn *c, uint64_t now)
{
    if (c->endless && c->out_off == c->out_len) {
        static const char filler[] = "endless-line-without-crlf-";
        c->out_len = c->out_off = 0;
        for (int i = 0; i < 64; i++)
            out_append(c, filler, sizeof filler - 1);
    }
    while (c->out_off < c->out_len) {
        size_t want = c->out_len - c->out_off;
        if (c->drip) {
            if (now < c->next_drip)
                return true;
            want = 1;
            c->next_drip = now + drip_ms;
        }
        ssize_t n = send(c->fd, c->out + c->out_off, want, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        c->out_off += (size_t)n;
        if (c->drip)
            return true;
    }
    c->out_len = c->out_off = 0;
    if (c->close_after)
        return false;
    return true;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: elk-hostile-server --mode MODE [--port PORT] [--after N] [--seed N]\n"
            "                          [--drip-ms MS] [--only CMD,CMD...]\nmodes:");
    for (int i = 0; i < M_COUNT_; i++)
        fprintf(f, " %s", mode_names[i]);
    fprintf(f, "\nPrints the port on stdout. Listens on 127.0.0.1 only.\n");
}

static uint64_t port;
static bool have_mode;

static enum tool_opt option(int o, const char *arg)
{
    switch (o) {
    case 'm':
        for (int i = 0; i < M_COUNT_; i++)
            if (!strcmp(arg, mode_names[i])) {
                mode = (enum mode)i;
                have_mode = true;
            }
        if (!have_mode)
            fprintf(stderr, "elk-hostile-server: unknown mode '%s'\n", arg);
        return have_mode ? TOOL_OPT_OK : TOOL_OPT_BAD;
    case 'p':
        return tool_parse_port(arg, &port) ? TOOL_OPT_OK : TOOL_OPT_BAD;
    case 'a':
        after = strtol(arg, NULL, 10);
        return TOOL_OPT_OK;
    case 'd':
        drip_ms = (uint32_t)strtoul(arg, NULL, 10);
        return TOOL_OPT_OK;
    case 'o':
        only_cmds = arg;
        return TOOL_OPT_OK;
    case 'L':
        for (int i = 0; i < M_COUNT_; i++)
            printf("%s\n", mode_names[i]);
        return TOOL_OPT_DONE;
    default:
        return TOOL_OPT_BAD;
    }
}

static bool check(void)
{
    if (!have_mode)
        usage(stderr);
    return have_mode;
}

static struct pollfd pfds[1 + MAX_CONNS];
static int idx[1 + MAX_CONNS];

/* The listening socket, then every connection with what it waits for; *timeout is the
 * next drip's. */
static size_t poll_set(int lfd, uint64_t now, int *timeout)
{
    size_t np = 0;
    pfds[np++] = (struct pollfd){.fd = lfd, .events = POLLIN};
    for (int i = 0; i < MAX_CONNS; i++) {
        struct conn *c = &conns[i];
        if (!c->used)
            continue;
        short ev = POLLIN;
        if (c->out_off < c->out_len || c->endless) {
            if (c->drip) {
                int t = c->next_drip > now ? (int)(c->next_drip - now) : 0;
                if (*timeout < 0 || t < *timeout)
                    *timeout = t;
                if (t == 0)
                    ev |= POLLOUT;
            } else {
                ev |= POLLOUT;
            }
        }
        idx[np] = i;
        pfds[np++] = (struct pollfd){.fd = c->fd, .events = ev};
    }
    return np;
}

static void accept_conn(int lfd)
{
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        return;
    struct conn *c = NULL;
    for (int i = 0; i < MAX_CONNS && !c; i++)
        if (!conns[i].used)
            c = &conns[i];
    if (!c) {
        close(fd);
        return;
    }
    int one = 1;
    memset(c, 0, sizeof *c);
    c->used = true;
    c->fd = fd;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (mode == M_UNSOLICITED && after <= 0 && !only_cmds)
        out_str(c, "+unsolicited\r\n"); /* a reply nobody asked for */
}

/* Read what came, answer it; false: the connection is over. */
static bool serve_conn(struct conn *c, short revents, uint64_t now)
{
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = recv(c->fd, c->in + c->in_len, IN_MAX - c->in_len, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return false;
        if (n > 0) {
            c->in_len += (size_t)n;
            if (!parse_commands(c, now)) {
                /* a client that speaks no RESP gets what Redis sends, then the door */
                out_str(c, "-ERR Protocol error\r\n");
                c->close_after = true;
                c->in_len = 0;
            }
        }
    }
    return flush_out(c, now);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        TOOL_ARG("mode", 'm'), TOOL_ARG("port", 'p'),    TOOL_ARG("after", 'a'),
        TOOL_ARG("seed", 's'), TOOL_ARG("drip-ms", 'd'), TOOL_FLAG("list-modes", 'L'),
        TOOL_ARG("only", 'o'), TOOL_FLAG("help", 'h'),   {0}};
    const struct tool_spec spec = {
        "elk-hostile-server", opts, usage, option, check, 1, {&port}, &rng_state};
    int lfd;
    int rc = tool_start(argc, argv, &spec, &lfd);
    if (rc >= 0)
        return rc;
    for (;;) {
        uint64_t now = tool_now_ms();
        int timeout = -1;
        size_t np = poll_set(lfd, now, &timeout);
        if (poll(pfds, np, timeout) < 0 && errno != EINTR) {
            perror("elk-hostile-server: poll");
            return 1;
        }
        now = tool_now_ms();
        if (pfds[0].revents & POLLIN)
            accept_conn(lfd);
        for (size_t p = 1; p < np; p++) {
            struct conn *c = &conns[idx[p]];
            if (c->used && !serve_conn(c, pfds[p].revents, now))
                conn_close(c);
        }
    }
}
