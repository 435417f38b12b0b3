/* SPDX-License-Identifier: MIT */
/*
 * What mbedTLS needs from a board without a file system or a libc heap:
 * - allocation before the static arena is set up fails (MBEDTLS_PLATFORM_STD_CALLOC);
 * - the wall clock for certificate validity: the host's, over semihosting (SYS_TIME);
 *   a device reads its RTC (kept by SNTP) here;
 * - the two file loaders port/mbedtls references for configurations that give file
 *   paths: with no file system they report the feature as unavailable (the image
 *   passes its CA as a PEM buffer).
 */
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "mbedtls/pk.h"
#include "mbedtls/platform.h"
#include "mbedtls/platform_time.h"
#include "mbedtls/x509_crt.h"

void *mcu_mbedtls_no_calloc(size_t n, size_t size);
void mcu_mbedtls_no_free(void *p);

void *mcu_mbedtls_no_calloc(size_t n, size_t size)
{
    (void)n;
    (void)size;
    return NULL;
}

void mcu_mbedtls_no_free(void *p)
{
    (void)p;
}

static int sh_time(void)
{
    register int r0 __asm__("r0") = 0x11; /* SYS_TIME: seconds since 1970, host clock */
    register void *r1 __asm__("r1") = NULL;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

mbedtls_time_t mcu_mbedtls_time(mbedtls_time_t *t)
{
    mbedtls_time_t now = (mbedtls_time_t)(uint32_t)sh_time();
    if (t != NULL) {
        *t = now;
    }
    return now;
}

struct tm *mbedtls_platform_gmtime_r(const mbedtls_time_t *tt, struct tm *tm_buf)
{
    time_t t = (time_t)*tt;
    return gmtime_r(&t, tm_buf);
}

int mbedtls_x509_crt_parse_file(mbedtls_x509_crt *chain, const char *path)
{
    (void)chain;
    (void)path;
    return MBEDTLS_ERR_X509_FEATURE_UNAVAILABLE;
}

int mbedtls_pk_parse_keyfile(mbedtls_pk_context *ctx, const char *path, const char *password)
{
    (void)ctx;
    (void)path;
    (void)password;
    return MBEDTLS_ERR_PK_FEATURE_UNAVAILABLE;
}
