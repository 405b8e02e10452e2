#!/bin/bash
# TAP: fast registration as kernel ULPs use it, through
# tests/kmod/softhca_kfrwr.ko: at load it runs on one device with two RC
# QPs connected through 198.18.0.1: ib_alloc_mr within and past the caps,
# ib_map_mr_sg of pages that are not contiguous (and of more than fit),
# IB_WR_REG_MR, RDMA WRITE/READ through the new rkey with every byte
# checked, the old key byte, bounds and rights refused, a REG_MR of a
# valid or foreign MR refused, IB_WR_LOCAL_INV (and of foreign or unknown
# keys), IB_WR_SEND_WITH_INV with the receiver's IB_WC_WITH_INVALIDATE,
# the rkey dead afterwards, one naming a key that cannot be invalidated.
# Its parameters report the checks. Run on shca0 (the local fabric: then
# nothing of it is left on the device), and on shca9 in netns "far" with
# the wire forced (Documentation/wire.md), where SEND_WITH_INV is
# SEND_ONLY_INV with its IETH. Runs in the VM as root with shca0 on veth0.
set -u
here=$(cd "$(dirname "$0")" && pwd)
ko=${SOFTHCA_KFRWR_KO:-$here/../tests/kmod/softhca_kfrwr.ko}
checks=${SOFTHCA_KFRWR_CHECKS:-50}
par=/sys/module/softhca_kfrwr/parameters
had_shca0=0
failed=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"
# shellcheck source=selftests/lib/wire_bed.sh
. "$here/lib/wire_bed.sh"
res() {
	rdma resource show shca0 | tr ' ' '\n' |
		awk -v t="$1" 'prev == t { print; exit } { prev = $0 }'
}
counts() { echo "$(res qp) $(res cq) $(res pd) $(res mr)"; }
counts_back() {
	local now
	now=$(counts)
	echo "before: $before now: $now"
	[[ $now =~ ^[0-9]+\ [0-9]+\ [0-9]+\ [0-9]+$ ]] && [ "$now" = "$before" ]
}

# run_kfrwr DEV: load, its results, unload (5 rows).
run_kfrwr() {
	local mark
	mark=$(dmesg | wc -l)
	check "insmod softhca_kfrwr dev=$1" insmod "$ko" dev="$1"
	dmesg | tail -n "+$((mark + 1))" | grep 'softhca_kfrwr' | sed 's/^/# /'
	check "$1: the run ended (done=1)" test "$(cat $par/done 2>&1)" = 1
	check "$1: every check ran and passed (passed=$(cat $par/passed 2>&1) failed=$(cat $par/failed 2>&1))" \
		test "$(cat $par/passed 2>&1) $(cat $par/failed 2>&1)" = "$checks 0"
	check "$1: rmmod softhca_kfrwr" rmmod softhca_kfrwr
	check "$1: no softhca_kfrwr FAIL line in dmesg" \
		bash -c "! dmesg | tail -n +$((mark + 1)) | grep 'softhca_kfrwr: FAIL'"
}

trap wire_bed_restore EXIT
echo "TAP version 13"
echo "1..12"
ip link set veth0 up
rdma dev show shca0 >/dev/null 2>&1 && had_shca0=1
rmmod softhca_kfrwr 2>/dev/null
before=$(counts)
run_kfrwr shca0
check "no QP, CQ, PD or MR of the test is left on shca0" counts_back

if wire_bed_far && echo 1 >/sys/module/softhca/parameters/force_wire; then
	tx0=$(wire_stat shca9 wire_tx_packets far)
	run_kfrwr shca9
	tx1=$(wire_stat shca9 wire_tx_packets far)
	check "shca9 sent its traffic as wire packets (+$((tx1 - tx0)))" \
		test $((tx1 - tx0)) -gt 30
else
	for _ in 1 2 3 4 5 6; do nok "shca9 over the wire: the bed"; done
fi
exit "$failed"
