#!/bin/bash
# TAP: the kernel verbs (kernel CQs and RC QPs, Documentation/kernel.md
# "Kernel verbs") through tests/kmod/softhca_ktest.ko: at load it runs on
# shca0 with ib_alloc_cq (IB_POLL_SOFTIRQ and IB_POLL_WORKQUEUE), two RC
# QPs connected through 198.18.0.1, SEND/SEND_IMM/inline/unsignaled,
# RDMA WRITE(_IMM)/READ, atomics, many SENDs, a bad opcode, rkey 0
# refused, ib_drain_qp, a reset QP's CQEs cleaned, then UD (kernel AHs
# sleepable and atomic, datagrams between kernel UD QPs with the WC's
# GRH, network header type and source MAC, a privileged Q_Key,
# multicast), and destroys everything;
# its parameters report the checks. Then: nothing of it is left on the
# device, and it unloads. Runs in the VM as root with shca0 on veth0.
set -u
here=$(cd "$(dirname "$0")" && pwd)
ko=${SOFTHCA_KTEST_KO:-$here/../tests/kmod/softhca_ktest.ko}
dev=shca0
par=/sys/module/softhca_ktest/parameters
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"
# res TYPE: the device's count of TYPE in `rdma resource show`.
res() {
	rdma resource show "$dev" | tr ' ' '\n' |
		awk -v t="$1" 'prev == t { print; exit } { prev = $0 }'
}

echo "TAP version 13"
echo "1..7"
ip link set veth0 up
rmmod softhca_ktest 2>/dev/null
before_qp=$(res qp) before_cq=$(res cq) before_pd=$(res pd)
before_mr=$(res mr)
# Only this run's lines are read: the log is never cleared, since the VM
# run's final check (no WARN, BUG, Oops) reads it whole.
mark=$(dmesg | wc -l)
ours() { dmesg | tail -n "+$((mark + 1))"; }
check "insmod softhca_ktest dev=$dev" insmod "$ko" dev=$dev
ours | grep 'softhca_ktest' | sed 's/^/# /'
check "the run ended (done=1)" test "$(cat $par/done 2>&1)" = 1
check "no check failed (failed=$(cat $par/failed 2>&1))" \
	test "$(cat $par/failed 2>&1)" = 0
# Every check of softhca_ktest.c that passes on a correct device.
check "every check ran and passed (passed=$(cat $par/passed 2>&1))" \
	test "$(cat $par/passed 2>&1)" = "${SOFTHCA_KTEST_CHECKS:-335}"
counts_back() {
	local now
	now="$(res qp) $(res cq) $(res pd) $(res mr)"
	echo "before: $before_qp $before_cq $before_pd $before_mr now: $now"
	[[ $now =~ ^[0-9]+\ [0-9]+\ [0-9]+\ [0-9]+$ ]] &&
		[ "$now" = "$before_qp $before_cq $before_pd $before_mr" ]
}
check "no QP, CQ, PD or MR of the test is left on $dev" counts_back
check "rmmod softhca_ktest" rmmod softhca_ktest
check "no softhca_ktest FAIL line in dmesg" \
	bash -c "! dmesg | tail -n +$((mark + 1)) | grep 'softhca_ktest: FAIL'"
exit $failed
