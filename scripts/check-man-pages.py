#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Fail when the man pages fall behind the code (ctest release.man_pages).

  check-man-pages.py SOURCE_DIR [ELK_BINARY ELKD_BINARY]

- every config key in the key tables of firmware/common/ (conf_keys.c) ({"key", K_...}) must be named in a
  macro line (.B, .BR, .TP ...) of docs/man/elkd.conf.5;
- every command in the commands[] of firmware/elk/ (main.c) ({"name", usage_...}) in one of elk.1;
- with the binaries: every long option `elkd --help` prints must be in elkd.8, and every
  one `elk --help` and `elk COMMAND --help` print must be in elk.1.
"""
import os
import re
import subprocess
import sys


def man_words(path):
    """Words of the page's macro lines, font escapes removed, '\\-' read as '-'."""
    words = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith(".") or line.startswith(".\\\""):
                continue
            line = re.sub(r"\\f[BIRP]", " ", line).replace("\\-", "-")
            words.update(re.findall(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", line))
    return {w.rstrip(".") for w in words}


def man_text(path):
    with open(path, encoding="utf-8") as f:
        return re.sub(r"\\f[BIRP]", "", f.read()).replace("\\-", "-")


def long_options(cmd):
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, check=False).stdout
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", out))


def sources(folder):
    """The text of every .c file in folder, in name order (a table may move between files)."""
    names = sorted(n for n in os.listdir(folder) if n.endswith(".c"))
    return "\n".join(open(os.path.join(folder, n), encoding="utf-8").read() for n in names)


def main():
    src = sys.argv[1]
    man = os.path.join(src, "docs", "man")
    missing = []

    conf_c = sources(os.path.join(src, "firmware", "common"))
    keys = sorted(set(re.findall(r'^\s*\{"([a-z_][a-z0-9_]*)",\s*K_[A-Z0-9_]+', conf_c, re.M)))
    words = man_words(os.path.join(man, "elkd.conf.5"))
    missing += ["elkd.conf.5: config key '%s' (firmware/common/)" % k for k in keys if k not in words]

    elk_c = sources(os.path.join(src, "firmware", "elk"))
    table = re.search(r"commands\[\]\s*=\s*\{(.*?)\n\};", elk_c, re.S)
    cmds = re.findall(r'\{"([a-z-]+)",\s*\w*usage_', table.group(1)) if table else []
    if not cmds:
        missing.append("firmware/elk/: no commands[] table found (update this script)")
    words = man_words(os.path.join(man, "elk.1"))
    missing += ["elk.1: command '%s' (firmware/elk/)" % c for c in cmds if c not in words]

    if len(sys.argv) >= 4:
        elk, elkd = sys.argv[2], sys.argv[3]
        text = man_text(os.path.join(man, "elkd.8"))
        missing += ["elkd.8: option '%s' (elkd --help)" % o
                    for o in sorted(long_options([elkd, "--help"])) if o not in text]
        text = man_text(os.path.join(man, "elk.1"))
        opts = long_options([elk, "--help"])
        for c in cmds:
            opts |= long_options([elk, c, "--help"])
        missing += ["elk.1: option '%s' (elk [COMMAND] --help)" % o for o in sorted(opts) if o not in text]

    for m in missing:
        print("missing from the man page: " + m)
    print("checked %d config keys, %d commands%s: %s" % (
        len(keys), len(cmds), " and --help options" if len(sys.argv) >= 4 else "",
        "%d missing" % len(missing) if missing else "all documented"))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
