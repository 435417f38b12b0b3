/* SPDX-License-Identifier: MIT */
/*
 * Lock-cycle measurements, the same source on the emulated Cortex-M4 and on the host
 * (docs/footprint.md, "On the MCU"): one gateway (lib/node + lib/lock, fencing on)
 * takes and releases a lease on a 3-node Redlock fleet of port/sim's Redis nodes,
 * over port/sim's network with a fixed 50 us one-way delay and no faults. A cycle is
 * elk_lock_acquire, polls until ACQUIRED (the acquire and the fencing commit round),
 * elk_lock_release, polls until the release round has ended on every node.
 *
 * Prints:
 *  - the stack high-water of the cycles: the free stack below this frame is painted,
 *    the cycles run, the deepest overwritten word is the high-water (lib + port/sim
 *    servers + this driver; newlib's memcpy/memset);
 *  - on the MCU only, instructions: the CMSDK timer of mps2-an386 runs at 25 MHz of
 *    QEMU's virtual clock, which under `-icount shift=S` advances exactly 2^S ns per
 *    executed instruction, so instructions = ticks * 40 / 2^S (shift 10: 25.6 ticks
 *    per instruction, so the reading is exact to a fraction of one). Given for the
 *    whole cycle (lib + transport + the three simulated servers and the network) and
 *    for the time spent inside lib calls (elk_client_poll, elk_lock_acquire,
 *    elk_lock_release: lib/ and the transport calls it makes into port/sim).
 *    On the host, valgrind --tool=callgrind counts the same two (see docs).
 *  - sizeof of the objects a device allocates for this fleet.
 * Usage: cycle [--cycles N] [--icount-shift S] [--probe 0]
 * (--probe 0 leaves out the stack-probe pass, for callgrind: every cycle_run call
 * is then a measured one, after one warm-up cycle.)
 */
#define _POSIX_C_SOURCE 200809L /* pthread_attr_setstack on the host */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elk/lock.h"
#include "elk/sim.h"
#include "elk/sim_scripts.h"

#define NODES 3u
#define EV_GW ELK_SIM_EV_USER
#define POOL_BLOCKS (2u * NODES + 2u)

static struct bench {
    elk_sim_core_t core;
    elk_sim_event_t events[8192]; /* superseded wakes stay queued until their time */
    elk_sim_net_t net;
    elk_sim_scripts_t scripts;
    elk_sim_clock_t clock;
    elk_sim_rng_t rng;
    elk_entropy_t entropy;
    uint8_t pool_mem[POOL_BLOCKS * CONFIG_ELK_POOL_BLOCK_SIZE];
    elk_pool_t pool;
    elk_node_t nodes[NODES];
    elk_fleet_t fleet;
    elk_client_t client;
    elk_lock_t lock;
    uint64_t wake_at;
    bool acquired;
    uint32_t lib_ticks;  /* timer ticks spent inside lib calls */
    uint32_t port_ticks; /* of which inside the transport (port/sim's client side) */
    elk_transport_t inner[NODES];
    bool probe;       /* stack-probe pass: no timing */
    size_t lib_stack; /* deepest lib call, bytes below its caller's stack pointer */
} b;

/* ------------------------------------------------------------------ counters */
#if defined(__arm__)
#define TIMER0_CTRL (*(volatile uint32_t *)0x40000000u)
#define TIMER0_VALUE (*(volatile uint32_t *)0x40000004u)
#define TIMER0_RELOAD (*(volatile uint32_t *)0x40000008u)
static void ticks_start(void)
{
    TIMER0_RELOAD = 0xFFFFFFFFu;
    TIMER0_VALUE = 0xFFFFFFFFu;
    TIMER0_CTRL = 1u;
}
static inline uint32_t ticks(void)
{
    return ~TIMER0_VALUE; /* counts down */
}
extern uint32_t __stack_limit[];
static uint32_t *stack_limit(void)
{
    return __stack_limit;
}
#else
static void ticks_start(void)
{
}
static inline uint32_t ticks(void)
{
    return 0;
}
static uint32_t *host_stack_base; /* set by main: the painted thread stack */
static uint32_t *stack_limit(void)
{
    return host_stack_base;
}
#endif

#define PAINT 0xC5AC5AC5u

/* Paints from the stack's limit to just below the caller's frame; returns the top. */
static __attribute__((noinline)) uintptr_t paint_below_caller(void)
{
    uint32_t *p = stack_limit();
    uintptr_t top = (uintptr_t)__builtin_frame_address(0) - 256u;
    while ((uintptr_t)p < top) {
        *p++ = PAINT;
    }
    return top;
}

static size_t used_below(uintptr_t top)
{
    const uint32_t *p = stack_limit();
    while ((uintptr_t)p < top && *p == PAINT) {
        p++;
    }
    return (size_t)(top - (uintptr_t)p);
}

