/* SPDX-License-Identifier: MIT */
/*
 * The skeleton the loopback test servers share (elk-faultproxy, elk-hostile-server):
 * options read with getopt_long, listening sockets on 127.0.0.1 only, the bound ports
 * printed on one stdout line for the test that started them (elk_tt_spawn reads it),
 * a monotonic clock and the seeded xorshift64* their faults draw from.
 * Test code: C11, globals and blocking set-up are fine.
 */
#ifndef ELK_TOOL_SERVER_H
#define ELK_TOOL_SERVER_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TOOL_MAX_LISTEN 2

/* What an option handler answers. */
enum tool_opt { TOOL_OPT_OK = 0, TOOL_OPT_BAD, TOOL_OPT_DONE };

/* The entries of a tool's option table (getopt_long's, ended by {0}): each long option
 * with its one-letter form, which tool_start() also accepts. */
#define TOOL_ARG(name, c)                                                                          \
    {                                                                                              \
        name, required_argument, NULL, c                                                           \
    }
#define TOOL_FLAG(name, c)                                                                         \
    {                                                                                              \
        name, no_argument, NULL, c                                                                 \
    }

struct tool_spec {
    const char *name; /* program name: the prefix of every message */
    const struct option *opts;
    void (*usage)(FILE *f);
    /* One option (getopt's value and optarg): OK, BAD (usage on stderr, exit 2) or DONE
     * (the option did all there was to do, e.g. --help: exit 0). */
    enum tool_opt (*option)(int o, const char *arg);
    /* After the options: false refuses them (exit 2; the hook printed why, or usage is). */
    bool (*check)(void);
    size_t n_listen;                 /* listening sockets, at most TOOL_MAX_LISTEN */
    uint64_t *port[TOOL_MAX_LISTEN]; /* where option() stores each requested port (0: any) */
    uint64_t *rng;                   /* the tool_rng() state --seed N sets (0 taken as 1) */
};

/* Read the options (--help 'h' and --seed 's' here, the others through spec->option), listen, print the bound ports ("<p1> [<p2>]\n") and flush. Returns -1
 * with lfd[] set (non-blocking sockets) to go on serving, else the exit status. SIGPIPE is
 * ignored from then on. */
int tool_start(int argc, char **argv, const struct tool_spec *spec, int *lfd);

/* A listening socket on 127.0.0.1:port (0: any), non-blocking; *bound gets the port.
 * Returns the descriptor or -1 (errno set). */
int tool_listen_loopback(uint16_t port, uint16_t *bound);

/* A whole decimal number, no sign: true and *out set, or false. */
bool tool_parse_u64(const char *s, uint64_t *out);
/* A port number (0 allowed: any). */
bool tool_parse_port(const char *s, uint64_t *out);

uint64_t tool_now_ms(void);
/* xorshift64*: reproducible draws from a seed (*state never 0). */
uint64_t tool_rng(uint64_t *state);

#endif /* ELK_TOOL_SERVER_H */
