/* SPDX-License-Identifier: MIT */
/*
 * `elk status --watch`: one screen of elkd's state drawn from the STATUS lines (the
 * agent line, one per resource, one per node; docs/control-protocol.md). Pure rendering:
 * the caller fetches the lines and decides how often to draw.
 */
#ifndef ELKFW_WATCH_H
#define ELKFW_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Width of the validity bar in cells. */
#define ELKFW_WATCH_BAR 20

/* Draw one frame to out from n STATUS lines (NUL-terminated, without '\n'). tty: clear
 * the screen first and draw the validity bars with block characters; otherwise plain
 * ASCII lines and a blank line after the frame. clock_text is shown in the header. */
void elkfw_watch_render(FILE *out, const char *const *lines, size_t n, bool tty,
                        const char *clock_text);

/* The value of key in one "kind key=value ..." line, copied to buf (cap bytes, always
 * NUL-terminated); false (buf "") if the key is not there. */
bool elkfw_watch_field(const char *line, const char *key, char *buf, size_t cap);

#endif /* ELKFW_WATCH_H */