/* ------------------------------------------------------------------ the fleet */
static void net_wake(void *user, uint8_t gw, uint64_t at_us)
{
    (void)user;
    (void)gw;
    if (at_us < b.wake_at) {
        b.wake_at = at_us;
        (void)elk_sim_queue_push(&b.core.queue, at_us, EV_GW, 0, at_us);
    }
}

static void on_event(void *user, elk_lock_t *lock, const elk_lock_event_t *ev)
{
    (void)user;
    (void)lock;
    if (ev->type == ELK_LOCK_EV_ACQUIRED) {
        b.acquired = true;
    }
}

/* The transport, wrapped so its share of a lib call can be told apart. */
#define IN_PORT(ctx, call)                                                                         \
    elk_transport_t *t_ = (elk_transport_t *)(ctx);                                                \
    uint32_t t0_ = ticks();                                                                        \
    __typeof__(t_->call) r_ = t_->call;                                                            \
    b.port_ticks += ticks() - t0_;                                                                 \
    return r_

static int w_open(void *ctx, const elk_endpoint_t *ep)
{
    IN_PORT(ctx, open(t_->ctx, ep));
}
static int w_progress(void *ctx)
{
    IN_PORT(ctx, progress(t_->ctx));
}
static int32_t w_send(void *ctx, const uint8_t *buf, size_t len)
{
    IN_PORT(ctx, send(t_->ctx, buf, len));
}
static int32_t w_recv(void *ctx, uint8_t *buf, size_t len)
{
    IN_PORT(ctx, recv(t_->ctx, buf, len));
}
static int w_wait(void *ctx, unsigned *events)
{
    IN_PORT(ctx, wait(t_->ctx, events));
}
static void w_close(void *ctx)
{
    elk_transport_t *t = (elk_transport_t *)ctx;
    uint32_t t0 = ticks();
    t->close(t->ctx);
    b.port_ticks += ticks() - t0;
}

static elk_transport_t wrapped(uint32_t n)
{
    elk_transport_t t = {&b.inner[n], w_open, w_progress, w_send, w_recv, w_close, w_wait};
    b.inner[n] = elk_sim_net_transport(&b.net, 0, n);
    return t;
}

static int setup(void)
{
    static const elk_sim_net_params_t net = {
        .delay_min_us = 50, .delay_max_us = 50, .retry_us = 200000};
    elk_client_config_t cc;
    elk_lock_config_t lc;
    uint32_t n;
    int rc;
    elk_sim_rng_seed(&b.core.rng, 1);
    elk_sim_rng_seed(&b.rng, 2);
    b.entropy = elk_sim_rng_entropy(&b.rng);
    b.wake_at = UINT64_MAX;
    rc = elk_sim_queue_init(&b.core.queue, b.events, sizeof b.events / sizeof b.events[0]);
    if (rc == ELK_OK) {
        rc = elk_sim_net_init(&b.net, &b.core, &net, 1, NODES, net_wake, NULL);
    }
    if (rc != ELK_OK) {
        return rc;
    }
    elk_sim_scripts_init(&b.scripts, &b.net, false);
    (void)elk_sim_net_set_scripts(&b.net, b.scripts.entry, ELK_SIM_EDGELOCK_SCRIPTS);
    for (n = 0; n < NODES; n++) {
        elk_sim_clock_init(&b.net.nodes[n].clock, &b.core.now_us, INT64_C(1700000000000000), 0);
        /* a fleet in use: its fleet marker made long ago (issue 26: a fleet's first use has no
         * vote for the quarantine window, longer than this program's waits) */
        (void)elk_sim_redis_set(&b.net.nodes[n], (const uint8_t *)"elk:marker", 10u,
                                (const uint8_t *)"@1", 2u, 0);
    }
    elk_sim_clock_init(&b.clock, &b.core.now_us, INT64_C(1000000000), 0);
    rc = elk_pool_init(&b.pool, b.pool_mem, sizeof b.pool_mem, CONFIG_ELK_POOL_BLOCK_SIZE,
                       POOL_BLOCKS);
    for (n = 0; rc == ELK_OK && n < NODES; n++) {
        elk_node_config_t nc;
        elk_transport_t t = wrapped(n);
        elk_node_config_defaults(&nc);
        nc.endpoint.host = "127.0.0.1";
        nc.endpoint.port = (uint16_t)(ELK_SIM_PORT_BASE + n);
        rc = elk_node_init(&b.nodes[n], &nc, &t, &b.pool, &b.entropy, NULL);
    }
    if (rc == ELK_OK) {
        rc = elk_fleet_init(&b.fleet, b.nodes, NODES);
    }
    if (rc == ELK_OK) {
        elk_client_config_defaults(&cc);
        cc.gateway_id = "gw0";
        cc.mode = ELK_MODE_REDLOCK;
        rc = elk_client_init(&b.client, &cc, &b.fleet, &b.entropy, NULL);
    }
    if (rc == ELK_OK) {
        elk_lock_config_defaults(&lc);
        lc.fencing = true;
        rc = elk_lock_init(&b.lock, &b.client, "valve0", &lc, on_event, NULL);
    }
    return rc;
}

