/* SPDX-License-Identifier: MIT */
/* The all-or-nothing integration tests over TLS (mbedTLS port, certificates generated per
 * run): the same cases as test_multi_redis.c. */
#define ELK_IT_TLS 1
#include "test_multi_redis.c"
