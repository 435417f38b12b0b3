/*
 * elk_config.h: edgelock's compile-time configuration, generated from Kconfig by
 * cmake/kconfig.py; do not edit. These values size the public structs (elk_client_t,
 * elk_lock_t, pools, replies): they are part of libelk's ABI. A program must be
 * compiled with the elk_config.h installed with the libelk it links, never another.
 */
#define CONFIG_ELK_MAX_NODES 5
#define CONFIG_ELK_MAX_LOCKS 64
#define CONFIG_ELK_MAX_KEY_LEN 128
#define CONFIG_ELK_GATEWAY_ID_MAX_LEN 32
#define CONFIG_ELK_DEFAULT_TTL_MS 10000
#define CONFIG_ELK_DEFAULT_MAX_HOLD_MS 3600000
#define CONFIG_ELK_DRIFT_FACTOR_PPM 10000
#define CONFIG_ELK_DRIFT_FIXED_MS 2
#define CONFIG_ELK_RENEW_FRACTION_PCT 33
#define CONFIG_ELK_POOL_BLOCK_SIZE 1280
#define CONFIG_ELK_POOL_BLOCK_COUNT 16
#define CONFIG_ELK_RESP_MAX_DEPTH 8
#define CONFIG_ELK_RESP_MAX_NODES 64
#define CONFIG_ELK_RESP_FAST_PATH 1
#define CONFIG_ELK_NODE_MAX_INFLIGHT 16
#define CONFIG_ELK_SEM 1
#define CONFIG_ELK_SEM_MAX_PERMITS 8
#define CONFIG_ELK_MULTI 1
#define CONFIG_ELK_MULTI_MAX_RESOURCES 4
#define CONFIG_ELK_FAIR 1
#define CONFIG_ELK_FAIR_TICKET_TTL_MS 3000
#define CONFIG_ELK_RESP3 1
#define CONFIG_ELK_TLS 1
#define CONFIG_ELK_LOG_LEVEL 3
#define CONFIG_ELK_ERR_MESSAGES 1
#define CONFIG_ELKD_MAX_RESOURCES 1024
#define CONFIG_ELKD_MAX_CLIENTS 16
