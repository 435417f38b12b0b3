/* SPDX-License-Identifier: MIT */
/*
 * elk-sim on the emulated Cortex-M4: runs the simulator's own main (tests/sim/main.c,
 * compiled as elk_sim_main) once per seed, with the options it was given, exactly as
 *   elk-sim --seed S --runs 1 OPTIONS...
 * runs on the host, and marks each seed's output:
 *   == seed S                  (before the run)
 *   == exit STATUS             (after it)
 * QEMU's semihosting console is one stream: stdout and stderr arrive interleaved in
 * program order, as on the host with a line-buffered stdout and 2>&1.
 * Usage: sim_mcu.elf --seeds FIRST-LAST [--seeds ...] [elk-sim options]
 * (arguments through -semihosting-config enable=on,target=native,arg=...).
 * tests/mcu/run_sim.sh runs the host's elk-sim the same way and compares.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcu.h"

int elk_sim_main(int argc, char **argv);

enum { MAX_RANGES = 8, MAX_OPTS = 48 };

typedef struct range {
    uint64_t first, last;
} range_t;

static int parse_range(const char *s, range_t *r)
{
    char *end = NULL;
    r->first = strtoull(s, &end, 10);
    if (end == s || *end != '-') {
        return -1;
    }
    s = end + 1;
    r->last = strtoull(s, &end, 10);
    return end == s || *end != '\0' || r->last < r->first ? -1 : 0;
}

static int run_seed(uint64_t seed, char **opts, int nopts)
{
    static char seed_text[24];
    static char *argv[MAX_OPTS + 6];
    int i, rc;
    snprintf(seed_text, sizeof seed_text, "%" PRIu64, seed);
    argv[0] = "elk-sim";
    argv[1] = "--seed";
    argv[2] = seed_text;
    argv[3] = "--runs";
    argv[4] = "1";
    for (i = 0; i < nopts; i++) {
        argv[5 + i] = opts[i];
    }
    argv[5 + nopts] = NULL;
    printf("== seed %" PRIu64 "\n", seed);
    rc = elk_sim_main(5 + nopts, argv);
    printf("== exit %d\n", rc);
    return rc;
}

int main(int argc, char **argv)
{
    range_t ranges[MAX_RANGES];
    char *opts[MAX_OPTS];
    int nranges = 0, nopts = 0, i;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc && nranges < MAX_RANGES &&
            parse_range(argv[i + 1], &ranges[nranges]) == 0) {
            nranges++;
            i++;
        } else if (nopts < MAX_OPTS) {
            opts[nopts++] = argv[i];
        } else {
            fprintf(stderr, "sim_mcu: too many options\n");
            return 2;
        }
    }
    if (nranges == 0) {
        fprintf(stderr, "usage: sim_mcu --seeds FIRST-LAST [--seeds ...] [elk-sim options]\n");
        return 2;
    }
    for (i = 0; i < nranges; i++) {
        uint64_t s;
        for (s = ranges[i].first; s <= ranges[i].last; s++) {
            (void)run_seed(s, opts, nopts);
        }
    }
    printf("== stack high-water %zu of %zu bytes\n", mcu_stack_used(), mcu_stack_size());
    return 0;
}
