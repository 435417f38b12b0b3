/* SPDX-License-Identifier: MIT */
/* The semaphore integration tests over TLS (mbedTLS port, certificates generated per
 * run): the same cases as test_sem_redis.c. */
#define ELK_IT_TLS 1
#include "test_sem_redis.c"
