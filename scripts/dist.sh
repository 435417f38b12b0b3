#!/bin/sh
# SPDX-License-Identifier: MIT
# The release tarball, made reproducibly from a commit, and the OpenWrt Makefile that pins it.
#
#   scripts/dist.sh [-r REV] [-o OUTDIR] [-u URL]
#
# Writes OUTDIR/edgelock-<version>.tar.gz (git archive of REV, default HEAD: committed files
# only, under edgelock-<version>/; gzip without a name or time stamp, so the same commit
# always gives the same bytes) and OUTDIR/openwrt/Makefile: firmware/openwrt/Makefile with
# PKG_VERSION, PKG_SOURCE_URL (URL, the directory the tarball will be served from) and
# PKG_HASH (the tarball's sha256) filled in. The hash changes with every commit, so it is
# written here, into that copy, never into the Makefile in the tree (docs/openwrt.md).
# Prints the tarball's path and sha256. OUTDIR defaults to dist/.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
rev=HEAD out=$root/dist url=
while getopts r:o:u: opt; do
    case $opt in
        r) rev=$OPTARG ;;
        o) out=$OPTARG ;;
        u) url=$OPTARG ;;
        *) echo "usage: scripts/dist.sh [-r REV] [-o OUTDIR] [-u URL]" >&2; exit 64 ;;
    esac
done
cd "$root"
commit=$(git rev-parse --verify "$rev^{commit}") || {
    echo "dist.sh: '$rev' is not a commit of $root (a tarball is made from git)" >&2
    exit 1
}
# the version of that commit's CMakeLists.txt, not of the working tree
version=$(git show "$commit:CMakeLists.txt" | sed -n 's/^project(edgelock VERSION \([0-9.]*\).*/\1/p')
[ -n "$version" ] || { echo "dist.sh: no project version in $commit's CMakeLists.txt" >&2; exit 1; }
name=edgelock-$version
mkdir -p "$out/openwrt"
tarball=$out/$name.tar.gz
# tar's times are the commit's (git archive); gzip -n leaves out the name and the time
git archive --format=tar --prefix="$name/" "$commit" | gzip -n -9 >"$tarball.tmp"
mv "$tarball.tmp" "$tarball"
hash=$(sha256sum "$tarball" | cut -d' ' -f1)
# without -u: the template's URL stays; the SDK finds the tarball in its dl/ (checked by
# PKG_HASH) before it would download anything
sed -e "s|^PKG_VERSION:=.*|PKG_VERSION:=$version|" \
    -e "${url:+s|^PKG_SOURCE_URL:=.*|PKG_SOURCE_URL:=$url|}" \
    -e "s|^PKG_HASH:=.*|PKG_HASH:=$hash|" \
    -e "s|^# Source: .*|# Source: $name.tar.gz, made by scripts/dist.sh from commit $commit|" \
    firmware/openwrt/Makefile >"$out/openwrt/Makefile"
cp -r firmware/openwrt/files "$out/openwrt/"
echo "$tarball"
echo "sha256 $hash (commit $commit)"
echo "$out/openwrt/Makefile: PKG_HASH filled in; copy $out/openwrt/ to package/edgelock/ (docs/openwrt.md)"
