/*
 * Compile-time configuration: the header that Kconfig generates, with a guard so a
 * build that forgot to generate it fails here, loudly, rather than with odd sizes.
 */
#ifndef ELK_CONFIG_H
#define ELK_CONFIG_H

#include "elk_config.h"

#ifndef CONFIG_ELK_MAX_NODES
#error "elk_config.h lacks CONFIG_ELK_MAX_NODES: generate it from Kconfig (see README)"
#endif

#endif /* ELK_CONFIG_H */
