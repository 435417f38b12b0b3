/* SPDX-License-Identifier: MIT */
/*
 * Compile-time configuration: the header Kconfig generates (elk_config.h) when the
 * build has one, then elk/elk_config_defaults.h for every option still undefined.
 * So lib/ and port/ also build with nothing but -I lib/include (the Kconfig
 * defaults), and whatever the generated header sets wins.
 *
 * elk_config.h is found with __has_include (GCC, Clang); a compiler without it gets
 * the header named by -DELK_CONFIG_FILE='"elk_config.h"', or the defaults. A bool
 * that is off must be defined as 0 there, not left out (cmake/kconfig.py writes it
 * so): left out, it would take its default, which may be on.
 * Every translation unit of one program must see the same configuration: the sizes
 * of elk's structs follow it.
 */
#ifndef ELK_CONFIG_H
#define ELK_CONFIG_H

#if defined(ELK_CONFIG_FILE)
#include ELK_CONFIG_FILE
#elif defined(__has_include)
#if __has_include("elk_config.h")
#include "elk_config.h"
#endif
#endif

#include "elk/elk_config_defaults.h"

#endif /* ELK_CONFIG_H */
