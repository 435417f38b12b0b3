#!/bin/bash
# SPDX-License-Identifier: MIT
# The bash completions offer what the programs accept: every command of `elk --help`, every
# --option of `elk CMD --help` and `elkd --help`, and completing works in a bash with them
# loaded (without the bash-completion package's helpers).
# Usage: test_completion.sh ELK ELKD
elk=$1 elkd=$2
dir=$(cd "$(dirname "$0")/../../completion" && pwd)
fail=0
complete_words() { # FILE WORDS... -> the completions of the last word
  local file=$1; shift
  bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); f=$(complete -p "$1" | sed "s/.*-F \([^ ]*\) .*/\1/"); "$f"; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$file" "$@" 2>/dev/null
}
want() { # DESCRIPTION WORD COMPLETIONS
  if printf '%s\n' "$3" | grep -qx -- "$2"; then echo "ok: $1 offers $2"; else echo "FAIL: $1 does not offer $2"; fail=1; fi
}
cmds=$("$elk" --help | sed -n '/^Commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p')
[ -n "$cmds" ] || { echo "FAIL: no commands in elk --help"; exit 1; }
got=$(complete_words "$dir/elk" elk "")
for c in $cmds; do want "elk <TAB>" "$c" "$got"; done
for c in $cmds; do
  got=$(complete_words "$dir/elk" elk "$c" --)
  for o in $("$elk" "$c" --help 2>&1 | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    want "elk $c --<TAB>" "$o" "$got"
  done
done
got=$(complete_words "$dir/elkd" elkd -)
for o in $("$elkd" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do want "elkd -<TAB>" "$o" "$got"; done
got=$(complete_words "$dir/elkd" elkd --log-level "")
want "elkd --log-level <TAB>" debug "$got"
exit $fail
