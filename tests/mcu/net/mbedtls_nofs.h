/* SPDX-License-Identifier: MIT */
/* Force-included into port/mbedtls for the network image: mbedTLS declares its file
 * loaders only with MBEDTLS_FS_IO, which a board without a file system leaves out;
 * tests/mcu/net/mbedtls_mcu.c defines them to report the feature as unavailable. */
#ifndef ELK_MCU_MBEDTLS_NOFS_H
#define ELK_MCU_MBEDTLS_NOFS_H

#include "mbedtls/pk.h"
#include "mbedtls/x509_crt.h"

#if !defined(MBEDTLS_FS_IO)
int mbedtls_x509_crt_parse_file(mbedtls_x509_crt *chain, const char *path);
int mbedtls_pk_parse_keyfile(mbedtls_pk_context *ctx, const char *path, const char *password);
#endif

#endif /* ELK_MCU_MBEDTLS_NOFS_H */
