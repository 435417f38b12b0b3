/* SPDX-License-Identifier: MIT */
/* CMSDK APB timer 0 at 0x40000000 on QEMU's mps2-an386 (see board.h). It counts down
 * from RELOAD at the 25 MHz peripheral clock; with RELOAD = 0xFFFFFFFF every tick is
 * one step down, so elapsed ticks are (previous - current) modulo 2^32. */
#include "board.h"

#define TIMER0_BASE 0x40000000u
#define TIMER_CTRL (*(volatile uint32_t *)(TIMER0_BASE + 0x00u))
#define TIMER_VALUE (*(volatile uint32_t *)(TIMER0_BASE + 0x04u))
#define TIMER_RELOAD (*(volatile uint32_t *)(TIMER0_BASE + 0x08u))

static uint32_t last_value;
static uint64_t total_ticks;
static uint64_t work_ticks;

void mcu_board_init(void)
{
    TIMER_CTRL = 0u;
    TIMER_RELOAD = 0xFFFFFFFFu;
    TIMER_VALUE = 0xFFFFFFFFu;
    TIMER_CTRL = 1u; /* enable, no interrupt */
    last_value = TIMER_VALUE;
    total_ticks = 0u;
}

uint64_t mcu_ticks(void)
{
    uint32_t v = TIMER_VALUE;
    total_ticks += (uint32_t)(last_value - v);
    last_value = v;
    return total_ticks;
}

uint64_t mcu_ms(void)
{
    return mcu_ticks() / (MCU_TICK_HZ / 1000u);
}

uint64_t mcu_work_ticks(void)
{
    return work_ticks;
}

void mcu_work_add(uint64_t ticks)
{
    work_ticks += ticks;
}