static uint64_t now_ms(void)
{
    return elk_sim_clock_now_ms(&b.clock);
}

/* Stack probe of one lib call: paints a window below the caller's stack pointer
 * (leaving a small gap for this helper's own frame), and after the call reads how
 * deep below that stack pointer the call wrote. */
#define PROBE_WORDS 4096u
#if defined(__arm__)
#define CURRENT_SP(v) __asm__ volatile("mov %0, sp" : "=r"(v))
#else
#define CURRENT_SP(v) __asm__ volatile("mov %%rsp, %0" : "=r"(v))
#endif
static __attribute__((noinline)) uintptr_t probe_paint(void)
{
    uint32_t *top = (uint32_t *)((uintptr_t)__builtin_frame_address(0) - 64u);
    uint32_t *p = top - PROBE_WORDS;
    while (p < top) {
        *p++ = PAINT;
    }
    return (uintptr_t)top;
}

static void probe_end(uintptr_t sp, uintptr_t top)
{
    const uint32_t *p = (const uint32_t *)top - PROBE_WORDS;
    size_t used;
    while ((uintptr_t)p < top && *p == PAINT) {
        p++;
    }
    used = (size_t)(sp - (uintptr_t)p);
    if (used > b.lib_stack) {
        b.lib_stack = used;
    }
}

/* One lib call: its ticks go to lib_ticks, or (probe pass) its stack depth to lib_stack. */
#define IN_LIB(expr)                                                                               \
    do {                                                                                           \
        if (b.probe) {                                                                             \
            uintptr_t sp_, top_;                                                                   \
            CURRENT_SP(sp_);                                                                       \
            top_ = probe_paint();                                                                  \
            expr;                                                                                  \
            probe_end(sp_, top_);                                                                  \
        } else {                                                                                   \
            uint32_t t0_ = ticks();                                                                \
            expr;                                                                                  \
            b.lib_ticks += ticks() - t0_;                                                          \
        }                                                                                          \
    } while (0)

/* Runs events until done() holds (or the queue is empty: a setup error). */
static bool run_until(bool (*done)(void))
{
    elk_sim_event_t ev;
    while (!done()) {
        uint64_t next = 0;
        if (!elk_sim_queue_pop(&b.core.queue, &ev)) {
            return false;
        }
        b.core.now_us = ev.at_us;
        if (elk_sim_net_handle(&b.net, &ev) || ev.b != b.wake_at) {
            continue;
        }
        b.wake_at = UINT64_MAX;
        IN_LIB(next = elk_client_poll(&b.client, now_ms()));
        if (next != 0u && next != UINT64_MAX) {
            net_wake(NULL, 0,
                     elk_sim_clock_true_at(&b.clock, next > now_ms() ? next : now_ms() + 1u));
        }
    }
    return true;
}

static bool is_acquired(void)
{
    return b.acquired;
}

static bool is_idle(void)
{
    return elk_lock_state(&b.lock) == ELK_LOCK_IDLE && !elk_lock_busy(&b.lock);
}

/* Poll once now, so what an API call queued is sent. */
static void kick(void)
{
    net_wake(NULL, 0, b.core.now_us);
}

static __attribute__((noinline)) int cycle_run(uint32_t cycles)
{
    uint32_t i;
    for (i = 0; i < cycles; i++) {
        int rc = 0;
        b.acquired = false;
        IN_LIB(rc = elk_lock_acquire(&b.lock, now_ms(), now_ms() + 2000u));
        kick();
        if (rc != ELK_E_WOULD_BLOCK || !run_until(is_acquired)) {
            return -1;
        }
        IN_LIB(rc = elk_lock_release(&b.lock, now_ms()));
        kick();
        if (rc != ELK_OK || !run_until(is_idle)) {
            return -2;
        }
    }
    return 0;
}

/* 1,000,000 iterations of a two-instruction loop: the counter's calibration. */
static uint32_t calibrate(void)
{
#if defined(__arm__)
    uint32_t t0 = ticks(), n = 1000000u;
    __asm__ volatile("1: subs %0, %0, #1\n\tbne 1b" : "+r"(n) : : "cc");
    return ticks() - t0;
#else
    return 0;
#endif
}

