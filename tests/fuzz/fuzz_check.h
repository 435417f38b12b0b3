/* SPDX-License-Identifier: MIT */
/* CHECK(c) for the fuzz targets: abort() unless c, in every build type (assert vanishes
 * under NDEBUG, which fuzz builds use). */
#ifndef ELK_FUZZ_CHECK_H
#define ELK_FUZZ_CHECK_H

#include <stdlib.h>

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            abort();                                                                               \
    } while (0)

#endif
