/* SPDX-License-Identifier: MIT */
/*
 * The elk CLI's messages to people: one line on stderr, "elk: " in front, so every
 * subcommand (run, guard, ...) speaks the same way.
 */
#ifndef ELKFW_SAY_H
#define ELKFW_SAY_H

/* Print "elk: <formatted text>\n" on stderr. */
__attribute__((format(printf, 1, 2))) void elkfw_say(const char *fmt, ...);

#endif /* ELKFW_SAY_H */
