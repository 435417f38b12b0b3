/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "tool_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

bool tool_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || s[0] == '-')
        return false;
    *out = v;
    return true;
}

bool tool_parse_port(const char *s, uint64_t *out)
{
    return tool_parse_u64(s, out) && *out <= 65535u;
}

uint64_t tool_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t tool_rng(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 2685821657736338717ull;
}

int tool_listen_loopback(uint16_t port, uint16_t *bound)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 64) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    socklen_t sl = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    *bound = ntohs(sa.sin_port);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

/* getopt's short options from the long ones: "m:p:h" for --mode X, --port X, --help. */
static void short_options(const struct option *opts, char *out, size_t cap)
{
    size_t n = 0;
    for (; opts->name != NULL && n + 3 < cap; opts++) {
        out[n++] = (char)opts->val;
        if (opts->has_arg == required_argument)
            out[n++] = ':';
    }
    out[n] = '\0';
}

/* The options every tool has (--help, --seed), then the tool's own. */
static enum tool_opt common_option(const struct tool_spec *spec, int o, const char *arg)
{
    uint64_t v;
    switch (o) {
    case 'h':
        spec->usage(stdout);
        return TOOL_OPT_DONE;
    case 's':
        if (!tool_parse_u64(arg, &v))
            return TOOL_OPT_BAD;
        *spec->rng = v ? v : 1;
        return TOOL_OPT_OK;
    default:
        return spec->option(o, arg);
    }
}

int tool_start(int argc, char **argv, const struct tool_spec *spec, int *lfd)
{
    char shortopts[128];
    short_options(spec->opts, shortopts, sizeof shortopts);
    int o;
    while ((o = getopt_long(argc, argv, shortopts, spec->opts, NULL)) != -1) {
        enum tool_opt r = o == '?' ? TOOL_OPT_BAD : common_option(spec, o, optarg);
        if (r == TOOL_OPT_DONE)
            return 0;
        if (r == TOOL_OPT_BAD) {
            spec->usage(stderr);
            return 2;
        }
    }
    if (!spec->check())
        return 2;
    signal(SIGPIPE, SIG_IGN);
    uint16_t bound[TOOL_MAX_LISTEN];
    for (size_t i = 0; i < spec->n_listen; i++) {
        lfd[i] = tool_listen_loopback((uint16_t)*spec->port[i], &bound[i]);
        if (lfd[i] < 0) {
            fprintf(stderr, "%s: cannot listen on 127.0.0.1:%u: %s\n", spec->name,
                    (unsigned)*spec->port[i], strerror(errno));
            return 1;
        }
    }
    for (size_t i = 0; i < spec->n_listen; i++)
        printf(i + 1 < spec->n_listen ? "%u " : "%u\n", bound[i]);
    fflush(stdout);
    return -1;
}
