/* SPDX-License-Identifier: MIT */
/*
 * Internal to port/lwip: readiness of one lwIP socket, shared by the transport
 * (connect completion) and elk_lwip_wait.
 */
#ifndef ELK_PORT_LWIP_POLL1_H
#define ELK_PORT_LWIP_POLL1_H

#include <stdint.h>

/* Wait up to timeout_ms (0: just look) for the ELK_WAIT_* events on lwIP socket
 * sock. *ready gets the ELK_WAIT_* bits that are ready; an error or hang-up reports
 * both. Returns 0, or -1 with errno set when lwIP's poll/select failed. */
int elk_lwip_poll1(int sock, unsigned events, uint32_t timeout_ms, unsigned *ready);

#endif /* ELK_PORT_LWIP_POLL1_H */
