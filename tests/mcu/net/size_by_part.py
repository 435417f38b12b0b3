#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Flash and RAM of the network image by part, from its GNU ld map file.

Every input section the link kept (the map's "Linker script and memory map" part) is
charged to the part its object belongs to: .text/.rodata/.ARM.exidx to flash, .data to
flash (its initial values) and RAM, .bss/COMMON to RAM, the .stack section to RAM.
Usage: size_by_part.py IMAGE.map
"""
import re
import sys

PARTS = [
    ("lib/", lambda f, s: "libelk.a" in f),
    ("ports (port/lwip, port/socket, port/mbedtls)", lambda f, s: "libport_" in f),
    ("lwIP (its heap and pools included)", lambda f, s: "liblwip.a" in f),
    ("mbedTLS arena (static heap)", lambda f, s: "tls_arena" in s),
    ("mbedTLS (code, tables)", lambda f, s: "libmbedtls.a" in f or "mbedtls_mcu" in f),
    ("LAN9118 driver + sys_arch + timer", lambda f, s: "libdriver.a" in f),
    ("lease program (fleet, nodes, pool, CA buffer)", lambda f, s: "lease_mcu" in f),
    ("runtime (startup, semihosting, stdio)", lambda f, s: "libapp.a" in f),
    ("C library (newlib-nano, libgcc)", lambda f, s: "libc_nano" in f or "libg_nano" in f or "libgcc" in f),
]


def part_of(path, section):
    for name, match in PARTS:
        if match(path, section):
            return name
    return "other"


def main(path):
    text = open(path).read()
    text = text[text.index("Linker script and memory map"):]
    flash, ram = {}, {}
    out_sec = None
    pending = None
    seen = set()
    full = re.compile(r"^ (\S+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$")
    cont = re.compile(r"^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$")
    for line in text.splitlines():
        m = re.match(r"^(\.\S+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)", line)
        if m or re.match(r"^\.\S+$", line):
            out_sec = (m.group(1) if m else line.strip())
            if out_sec == ".stack" and m:
                ram["stack"] = ram.get("stack", 0) + int(m.group(3), 16)
            pending = None
            continue
        if out_sec is None or out_sec == ".stack":
            continue
        name = file = None
        m = full.match(line)
        if m:
            name, addr, size, file = m.group(1), m.group(2), int(m.group(3), 16), m.group(4)
        else:
            m = cont.match(line)
            if m and pending:
                name, addr, size, file = pending, m.group(1), int(m.group(2), 16), m.group(3)
            elif re.match(r"^ (\.\S+|COMMON)$", line):
                pending = line.strip()
                continue
        pending = None
        if name is None or name == "*fill*" or size == 0 or "=" in file:
            continue
        # Merged string sections (.str1.1) are listed once per contributing object, all
        # at one address with the merged size: count that address once.
        if (out_sec, addr) in seen:
            continue
        seen.add((out_sec, addr))
        part = part_of(file, name)
        if out_sec in (".text", ".ARM.exidx"):
            flash[part] = flash.get(part, 0) + size
        elif out_sec == ".data":
            flash[part] = flash.get(part, 0) + size
            ram[part] = ram.get(part, 0) + size
        elif out_sec == ".bss":
            ram[part] = ram.get(part, 0) + size
    names = [n for n, _ in PARTS] + ["other", "stack"]
    print("| part | flash (bytes) | RAM (bytes) |")
    print("|---|---:|---:|")
    for n in names:
        if n in flash or n in ram:
            print("| %s | %d | %d |" % (n, flash.get(n, 0), ram.get(n, 0)))
    print("| **whole image** | **%d** | **%d** |" % (sum(flash.values()), sum(ram.values())))


if __name__ == "__main__":
    main(sys.argv[1])
