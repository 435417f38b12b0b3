/* SPDX-License-Identifier: MIT */
/*
 * Default value of every compile-time option, for builds without Kconfig.
 *
 * Each is set only if not defined yet, so the Kconfig header (elk_config.h, included
 * first by elk/config.h), a -D flag or a port's own header wins. The values are
 * Kconfig's defaults; the test config.defaults_match_kconfig keeps them equal. The
 * help text of each option is in the top-level Kconfig.
 */
#ifndef ELK_CONFIG_DEFAULTS_H
#define ELK_CONFIG_DEFAULTS_H

/* Most Redis masters in one fleet (Redlock quorum is N/2+1). */
#ifndef CONFIG_ELK_MAX_NODES
#define CONFIG_ELK_MAX_NODES 5
#endif
/* Most locks one client holds or wants at once. */
#ifndef CONFIG_ELK_MAX_LOCKS
#define CONFIG_ELK_MAX_LOCKS 64
#endif
/* Longest key in bytes: prefix + resource + suffix. */
#ifndef CONFIG_ELK_MAX_KEY_LEN
#define CONFIG_ELK_MAX_KEY_LEN 128
#endif
/* Longest gateway id in bytes. */
#ifndef CONFIG_ELK_GATEWAY_ID_MAX_LEN
#define CONFIG_ELK_GATEWAY_ID_MAX_LEN 32
#endif
/* Lease TTL in milliseconds when the caller gives none. */
#ifndef CONFIG_ELK_DEFAULT_TTL_MS
#define CONFIG_ELK_DEFAULT_TTL_MS 10000
#endif
/* Cap on one hold (renewals stop after it) when the caller gives none; 0: none. */
#ifndef CONFIG_ELK_DEFAULT_MAX_HOLD_MS
#define CONFIG_ELK_DEFAULT_MAX_HOLD_MS 3600000
#endif
/* Clock drift allowance, parts per million of the TTL (10000: Redlock's 0.01). */
#ifndef CONFIG_ELK_DRIFT_FACTOR_PPM
#define CONFIG_ELK_DRIFT_FACTOR_PPM 10000
#endif
/* Fixed clock drift allowance in milliseconds. */
#ifndef CONFIG_ELK_DRIFT_FIXED_MS
#define CONFIG_ELK_DRIFT_FIXED_MS 2
#endif
/* Renew once this percentage of the TTL has passed. */
#ifndef CONFIG_ELK_RENEW_FRACTION_PCT
#define CONFIG_ELK_RENEW_FRACTION_PCT 33
#endif
/* Pool block size in bytes: one request or reply buffer (>= ELK_LOCK_REQUEST_MAX). */
#ifndef CONFIG_ELK_POOL_BLOCK_SIZE
#define CONFIG_ELK_POOL_BLOCK_SIZE 1280
#endif
/* Number of pool blocks. */
#ifndef CONFIG_ELK_POOL_BLOCK_COUNT
#define CONFIG_ELK_POOL_BLOCK_COUNT 16
#endif
/* Deepest nesting of aggregates in one RESP reply. */
#ifndef CONFIG_ELK_RESP_MAX_DEPTH
#define CONFIG_ELK_RESP_MAX_DEPTH 8
#endif
/* Most values (nodes) in one RESP reply; RESP3 builds need 64 for HELLO's reply. */
#ifndef CONFIG_ELK_RESP_MAX_NODES
#define CONFIG_ELK_RESP_MAX_NODES 64
#endif
/* Whole-reply fast path of the RESP decoder, built on 64-bit targets only (1 on, 0 off). */
#ifndef CONFIG_ELK_RESP_FAST_PATH
#define CONFIG_ELK_RESP_FAST_PATH 1
#endif
/* Most pipelined requests in flight on one node. */
#ifndef CONFIG_ELK_NODE_MAX_INFLIGHT
#define CONFIG_ELK_NODE_MAX_INFLIGHT 16
#endif
/* Speak RESP3 (HELLO 3), falling back to RESP2 (1 on, 0 off). */
#ifndef CONFIG_ELK_RESP3
#define CONFIG_ELK_RESP3 1
#endif
/* TLS support through mbedTLS (1 on, 0 off). */
#ifndef CONFIG_ELK_TLS
#define CONFIG_ELK_TLS 1
#endif
/* Most verbose log level compiled in: 0 none, 1 error, 2 warn, 3 info, 4 debug. */
#ifndef CONFIG_ELK_LOG_LEVEL
#define CONFIG_ELK_LOG_LEVEL 3
#endif
/* Sentences in elk_err_message() (1), or only the symbolic names (0). */
#ifndef CONFIG_ELK_ERR_MESSAGES
#define CONFIG_ELK_ERR_MESSAGES 1
#endif
/* elkd (firmware/): most resources one configuration may hold. */
#ifndef CONFIG_ELKD_MAX_RESOURCES
#define CONFIG_ELKD_MAX_RESOURCES 1024
#endif
/* elkd (firmware/): local client connections served at once. */
#ifndef CONFIG_ELKD_MAX_CLIENTS
#define CONFIG_ELKD_MAX_CLIENTS 16
#endif

/* Counting semaphores, lib/sem (1 built, 0 left out). */
#ifndef CONFIG_ELK_SEM
#define CONFIG_ELK_SEM 1
#endif
/* Most permits of one semaphore: each is a lock (elk_sem_t holds this many). */
#ifndef CONFIG_ELK_SEM_MAX_PERMITS
#define CONFIG_ELK_SEM_MAX_PERMITS 8
#endif
/* All-or-nothing locks over several resources, lib/multi (1 built, 0 left out). */
#ifndef CONFIG_ELK_MULTI
#define CONFIG_ELK_MULTI 1
#endif
/* Most resources of one multi-lock: each is a lock (elk_multi_t holds this many). */
#ifndef CONFIG_ELK_MULTI_MAX_RESOURCES
#define CONFIG_ELK_MULTI_MAX_RESOURCES 4
#endif
/* Fair waiting, lib/fair (1 built, 0 left out). */
#ifndef CONFIG_ELK_FAIR
#define CONFIG_ELK_FAIR 1
#endif
/* Default ticket TTL of a fair waiter, ms (elk_fair_init with 0). */
#ifndef CONFIG_ELK_FAIR_TICKET_TTL_MS
#define CONFIG_ELK_FAIR_TICKET_TTL_MS 3000
#endif

#endif /* ELK_CONFIG_DEFAULTS_H */
