#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The data path unit test (tests/unit/datapath.c: post_send, post_recv,
# poll_cq, the extended post-send API, three threads) built for aarch64 and
# run under qemu-aarch64: the provider's data path with the aarch64
# barriers and the NEON BlueFlame copy (design.md §7). It calls nothing in
# libibverbs, so it links statically without an aarch64 libibverbs. TAP;
# skips without a cross compiler or qemu-aarch64.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${B:-$top/build}/unit-aarch64
CC=${AARCH64_CC:-aarch64-linux-gnu-gcc}

if ! command -v "$CC" >/dev/null 2>&1; then
	echo "1..0 # SKIP no $CC (apt-get install gcc-aarch64-linux-gnu)"
	exit 0
fi
echo "1..2"
# The host's verbs headers are architecture-neutral (as for
# make provider-aarch64).
mkdir -p "$out/inc"
ln -sfn /usr/include/infiniband "$out/inc/infiniband"
ln -sfn /usr/include/rdma "$out/inc/rdma"
if "$CC" -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -static \
	-isystem "$out/inc" -I"$top/include/uapi" -I"$top/user" \
	-o "$out/datapath" "$here/datapath.c" -lpthread; then
	echo "ok 1 datapath test compiles for aarch64 (-Wall -Wextra -Werror)"
else
	echo "not ok 1 datapath test compiles for aarch64 (-Wall -Wextra -Werror)"
	echo "ok 2 # SKIP not built"
	exit 1
fi
if ! command -v qemu-aarch64 >/dev/null 2>&1; then
	echo "ok 2 # SKIP no qemu-aarch64 (apt-get install qemu-user)"
	exit 0
fi
res=$(qemu-aarch64 "$out/datapath" 2>&1)
st=$?
printf '%s\n' "$res" | sed 's/^/# /'
if [ "$st" = 0 ]; then
	echo "ok 2 datapath unit test passes under qemu-aarch64"
else
	echo "not ok 2 datapath unit test passes under qemu-aarch64"
	exit 1
fi
