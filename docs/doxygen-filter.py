#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Doxygen INPUT_FILTER for edgelock's headers (docs/Doxyfile).

The headers' comments are plain C comments (/* ... */, the project's style), which doxygen
ignores. This filter turns them into doc comments as doxygen reads the file (the headers
themselves stay as they are; line numbers are kept, so warnings point at the real lines):
- a comment block standing before a declaration becomes /** ... */; the file's first one
  (after the SPDX line) describes the file (@file);
- a comment after a member or enumerator on the same line becomes /**< ... */;
- one comment over several declarations in a row (no blank line between) documents each
  of them (a member group, DISTRIBUTE_GROUP_DOC).
The SPDX line and the include guard's closing comment stay plain.
"""
import re
import sys

TRAIL = re.compile(r"^(\s*[^/\s*].*?[;,{]\s*|\s*X\(.*\)\s*\\?\s*)/\*(?![*!<])")


def escape(text):
    """Comment text as doxygen shows it, not as markup: <word>, #word."""
    text = text.replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"(^|[\s(])#(?=\w)", r"\1\\#", text)


def is_decl_start(s):
    return bool(s) and not s.startswith(("#", "/", "*", "}", "{")) and s[0] not in " \t"


def convert(lines):
    out = list(lines)
    first = True
    i = 0
    while i < len(out):
        line = out[i]
        s = line.lstrip()
        indent = line[: len(line) - len(s)]
        if "SPDX-License-Identifier" in line or s.startswith("#endif"):
            i += 1
            continue
        if s.startswith("/*") and not s.startswith(("/**", "/*!")):
            head = "/** @file " if first and not indent else "/**"
            first = False
            # the block's end, then the declarations right under it
            j = i
            while "*/" not in out[j]:
                j += 1
            k, decls, last = j + 1, 0, None
            while k < len(out) and is_decl_start(out[k]):
                while k < len(out) and not out[k].rstrip().endswith((";", "{")):
                    k += 1
                if k < len(out) and out[k].rstrip().endswith("{"):
                    break  # a struct or enum body: one declaration
                decls += 1
                last = k
                k += 1
            for m in range(i + 1, j + 1):
                out[m] = escape(out[m])
            out[i] = indent + head + escape(s[2:])
            if decls >= 2 and not indent:
                out[i] = "/**@{*/ " + out[i]
                out[last] = out[last] + " /**@}*/"
            i = j + 1
            continue
        if TRAIL.match(line):
            m = TRAIL.match(line)
            out[i] = m.group(1) + "/**<" + escape(line[m.end():])
        elif s and not s.startswith("*"):
            first = False
        i += 1
    return out


def main():
    with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    sys.stdout.write("\n".join(convert(lines)))


if __name__ == "__main__":
    main()
