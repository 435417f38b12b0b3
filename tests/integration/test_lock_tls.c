/* SPDX-License-Identifier: MIT */
/* The lease-engine integration tests over TLS (mbedTLS port, certificates generated
 * per run): the same cases as test_lock_redis.c. */
#define ELK_IT_TLS 1
#include "test_lock_redis.c"
