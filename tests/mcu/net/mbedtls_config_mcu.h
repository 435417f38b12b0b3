/* SPDX-License-Identifier: MIT */
/*
 * mbedTLS 2.28 configuration of the network image (MBEDTLS_CONFIG_FILE): a TLS 1.2
 * client with ECDHE (P-256, P-384, X25519) and RSA or ECDSA server certificates,
 * AES-GCM, no file system, no sockets, no OS entropy (the port seeds CTR-DRBG from the
 * injected elk_entropy_t), and every allocation from a static arena
 * (MBEDTLS_MEMORY_BUFFER_ALLOC_C, mbedtls_memory_buffer_alloc_init in lease_mcu.c).
 */
#ifndef ELK_MCU_MBEDTLS_CONFIG_H
#define ELK_MCU_MBEDTLS_CONFIG_H

/* System */
#define MBEDTLS_HAVE_ASM /* bignum inner loops in Thumb-2 (UMAAL on the M4) */
#define MBEDTLS_HAVE_TIME
#define MBEDTLS_HAVE_TIME_DATE /* certificate validity, against the semihosting clock */
#define MBEDTLS_PLATFORM_C
#define MBEDTLS_PLATFORM_MEMORY
#define MBEDTLS_PLATFORM_TIME_ALT
#define MBEDTLS_PLATFORM_GMTIME_R_ALT /* newlib's gmtime() allocates; gmtime_r does not */
#include <time.h>
time_t mcu_mbedtls_time(time_t *t);
#define MBEDTLS_PLATFORM_STD_TIME mcu_mbedtls_time
/* Until mbedtls_memory_buffer_alloc_init runs, allocations fail instead of reaching a
 * libc heap the image does not have. */
#include <stddef.h>
void *mcu_mbedtls_no_calloc(size_t n, size_t size);
void mcu_mbedtls_no_free(void *p);
#define MBEDTLS_PLATFORM_STD_CALLOC mcu_mbedtls_no_calloc
#define MBEDTLS_PLATFORM_STD_FREE mcu_mbedtls_no_free
#define MBEDTLS_MEMORY_BUFFER_ALLOC_C
#define MBEDTLS_MEMORY_DEBUG /* peak use (mbedtls_memory_buffer_alloc_max_get) */
#define MBEDTLS_NO_PLATFORM_ENTROPY
#define MBEDTLS_DEPRECATED_REMOVED

/* Crypto */
#define MBEDTLS_AES_C
#define MBEDTLS_AES_ROM_TABLES /* tables in flash, not RAM */
#define MBEDTLS_GCM_C
#define MBEDTLS_CIPHER_C
#define MBEDTLS_MD_C
#define MBEDTLS_SHA256_C
#define MBEDTLS_SHA512_C
#define MBEDTLS_SHA1_C
#define MBEDTLS_BIGNUM_C
#define MBEDTLS_ECP_C
#define MBEDTLS_ECP_NIST_OPTIM
#define MBEDTLS_ECP_DP_SECP256R1_ENABLED
#define MBEDTLS_ECP_DP_SECP384R1_ENABLED
#define MBEDTLS_ECP_DP_CURVE25519_ENABLED
#define MBEDTLS_ECDH_C
#define MBEDTLS_ECDSA_C
#define MBEDTLS_RSA_C
#define MBEDTLS_PKCS1_V15
#define MBEDTLS_PKCS1_V21
#define MBEDTLS_CTR_DRBG_C
#define MBEDTLS_ASN1_PARSE_C
#define MBEDTLS_ASN1_WRITE_C
#define MBEDTLS_OID_C
#define MBEDTLS_PK_C
#define MBEDTLS_PK_PARSE_C
#define MBEDTLS_PEM_PARSE_C
#define MBEDTLS_BASE64_C

/* X.509 */
#define MBEDTLS_X509_USE_C
#define MBEDTLS_X509_CRT_PARSE_C
#define MBEDTLS_X509_CHECK_KEY_USAGE
#define MBEDTLS_X509_CHECK_EXTENDED_KEY_USAGE

/* TLS */
#define MBEDTLS_SSL_TLS_C
#define MBEDTLS_SSL_CLI_C
#define MBEDTLS_SSL_PROTO_TLS1_2
#define MBEDTLS_KEY_EXCHANGE_ECDHE_RSA_ENABLED
#define MBEDTLS_KEY_EXCHANGE_ECDHE_ECDSA_ENABLED
#define MBEDTLS_SSL_SERVER_NAME_INDICATION
#define MBEDTLS_SSL_EXTENDED_MASTER_SECRET
#define MBEDTLS_SSL_KEEP_PEER_CERTIFICATE
/* Session tickets (RFC 5077, the client side only): port/mbedtls keeps the session of a
 * handshake and offers it at the next open(), so a reconnect is an abbreviated
 * handshake. redis-server issues tickets; without this the client can offer only the
 * session id, which the server no longer has once it freed the connection (docs/mcu.md). */
#define MBEDTLS_SSL_SESSION_TICKETS
#define MBEDTLS_ERROR_C
/* Records in: the full 16 KB (the servers do not negotiate smaller ones). Out: Redis
 * requests are a few hundred bytes; 4 KB records are plenty. */
#define MBEDTLS_SSL_IN_CONTENT_LEN 16384
#define MBEDTLS_SSL_OUT_CONTENT_LEN 4096

#include "mbedtls/check_config.h"

#endif /* ELK_MCU_MBEDTLS_CONFIG_H */
