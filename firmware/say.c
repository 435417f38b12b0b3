/* SPDX-License-Identifier: MIT */
/* The elk CLI's messages to people: see elkfw/say.h. */
#include "elkfw/say.h"

#include <stdarg.h>
#include <stdio.h>

void elkfw_say(const char *fmt, ...)
{
    va_list ap;
    fputs("elk: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
