#!/bin/sh
# SPDX-License-Identifier: MIT
# ctest release.dist: scripts/dist.sh makes the same tarball twice from HEAD (reproducible),
# and the OpenWrt Makefile it writes names that tarball with its real sha256 and version.
# Usage: scripts/check-dist.sh SOURCE_DIR     Exit: 0 ok, 1 a check failed, 77 not a git tree.
set -u
src=$1
git -C "$src" rev-parse --verify HEAD >/dev/null 2>&1 || { echo "not a git checkout: skipped"; exit 77; }
w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
"$src/scripts/dist.sh" -o "$w/a" >"$w/a.out" || bad "dist.sh failed: $(cat "$w/a.out")"
"$src/scripts/dist.sh" -o "$w/b" >/dev/null || bad "dist.sh failed the second time"
version=$(sed -n 's/^project(edgelock VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
t=$w/a/edgelock-$version.tar.gz
[ -f "$t" ] && ok "tarball edgelock-$version.tar.gz" || bad "no $t"
cmp -s "$t" "$w/b/edgelock-$version.tar.gz" && ok "the same bytes twice (reproducible)" ||
    bad "two runs on one commit gave different tarballs"
mk=$w/a/openwrt/Makefile
hash=$(sha256sum "$t" | cut -d' ' -f1)
grep -qx "PKG_HASH:=$hash" "$mk" && ok "PKG_HASH is the tarball's sha256" ||
    bad "PKG_HASH in the written Makefile: $(grep '^PKG_HASH' "$mk"), tarball: $hash"
grep -qx "PKG_VERSION:=$version" "$mk" && ok "PKG_VERSION $version" || bad "PKG_VERSION: $(grep '^PKG_VERSION' "$mk")"
grep -qx 'PKG_SOURCE:=$(PKG_NAME)-$(PKG_VERSION).tar.gz' "$mk" && ok "PKG_SOURCE names the tarball" ||
    bad "PKG_SOURCE: $(grep '^PKG_SOURCE:' "$mk")"
[ -x "$w/a/openwrt/files/elkd.init" ] && ok "the package's files beside it" || bad "no files/ beside the Makefile"
list=$(tar -tzf "$t")
for f in CMakeLists.txt firmware/openwrt/Makefile firmware/openwrt/config/elk_config.h LICENSE; do
    echo "$list" | grep -qx "edgelock-$version/$f" && ok "tarball has $f" || bad "tarball lacks edgelock-$version/$f"
done
echo "$list" | grep -q '/\.git/' && bad "tarball holds .git" || ok "no .git in the tarball"
# the tree's own Makefile carries no hash: one would be stale at the next commit
grep -qx 'PKG_HASH:=0000000000000000000000000000000000000000000000000000000000000000' \
    "$src/firmware/openwrt/Makefile" && ok "the tree's Makefile keeps zeros" ||
    bad "firmware/openwrt/Makefile has a hash in it: stale after the next commit"
[ $fails = 0 ] && echo "all checks passed" && exit 0
exit 1
