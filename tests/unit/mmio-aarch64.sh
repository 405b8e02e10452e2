#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# user/mmio.h on aarch64 (design.md §7): cross-compile the mmio unit test,
# check that the seed's barrier instructions are in it, and run it under
# qemu-aarch64 when that is installed. TAP; skips without a cross compiler.
# (`make provider-aarch64` compile-checks the provider sources.)
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${B:-$top/build}/unit-aarch64
CC=${AARCH64_CC:-aarch64-linux-gnu-gcc}
OBJDUMP=${AARCH64_OBJDUMP:-aarch64-linux-gnu-objdump}

if ! command -v "$CC" >/dev/null 2>&1; then
	echo "1..0 # SKIP no $CC (apt-get install gcc-aarch64-linux-gnu)"
	exit 0
fi

echo "1..4"
n=0 fail=0
t() { # t <status> <name>
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n $2"; else echo "not ok $n $2"; fail=1; fi
}

mkdir -p "$out"
"$CC" -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -static \
	-I"$top/include/uapi" -I"$top/user" -o "$out/mmio" "$here/mmio.c"
t $? "mmio.h and its test compile for aarch64 (-Wall -Wextra -Werror)"

# main and whatever the compiler kept out of line from mmio.h
dis=$("$OBJDUMP" -d "$out/mmio" 2>/dev/null |
	awk '/^[0-9a-f]+ <(main|mmio_[a-z0-9_]*(\.[a-z0-9.]*)?)>:$/,/^$/')
miss=""
for insn in "dmb	oshst" "dmb	oshld" "dsb	st" "dmb	osh$"; do
	printf '%s\n' "$dis" | grep -q "$insn" || miss="$miss '$insn'"
done
[ -z "$miss" ]
t $? "barriers are dmb oshst / dmb oshld / dsb st / dmb osh${miss:+ (missing:$miss)}"

printf '%s\n' "$dis" | grep -q "st4	"
t $? "BlueFlame copy uses NEON st4"

if command -v qemu-aarch64 >/dev/null 2>&1; then
	res=$(qemu-aarch64 "$out/mmio" 2>&1)
	st=$?
	printf '%s\n' "$res" | sed 's/^/# /'
	t $st "mmio unit test passes under qemu-aarch64"
else
	n=$((n + 1)); echo "ok $n # SKIP no qemu-aarch64 (apt-get install qemu-user)"
fi
exit $fail
