/* SPDX-License-Identifier: MIT */
/*
 * Cooperative sys_arch (see arch/sys_arch.h). lwIP runs with NO_SYS=0 and
 * LWIP_TCPIP_CORE_LOCKING=1, so every socket call executes lwIP's core code directly
 * in the calling thread; the only thing a thread would otherwise do for us is feed
 * received frames and timers into the core. Here the waits do it: any wait that is
 * not satisfied at once calls mcu_net_poll() until it is. tcpip_init() is never
 * called (no thread to start); the image calls lwip_init() itself.
 */
#include <string.h>

#include "board.h"
#include "lwip/sys.h"
#include "lwip/tcpip.h"
#include "net.h"

void sys_init(void)
{
}

u32_t sys_now(void)
{
    return (u32_t)mcu_ms();
}

sys_prot_t sys_arch_protect(void)
{
    return 0; /* nothing runs in interrupts */
}

void sys_arch_unprotect(sys_prot_t pval)
{
    (void)pval;
}

sys_thread_t sys_thread_new(const char *name, lwip_thread_fn thread, void *arg, int stacksize,
                            int prio)
{
    (void)thread;
    (void)arg;
    (void)stacksize;
    (void)prio;
    mcu_lwip_assert(name, "sys_thread_new: this image has no threads", 0);
}

err_t sys_mutex_new(sys_mutex_t *mutex)
{
    mutex->depth = 0;
    mutex->valid = 1;
    return ERR_OK;
}

void sys_mutex_lock(sys_mutex_t *mutex)
{
    mutex->depth++;
}

void sys_mutex_unlock(sys_mutex_t *mutex)
{
    mutex->depth--;
}

void sys_mutex_free(sys_mutex_t *mutex)
{
    mutex->valid = 0;
}

err_t sys_sem_new(sys_sem_t *sem, u8_t count)
{
    sem->count = count;
    sem->valid = 1;
    return ERR_OK;
}

void sys_sem_signal(sys_sem_t *sem)
{
    sem->count++;
}

void sys_sem_free(sys_sem_t *sem)
{
    sem->valid = 0;
}

/* Polls until *ready is non-zero or timeout_ms (0: forever) passes. Returns the ms
 * waited or SYS_ARCH_TIMEOUT. A wait while the core lock is held could never end
 * (nothing else runs), so it stops the image instead. */
static u32_t wait_for(volatile uint32_t *ready, u32_t timeout_ms)
{
    uint64_t start = mcu_ms();
    if (lock_tcpip_core.depth != 0u) {
        mcu_lwip_assert("a wait with the lwIP core locked", __FILE__, __LINE__);
    }
    while (*ready == 0u) {
        uint64_t now = mcu_ms();
        if (timeout_ms != 0u && now - start >= timeout_ms) {
            return SYS_ARCH_TIMEOUT;
        }
        mcu_net_poll();
    }
    return (u32_t)(mcu_ms() - start);
}

u32_t sys_arch_sem_wait(sys_sem_t *sem, u32_t timeout)
{
    u32_t waited = wait_for(&sem->count, timeout);
    if (waited != SYS_ARCH_TIMEOUT) {
        sem->count--;
    }
    return waited;
}

err_t sys_mbox_new(sys_mbox_t *mbox, int size)
{
    if (size > MCU_MBOX_SIZE) {
        return ERR_MEM;
    }
    memset(mbox, 0, sizeof *mbox);
    mbox->valid = 1;
    return ERR_OK;
}

void sys_mbox_free(sys_mbox_t *mbox)
{
    mbox->valid = 0;
}

err_t sys_mbox_trypost(sys_mbox_t *mbox, void *msg)
{
    if (mbox->used == MCU_MBOX_SIZE) {
        return ERR_MEM;
    }
    mbox->msg[(mbox->head + mbox->used) % MCU_MBOX_SIZE] = msg;
    mbox->used++;
    return ERR_OK;
}

err_t sys_mbox_trypost_fromisr(sys_mbox_t *mbox, void *msg)
{
    return sys_mbox_trypost(mbox, msg);
}

void sys_mbox_post(sys_mbox_t *mbox, void *msg)
{
    if (sys_mbox_trypost(mbox, msg) != ERR_OK) {
        mcu_lwip_assert("sys_mbox_post: mailbox full (nothing else can empty it)", __FILE__,
                        __LINE__);
    }
}

u32_t sys_arch_mbox_tryfetch(sys_mbox_t *mbox, void **msg)
{
    if (mbox->used == 0u) {
        return SYS_MBOX_EMPTY;
    }
    void *m = mbox->msg[mbox->head];
    mbox->head = (mbox->head + 1u) % MCU_MBOX_SIZE;
    mbox->used--;
    if (msg != NULL) {
        *msg = m;
    }
    return 0;
}

u32_t sys_arch_mbox_fetch(sys_mbox_t *mbox, void **msg, u32_t timeout)
{
    u32_t waited = wait_for((volatile uint32_t *)&mbox->used, timeout);
    if (waited != SYS_ARCH_TIMEOUT) {
        (void)sys_arch_mbox_tryfetch(mbox, msg);
    }
    return waited;
}
