/* SPDX-License-Identifier: MIT */
/* elk-sim: run many seeds of the simulated world and report what the checker saw.
 * Exit status: 0 when no run violated an invariant (or, with --expect-violations,
 * when the violations the control is meant to provoke WERE found), 1 otherwise,
 * 2 on bad usage. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim_world.h"
#ifdef ELK_SIM_TIMELINE
#include "sim_timeline.h"
#endif

static sim_world_t world;         /* a few MB: static, never on the stack */
static const char *timeline_path; /* --timeline FILE, NULL: none */

static const char *const control_names[] = {"none",        "no-drift-margin", "drift-beyond-bound",
                                            "naive-fence", "setnx-getset",    "no-vote-hygiene",
                                            "no-amnesia",  "naive-semaphore", "multi-naive",
                                            "unfair",      "fair-no-expiry"};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: elk-sim [options]\n"
            "  --seed S             first seed (default 1); run i uses seed S+i\n"
            "  --runs N             number of runs (default 100, at least 1)\n"
            "  --gateways G         gateways contending (default 5, max %u)\n"
            "  --nodes K            Redis nodes (default 3, max %u: the smaller of port/sim's\n"
            "                       limit and CONFIG_ELK_MAX_NODES; 1 = single mode)\n"
            "  --resources R        actuators/resources (default 1, max %u)\n"
            "  --faults P           fault profile: %s (default mild)\n"
            "  --drift PPM          bound on clock rate differences, and the lock's drift\n"
            "                       factor (default 10000 = 1%%)\n"
            "  --duration-ms D      fault phase of each run (default 30000); a calm phase follows\n"
            "  --ttl-ms T           lease TTL (default 1000)\n"
            "  --control C          negative control: no-drift-margin | drift-beyond-bound |\n"
            "                       naive-fence | setnx-getset | no-vote-hygiene (with\n"
            "                       --faults hostile-masters: restarted or jumped masters vote)\n"
            "                       | no-amnesia (the scripts before issue 26: no marker age,\n"
            "                       no token floor; with --faults hostile-masters)\n"
            "                       | naive-semaphore (with --permits: a counter of holders on\n"
            "                       each master, a holder needs a quorum: more than N hold)\n"
            "                       | multi-naive (with --multi: independent locks taken in\n"
            "                       the order asked, kept while waiting, a lost one not ending\n"
            "                       the others: deadlocks and partial sets)\n"
            "                       | unfair (with --fair: waiters ask for the lock as soon as\n"
            "                       they hold a ticket) | fair-no-expiry (with --fair: expired\n"
            "                       tickets never leave the queue, the crashed waiter blocks it)\n"
            "  --permits N          each resource is a semaphore of N permits (max %u; 0, the\n"
            "                       default: a lock); the checker adds permits_exceeded\n"
            "  --multi K            each hold one all-or-nothing lease (elk/multi.h) over K of\n"
            "                       the resources (2..%u, at most --resources), drawn per\n"
            "                       attempt in a random order; the checker adds multi_partial\n"
            "                       and multi_starved, and the calm phase grows to show them\n"
            "  --fair               every acquire waits in a fair queue (elk/fair.h; ticket TTL\n"
            "                       = --ttl-ms); the checker adds fair_order and, in a draining\n"
            "                       calm phase with one queued waiter per resource crashed for\n"
            "                       good, fair_starved\n"
            "  --expect-violations  exit 0 only if the control's violations were found\n"
            "  --trace              print every event of every run (use with --runs 1)\n"
            "  --timeline FILE      write the run as an HTML page (as elk timeline does): leases\n"
            "                       per gateway, faults, the checker's violations marked where\n"
            "                       they happen (needs --runs 1)\n"
            "  --companion-lease    each gateway also holds a private lease on its client, taken\n"
            "                       when it acquires: the two renew together, batched\n"
            "  --quiet              print only the summary\n"
            "  --help               this text\n",
            ELK_SIM_MAX_GATEWAYS,
            ELK_SIM_MAX_NODES < CONFIG_ELK_MAX_NODES ? ELK_SIM_MAX_NODES : CONFIG_ELK_MAX_NODES,
            SIM_MAX_RESOURCES, sim_profile_names(), SIM_MAX_PERMITS,
            SIM_MAX_RESOURCES < CONFIG_ELK_MULTI_MAX_RESOURCES ? SIM_MAX_RESOURCES
                                                               : CONFIG_ELK_MULTI_MAX_RESOURCES);
}

