#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""lib/include/elk/elk_config_defaults.h must give every Kconfig option its Kconfig default.

Generates the header for an empty defconfig with cmake/kconfig.py (Kconfig is the truth)
and compares it with the defaults header, name by name and value by value.
Usage: defaults_match_kconfig.py ROOT WORKDIR
"""
import os
import re
import subprocess
import sys

DEFINE = re.compile(r"^\s*#\s*define\s+(CONFIG_\w+)\s+(.+?)\s*$")


def defines(path):
    out = {}
    with open(path) as f:
        for line in f:
            m = DEFINE.match(line)
            if m:
                out[m.group(1)] = m.group(2)
    return out


def main():
    root, work = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)
    header = os.path.join(work, "elk_config.h")
    dot_config = os.path.join(work, ".config")
    if os.path.exists(dot_config):
        os.remove(dot_config)  # a stale .config would win over the defaults
    subprocess.run([sys.executable, os.path.join(root, "cmake", "kconfig.py"),
                    os.path.join(root, "Kconfig"), "", dot_config, header,
                    os.path.join(work, "elk_config.cmake")], check=True)
    kconfig = defines(header)
    defaults = defines(os.path.join(root, "lib", "include", "elk", "elk_config_defaults.h"))
    bad = 0
    for name in sorted(set(kconfig) | set(defaults)):
        k, d = kconfig.get(name), defaults.get(name)
        if k != d:
            print("MISMATCH %s: Kconfig default %s, elk_config_defaults.h %s" % (name, k, d))
            bad += 1
    print("%d passed, %d failed" % (max(len(kconfig) - bad, 0), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
