#!/bin/sh
# SPDX-License-Identifier: MIT
# Pins firmware/openwrt/Makefile to a release: PKG_VERSION from the tag (vX.Y.Z),
# PKG_SOURCE_VERSION to the tag's commit, PKG_SOURCE_URL to this clone's origin. Then, in
# the OpenWrt SDK, `make package/edgelock/check FIXUP=1 V=s` fills PKG_MIRROR_HASH.
# Usage: firmware/openwrt/pin-source.sh v0.1.0
set -eu
tag=$1
cd "$(dirname "$0")"
commit=$(git rev-parse "$tag^{commit}")
url=$(git remote get-url origin)
sed -i -e "s|^PKG_VERSION:=.*|PKG_VERSION:=${tag#v}|" -e "s|^PKG_SOURCE_VERSION:=.*|PKG_SOURCE_VERSION:=$commit|" \
       -e "s|^PKG_SOURCE_URL:=.*|PKG_SOURCE_URL:=$url|" -e "s|^PKG_RELEASE:=.*|PKG_RELEASE:=1|" Makefile
echo "pinned to $tag ($commit) from $url; now: make package/edgelock/check FIXUP=1 V=s"
