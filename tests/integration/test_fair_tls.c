/* SPDX-License-Identifier: MIT */
/* The fair-waiting integration tests over TLS (mbedTLS port, certificates generated per
 * run): the same cases as test_fair_redis.c. */
#define ELK_IT_TLS 1
#include "test_fair_redis.c"