static bool parse_u64(const char *s, uint64_t *out)
{
    char *end = NULL;
    unsigned long long v;
    if (s == NULL || *s == '\0' || *s == '-') {
        return false;
    }
    v = strtoull(s, &end, 10);
    if (end == NULL || *end != '\0') {
        return false;
    }
    *out = v;
    return true;
}

static bool is_numeric_option(const char *a)
{
    static const char *const names[] = {"--seed",      "--runs",  "--gateways",    "--nodes",
                                        "--resources", "--drift", "--duration-ms", "--ttl-ms",
                                        "--permits",   "--multi"};
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(a, names[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* --control NAME */
static int parse_control(const char *v, sim_options_t *o)
{
    size_t c;
    o->control = CTRL_NONE;
    for (c = 1; c < sizeof control_names / sizeof control_names[0]; c++) {
        if (strcmp(v, control_names[c]) == 0) {
            o->control = (sim_control_t)c;
        }
    }
    if (o->control == CTRL_NONE) {
        fprintf(stderr, "elk-sim: unknown control '%s'\n", v);
        return -1;
    }
    return 0;
}

/* One of is_numeric_option's options with its value v, range-checked. */
static int parse_numeric(const char *a, const char *v, sim_options_t *o)
{
    uint64_t n = 0;
    if (!parse_u64(v, &n)) {
        fprintf(stderr, "elk-sim: bad value for %s: %s (a non-negative integer)\n", a, v);
        return -1;
    }
    if (strcmp(a, "--seed") == 0) {
        o->seed = n;
    } else if (strcmp(a, "--runs") == 0 && n >= 1) {
        o->runs = n;
    } else if (strcmp(a, "--gateways") == 0 && n >= 1 && n <= ELK_SIM_MAX_GATEWAYS) {
        o->gateways = (uint32_t)n;
    } else if (strcmp(a, "--nodes") == 0 && n >= 1 && n <= ELK_SIM_MAX_NODES &&
               n <= CONFIG_ELK_MAX_NODES) {
        o->nodes = (uint32_t)n;
    } else if (strcmp(a, "--resources") == 0 && n >= 1 && n <= SIM_MAX_RESOURCES) {
        o->resources = (uint32_t)n;
    } else if (strcmp(a, "--drift") == 0 && n <= 100000) {
        o->drift_ppm = (uint32_t)n;
    } else if (strcmp(a, "--duration-ms") == 0 && n >= 1000 && n <= 3600000) {
        o->duration_ms = (uint32_t)n;
    } else if (strcmp(a, "--ttl-ms") == 0 && n >= 100 && n <= 60000) {
        o->ttl_ms = (uint32_t)n;
    } else if (strcmp(a, "--permits") == 0 && n <= SIM_MAX_PERMITS) {
        o->permits = (uint32_t)n;
    } else if (strcmp(a, "--multi") == 0 && n >= 2 && n <= SIM_MAX_RESOURCES &&
               n <= CONFIG_ELK_MULTI_MAX_RESOURCES) {
        o->multi = (uint32_t)n;
    } else {
        fprintf(stderr, "elk-sim: bad value for %s: %s\n", a, v);
        return -1;
    }
    return 0;
}

/* The flag (an option without a value) a names in o, NULL when a is not one. */
static bool *flag_of(sim_options_t *o, const char *a)
{
    return strcmp(a, "--trace") == 0            ? &o->trace
        : strcmp(a, "--quiet") == 0             ? &o->quiet
        : strcmp(a, "--companion-lease") == 0   ? &o->companion
        : strcmp(a, "--fair") == 0              ? &o->fair
        : strcmp(a, "--expect-violations") == 0 ? &o->expect_violations
                                                : NULL;
}

static int parse_args(int argc, char **argv, sim_options_t *o)
{
    int i;
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->runs = 100;
    o->gateways = 5;
    o->nodes = 3;
    o->resources = 1;
    o->faults = "mild";
    o->drift_ppm = 10000;
    o->duration_ms = 30000;
    o->ttl_ms = 1000;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        bool *flag = flag_of(o, a);
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (flag != NULL) {
            *flag = true;
            continue;
        } else if (v == NULL) {
            rc = -1;
        } else if (strcmp(a, "--timeline") == 0) {
            timeline_path = v;
        } else if (strcmp(a, "--faults") == 0) {
            o->faults = v;
        } else if (strcmp(a, "--control") == 0) {
            rc = parse_control(v, o);
            if (rc != 0) {
                return rc;
            }
        } else if (is_numeric_option(a)) {
            rc = parse_numeric(a, v, o);
            if (rc != 0) {
                return rc;
            }
        } else {
            rc = -1;
        }
        if (rc != 0) {
            fprintf(stderr, "elk-sim: unknown or incomplete option '%s'\n", a);
            return -1;
        }
        i++;
    }
    return 0;
}

/* The violations each control exists to provoke. */
static bool control_caught(const sim_options_t *o, const sim_stats_t *t)
{
    switch (o->control) {
    case CTRL_NO_DRIFT_MARGIN:
    case CTRL_SETNX_GETSET:
    case CTRL_NO_VOTE_HYGIENE:
        return t->violations[V_MUTEX] > 0u;
    case CTRL_DRIFT_BEYOND:
        /* Exclusion breaks, but the guard must still refuse every stale command. */
        return t->violations[V_MUTEX] > 0u && t->violations[V_FENCE_ACCEPTED_LOW] == 0u &&
            t->refused > 0u;
    case CTRL_NAIVE_FENCE:
        return t->violations[V_FENCE_BACKWARDS] > 0u;
    case CTRL_NAIVE_SEMAPHORE:
        return t->violations[V_PERMITS] > 0u;
    case CTRL_MULTI_NAIVE:
        /* both promises: all or nothing, and everyone served once faults heal */
        return t->violations[V_MULTI_PARTIAL] > 0u && t->violations[V_MULTI_STARVED] > 0u;
    case CTRL_UNFAIR:
        return t->violations[V_FAIR_ORDER] > 0u;
    case CTRL_FAIR_NO_EXPIRY:
        return t->violations[V_FAIR_STARVED] > 0u;
    case CTRL_NO_AMNESIA:
        /* both promises: one holder at a time, and tokens that only grow */
        return t->violations[V_MUTEX] > 0u && t->violations[V_FENCE_BACKWARDS] > 0u;
    default:
        return false;
    }
}

static void replay_hint(const sim_options_t *o, uint64_t seed)
{
    fprintf(stderr,
            "  replay: elk-sim --seed %" PRIu64 " --runs 1 --gateways %u --nodes %u --resources %u "
            "--faults %s --drift %u --duration-ms %u --ttl-ms %u%s%s%s%s --permits %u --trace\n",
            seed, o->gateways, o->nodes, o->resources, o->faults, o->drift_ppm, o->duration_ms,
            o->ttl_ms, o->control != CTRL_NONE ? " --control " : "",
            o->control != CTRL_NONE ? control_names[o->control] : "",
            o->companion ? " --companion-lease" : "", o->fair ? " --fair" : "", o->permits);
    if (o->multi != 0u) {
        fprintf(stderr, "  (add --multi %u to the replay)\n", o->multi);
    }
}

/* One run's figures into the sweep's. */
static void add_run(sim_stats_t *total, const sim_stats_t *run)
{
    int k;
    for (k = 0; k < V_KINDS; k++) {
        total->violations[k] += run->violations[k];
    }
    total->runs++;
    total->cycles += run->cycles;
    total->renewals += run->renewals;
    total->losses += run->losses;
    total->acquire_failed += run->acquire_failed;
    total->drives += run->drives;
    total->refused += run->refused;
    total->crashes += run->crashes;
    total->empty_restarts += run->empty_restarts;
    total->jumps += run->jumps;
    total->forward_jumps += run->forward_jumps;
    total->flushes += run->flushes;
    total->evictions += run->evictions;
    total->failovers += run->failovers;
    total->fair_exempt += run->fair_exempt;
    total->fair_crashes += run->fair_crashes;
    total->events += run->events;
    total->sim_us += run->sim_us;
    if (run->calm_wait_max_us > total->calm_wait_max_us) {
        total->calm_wait_max_us = run->calm_wait_max_us;
    }
}

static uint64_t run_violations(const sim_stats_t *run)
{
    uint64_t v = 0;
    int k;
    for (k = 0; k < V_KINDS; k++) {
        v += run->violations[k];
    }
    return v;
}

/* Combine per-run hashes in order: the summary hash covers every run. */
static uint64_t hash_combine(uint64_t hash, uint64_t run_hash)
{
    int b;
    for (b = 0; b < 8; b++) {
        hash = (hash ^ (uint8_t)(run_hash >> (8 * b))) * 0x100000001b3ull;
    }
    return hash;
}

#ifdef ELK_SIM_TIMELINE
static int write_timeline(const sim_options_t *o, uint64_t seed)
{
    char title[160];
    snprintf(title, sizeof title,
             "elk-sim seed %" PRIu64 ", %s, %u gateways, %u nodes, %u resources%s%s", seed,
             o->faults, o->gateways, o->nodes, o->resources,
             o->control != CTRL_NONE ? ", control " : "",
             o->control != CTRL_NONE ? control_names[o->control] : "");
    int trc = sim_timeline_write(&world, timeline_path, title);
    if (trc != 0) {
        fprintf(stderr, "elk-sim: cannot write %s: %s\n", timeline_path, strerror(trc));
        return 1;
    }
    return 0;
}
#endif

/* A failing sweep names its first seeds with a replay command; a control run that finds
 * what it looks for names a few unless --quiet. */
static void report_failure(const sim_options_t *o, uint64_t seed, uint64_t failing_runs)
{
    if ((!o->expect_violations && failing_runs <= 10u) ||
        (o->expect_violations && !o->quiet && failing_runs <= 3u)) {
        fprintf(stderr, "%s seed %" PRIu64 ": %s\n", o->expect_violations ? "caught" : "FAIL", seed,
                world.first_violation);
        if (!o->expect_violations) {
            replay_hint(o, seed);
        }
    }
}

static void print_summary(const sim_options_t *o, const sim_stats_t *total, uint64_t failing_runs,
                          double wall_s, uint64_t hash)
{
    double sim_h = (double)total->sim_us / 3.6e9;
    int k;
    printf("elk-sim: %" PRIu64 " runs (seeds %" PRIu64 "..%" PRIu64 "), %u gateways, %u nodes, "
           "%u resources, faults %s, drift %u ppm, control %s\n",
           total->runs, o->seed, o->seed + (o->runs ? o->runs - 1u : 0u), o->gateways, o->nodes,
           o->resources, o->faults, o->drift_ppm, control_names[o->control]);
    printf("  lock cycles (grants) %" PRIu64 ", renewals %" PRIu64 ", losses %" PRIu64
           ", failed acquires %" PRIu64 ", drive commands %" PRIu64 ", stale refused %" PRIu64 "\n",
           total->cycles, total->renewals, total->losses, total->acquire_failed, total->drives,
           total->refused);
    printf("  node faults: %" PRIu64 " crashes (%" PRIu64 " restarted empty), %" PRIu64
           " wall-clock jumps (%" PRIu64 " forward)\n",
           total->crashes, total->empty_restarts, total->jumps, total->forward_jumps);
    printf("  data lost without a restart: %" PRIu64 " FLUSHALLs, %" PRIu64 " evictions, %" PRIu64
           " failovers to an empty replica (each on a majority or all for the first two)\n",
           total->flushes, total->evictions, total->failovers);
    printf("  violations:");
    for (k = 0; k < V_KINDS; k++) {
        printf(" %s %" PRIu64, sim_violation_name(k), total->violations[k]);
    }
    printf(" (runs with violations %" PRIu64 "%s)\n", failing_runs,
           !o->expect_violations && failing_runs > 10u ? ", the first 10 listed above" : "");
    printf("  simulated %.3f h in %.2f s wall: %.1f simulated hours per wall second, %" PRIu64
           " events\n",
           sim_h, wall_s, wall_s > 0 ? sim_h / wall_s : 0.0, total->events);
    if (o->fair) {
        printf("  fair waiting: lock cycles are fair grants; %" PRIu64 " out of ticket order "
               "excused by a master fault (data lost unrestarted, forward jump) since the waiter "
               "passed "
               "over last renewed\n",
               total->fair_exempt);
        printf("  calm phase: %" PRIu64 " queued waiters crashed for good; longest wait of the "
               "others %" PRIu64 " ms, fair_starved bound %" PRIu64 " ms\n",
               total->fair_crashes, total->calm_wait_max_us / 1000u,
               sim_fair_starve_bound_us(&world) / 1000u);
    }
    if (o->permits != 0u) {
        printf("  each resource a semaphore of %u permits (lock cycles: permits granted)\n",
               o->permits);
    }
    if (o->multi != 0u) {
        printf("  each grant a multi lease of %u of the %u resources (lock cycles: multi leases "
               "granted); longest wait in a calm phase %" PRIu64 " ms, multi_starved bound %" PRIu64
               " ms\n",
               o->multi, o->resources, total->calm_wait_max_us / 1000u,
               sim_multi_starve_bound_us(&world) / 1000u);
    }
    printf("  trace hash %016" PRIx64 "\n", hash);
}

/* The controls that exist only with --fair. */
static bool fair_control(sim_control_t c)
{
    return c == CTRL_UNFAIR || c == CTRL_FAIR_NO_EXPIRY;
}

/* The options checked against each other and the build; 0 or the exit status. */
static int setup(int argc, char **argv, sim_options_t *o)
{
    if (parse_args(argc, argv, o) != 0) {
        usage(stderr);
        return 2;
    }
    if (!sim_profile_get(o->faults, &world.prof)) {
        fprintf(stderr, "elk-sim: unknown fault profile '%s' (%s)\n", o->faults,
                sim_profile_names());
        return 2;
    }
    if (o->resources > o->gateways) {
        o->resources = o->gateways;
    }
    if ((o->control == CTRL_NAIVE_SEMAPHORE && o->permits == 0u) ||
        (o->control == CTRL_SETNX_GETSET && o->permits != 0u) ||
        (o->fair &&
         (o->permits != 0u || o->multi != 0u ||
          (o->control != CTRL_NONE && !fair_control(o->control)))) ||
        (fair_control(o->control) && !o->fair)) {
        fprintf(stderr,
                "elk-sim: --control naive-semaphore needs --permits N (N >= 1), and "
                "setnx-getset takes no --permits; --fair takes no --permits, no --multi and no "
                "control but "
                "unfair or fair-no-expiry, which need --fair\n");
        return 2;
    }
    if ((o->multi != 0u &&
         (o->permits != 0u || o->companion || o->multi > o->resources ||
          o->control == CTRL_SETNX_GETSET || o->control == CTRL_NAIVE_SEMAPHORE)) ||
        (o->control == CTRL_MULTI_NAIVE && o->multi == 0u)) {
        fprintf(stderr,
                "elk-sim: --multi K needs K <= --resources and takes no --permits, "
                "--companion-lease, setnx-getset or naive-semaphore; --control "
                "multi-naive needs --multi K\n");
        return 2;
    }
    world.opt = *o;
    world.trace = o->trace ? stdout : NULL;
    if (timeline_path != NULL) {
#ifdef ELK_SIM_TIMELINE
        if (o->runs != 1) {
            fprintf(stderr, "elk-sim: --timeline draws one run: add --runs 1\n");
            return 2;
        }
        (void)sim_timeline_start(&world);
#else
        fprintf(stderr, "elk-sim: --timeline is not in this build (it needs firmware/)\n");
        return 2;
#endif
    }
    return 0;
}

int main(int argc, char **argv)
{
    sim_options_t o;
    sim_stats_t total;
    uint64_t r, hash = 0xcbf29ce484222325ull, failing_runs = 0;
    struct timespec t0, t1;
    double wall_s;
    bool caught;
    int rc = setup(argc, argv, &o);

    if (rc != 0) {
        return rc;
    }
    memset(&total, 0, sizeof total);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (r = 0; r < o.runs; r++) {
        uint64_t seed = o.seed + r;
        rc = sim_run(&world, seed);
        if (rc != ELK_OK) {
            fprintf(stderr, "elk-sim: seed %" PRIu64 ": setup failed: %s\n", seed,
                    elk_err_message(rc));
            return 1;
        }
        add_run(&total, &world.run);
        hash = hash_combine(hash, world.hash);
#ifdef ELK_SIM_TIMELINE
        if (timeline_path != NULL && write_timeline(&o, seed) != 0) {
            return 1;
        }
#endif
        if (o.trace) {
            printf("run seed %" PRIu64 ": trace hash %016" PRIx64 "\n", seed, world.hash);
        }
        if (run_violations(&world.run) > 0u) {
            failing_runs++;
            report_failure(&o, seed, failing_runs);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    print_summary(&o, &total, failing_runs, wall_s, hash);
    if (o.expect_violations) {
        caught = control_caught(&o, &total);
        printf("  control %s: %s\n", control_names[o.control],
               caught ? "violations found, as expected" : "NOT caught: the checker missed it");
        return caught ? 0 : 1;
    }
    return failing_runs == 0u ? 0 : 1;
}