static int measure(uint32_t cycles, uint32_t shift, bool probe)
{
    uintptr_t top;
    uint32_t t0, total, lib, port, cal;
    uint64_t sim0;
    size_t stack;
    int rc = setup();
    if (rc != ELK_OK) {
        printf("cycle: setup failed: %s\n", elk_err_name(rc));
        return 1;
    }
    ticks_start();
    cal = calibrate();
    if (cycle_run(1) != 0) { /* connect + handshakes + script loads: not a cycle */
        printf("cycle: warm-up cycle failed\n");
        return 1;
    }
    b.probe = probe; /* pass 1: stack depth of every lib call */
    if (probe && cycle_run(cycles) != 0) {
        printf("cycle: probe pass failed\n");
        return 1;
    }
    b.probe = false;
    top = paint_below_caller();
    b.lib_ticks = 0;
    b.port_ticks = 0;
    sim0 = b.core.now_us;
    t0 = ticks();
    rc = cycle_run(cycles);
    total = ticks() - t0;
    lib = b.lib_ticks;
    port = b.port_ticks;
    stack = used_below(top);
    if (rc != 0 || b.net.dropped_events != 0u) {
        printf("cycle: cycle failed (%d, %u events dropped)\n", rc, (unsigned)b.net.dropped_events);
        return 1;
    }
    printf("cycle: %" PRIu32 " acquire+release cycles, 3 nodes, fencing on\n", cycles);
    printf("  simulated time per cycle: %" PRIu64 " us\n", (b.core.now_us - sim0) / cycles);
    if (probe) {
        printf("  stack high-water of a lib call (deepest of every call in %" PRIu32
               " cycles): %zu bytes\n",
               cycles, b.lib_stack);
    }
    printf("  stack high-water of the cycles, the simulated servers included: %zu bytes\n", stack);
    if (cal != 0u) {
        /* ticks = instructions * 2^shift / 40 */
        uint64_t scale = (uint64_t)1u << shift;
        printf("  calibration: 2,000,000 loop instructions read as %" PRIu64
               " (icount shift %" PRIu32 ")\n",
               (uint64_t)cal * 40u / scale, shift);
        printf("  instructions per cycle, whole (lib + port/sim servers + network): %" PRIu64 "\n",
               (uint64_t)total * 40u / scale / cycles);
        printf("  instructions per cycle, inside lib calls (lib + transport): %" PRIu64 "\n",
               (uint64_t)lib * 40u / scale / cycles);
        printf(
            "  instructions per cycle, lib/ alone (inside lib calls, less the transport): %" PRIu64
            "\n",
            (uint64_t)(lib - port) * 40u / scale / cycles);
    }
    printf("  sizeof: elk_node_t %zu, elk_fleet_t %zu, elk_client_t %zu, elk_lock_t %zu, "
           "elk_pool_t %zu,"
           " pool blocks %zu; 3-node total %zu bytes\n",
           sizeof(elk_node_t), sizeof(elk_fleet_t), sizeof(elk_client_t), sizeof(elk_lock_t),
           sizeof(elk_pool_t), sizeof b.pool_mem,
           NODES * sizeof(elk_node_t) + sizeof(elk_fleet_t) + sizeof(elk_client_t) +
               sizeof(elk_lock_t) + sizeof(elk_pool_t) + sizeof b.pool_mem);
    printf("  sizeof the simulated servers and network (elk_sim_net_t): %zu bytes\n",
           sizeof(elk_sim_net_t));
    return 0;
}

static uint32_t arg_u32(int argc, char **argv, const char *name, uint32_t dflt)
{
    int i;
    for (i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], name) == 0) {
            return (uint32_t)strtoul(argv[i + 1], NULL, 10);
        }
    }
    return dflt;
}

#if defined(__arm__)
int main(int argc, char **argv)
{
    return measure(arg_u32(argc, argv, "--cycles", 200), arg_u32(argc, argv, "--icount-shift", 10),
                   arg_u32(argc, argv, "--probe", 1) != 0u);
}
#else
#include <pthread.h>

static uint32_t host_stack[64 * 1024 / 4] __attribute__((aligned(64)));
static uint32_t host_cycles;
static bool host_probe;
static int host_rc;

static void *host_thread(void *arg)
{
    (void)arg;
    host_rc = measure(host_cycles, 0, host_probe);
    return NULL;
}

/* The host runs the measurement on a thread whose stack is a known array, so the
 * same painting works. */
int main(int argc, char **argv)
{
    pthread_attr_t a;
    pthread_t t;
    host_cycles = arg_u32(argc, argv, "--cycles", 200);
    host_probe = arg_u32(argc, argv, "--probe", 1) != 0u;
    host_stack_base = host_stack;
    if (pthread_attr_init(&a) != 0 ||
        pthread_attr_setstack(&a, host_stack, sizeof host_stack) != 0 ||
        pthread_create(&t, &a, host_thread, NULL) != 0) {
        printf("cycle: cannot start the measuring thread\n");
        return 1;
    }
    pthread_join(t, NULL);
    return host_rc;
}
#endif
