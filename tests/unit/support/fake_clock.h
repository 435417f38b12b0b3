/* SPDX-License-Identifier: MIT */
/*
 * Manual clock for unit tests: an elk_clock_t whose time moves only when the test
 * says so (or, optionally, by a fixed step on every read, to model time passing
 * inside a call). Monotonic milliseconds, like the ports' clocks.
 *
 *     fake_clock_t clk;
 *     fake_clock_init(&clk, 1000);          // start at t=1000 ms
 *     elk_clock_t c = fake_clock_iface(&clk);
 *     fake_clock_advance(&clk, 250);        // now 1250
 */
#ifndef FAKE_CLOCK_H
#define FAKE_CLOCK_H

#include <stdint.h>

#include "elk/platform.h"

typedef struct fake_clock {
    uint64_t now;   /* current time, ms; tests may also write it directly */
    uint64_t step;  /* added after every now_ms() read (default 0: frozen) */
    unsigned reads; /* now_ms() calls so far */
} fake_clock_t;

/* Start at start_ms with no auto-step. */
void fake_clock_init(fake_clock_t *c, uint64_t start_ms);
/* The elk_clock_t to hand to lib/ or a port (ctx = c). */
elk_clock_t fake_clock_iface(fake_clock_t *c);
/* Current time without counting a read. */
uint64_t fake_clock_now(const fake_clock_t *c);
/* Move time forward by ms. */
void fake_clock_advance(fake_clock_t *c, uint64_t ms);
/* Jump to t (may go backwards, to test that code copes; ports never do it). */
void fake_clock_set(fake_clock_t *c, uint64_t t);
/* Advance by step ms after every read through the interface. */
void fake_clock_set_step(fake_clock_t *c, uint64_t step);
/* Run a simulated world to time t: call pump() (it returns the next time anything is due)
 * and move the clock to that time, never past t and at least 1 ms a round, then pump once
 * more at t. */
void fake_clock_run_until(fake_clock_t *c, uint64_t t, uint64_t (*pump)(void));

#endif /* FAKE_CLOCK_H */
