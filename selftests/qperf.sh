#!/bin/bash
# TAP: qperf (Debian's qperf 0.4.11), a stock RDMA and socket benchmark
# nobody here wrote, run unmodified against softhca. On a RoCE port qperf
# reaches its peer only through rdma_cm (-cm1): its other tests address the
# peer by LID, and its UD, UC and XRC tests have no rdma_cm path, so they
# fail on every RoCE device (rdma_rxe too: "failed to modify QP to RTR",
# "failed to create address handle"). So the RC tests run, each once with
# its completion mode as qperf chooses it (waiting on a completion channel
# for most, polling for rc_rdma_write_poll_lat):
#  - send/receive bandwidth one and two ways, latency; RDMA READ and WRITE
#    bandwidth and latency; the compare-and-swap and fetch-and-add message
#    rates, and qperf's ver_rc_compare_swap and ver_rc_fetch_add, which
#    check the value every atomic returns;
#  - between two processes on shca0, then over RoCEv2 on the wire bed
#    (lib/wire_bed.sh): shca9 in netns far as client of rdma_rxe's rxe0,
#    and rxe0 as client of shca9.
# A row passes when qperf exits 0 with its figure (bw, latency or msg_rate)
# above zero, rdma_cm in use, and the softhca end's port counters (on the
# wire: its wire_tx_packets) grown by the test's traffic. Then qperf's RDS
# tests (rds_bw, rds_lat: AF_RDS sockets over rds_rdma) between two
# sockets of 198.18.0.1 on shca0, counted the same way.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
port=0 tmo=90
had_shca0=0
qport=19765
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"
# shellcheck source=selftests/lib/wire_bed.sh
. "$here/lib/wire_bed.sh"

# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
	wire_bed_restore
	grep -q '^rds_rdma ' /proc/modules && rmmod rds_rdma
	grep -q '^rds ' /proc/modules && rmmod rds
	rm -rf "$out"
}
trap cleanup EXIT

rc_tests="rc_bw rc_bi_bw rc_lat rc_rdma_read_bw rc_rdma_read_lat
rc_rdma_write_bw rc_rdma_write_lat rc_rdma_write_poll_lat rc_compare_swap_mr
rc_fetch_add_mr ver_rc_compare_swap ver_rc_fetch_add"

# counter NS DEV NAME: a port counter of DEV in NS ("-": the initial one)
counter() {
	wire_stat "$2" "$3" "${1#-}"
}

# qperf_figure FILE: "name value unit" of the test's figure, if above 0
qperf_figure() {
	awk '$1 ~ /^(bw|latency|msg_rate)$/ && $2 == "=" && $3 > 0 {
		print $1, $3, $4; found = 1; exit }
	END { exit !found }' "$1"
}

# qperf_server NS: a qperf server in NS ("-": the initial one), listening.
# It does not listen while it runs a test, and an RDS test's end takes it
# a while: each client waits for the port first (wait_port), or it would
# be refused.
qperf_server() {
	local pre=()
	qns=$1
	[ "$qns" = - ] || pre=(ip netns exec "$qns")
	qport=$((qport + 1))
	"${pre[@]}" timeout -k 5 600 qperf -lp "$qport" >"$out/server" 2>&1 &
	qsrv=$!
	wait_port "$qport" "$qns"
}

# qperf_row LABEL CLI_NS ADDR DEV_NS DEV COUNTER MIN TEST: one qperf test
# from CLI_NS to the server at ADDR; COUNTER of DEV (in DEV_NS) must grow
# by MIN or more.
qperf_row() {
	local label=$1 cns=$2 addr=$3 dns=$4 dev=$5 cnt=$6 min=$7 t=$8
	local pre=() cm=(-cm1) c0 c1 rc fig try
	[ "$cns" = - ] || pre=(ip netns exec "$cns")
	# RDS sockets need no rdma_cm of qperf's: rds_rdma makes its own.
	case $t in rds_*) cm=() ;; esac
	c0=$(counter "$dns" "$dev" "$cnt")
	# qperf's own race: after an RDS test its server may refuse the next
	# client for a moment though its port listens (make check, session
	# 23): "Connection refused" is tried again, up to three times.
	for try in 1 2 3; do
		rc=0
		wait_port "$qport" "$qns" || echo "# $label $t: the server does not listen"
		"${pre[@]}" timeout -k 5 "$tmo" qperf "$addr" -lp "$qport" "${cm[@]}" -t 1 \
			-vvu "$t" >"$out/client" 2>&1 || rc=$?
		[ "$rc" != 0 ] && [ "$try" != 3 ] &&
			grep -q 'Connection refused' "$out/client" || break
		echo "# $label $t: refused (try $try), again in 1 s"
		sleep 1
	done
	c1=$(counter "$dns" "$dev" "$cnt")
	if [ "$rc" = 0 ] && fig=$(qperf_figure "$out/client") &&
	   { [ ${#cm[@]} = 0 ] || grep -Eq '^ *use_cm += +1 *$' "$out/client"; } &&
	   [ $((c1 - c0)) -ge "$min" ]; then
		ok "$label $t: $fig, $dev $cnt +$((c1 - c0))"
	else
		echo "# exit $rc, $dev $cnt +$((c1 - c0)) (at least $min)"
		sed 's/^/# client: /' "$out/client" | head -n 20
		sed 's/^/# server: /' "$out/server" | tail -n 5
		nok "$label $t"
	fi
}

# qperf_pair LABEL SRV_NS CLI_NS ADDR DEV_NS DEV COUNTER: the RC tests
qperf_pair() {
	local label=$1 sns=$2 t
	shift 2
	if ! qperf_server "$sns"; then
		for t in $rc_tests; do nok "$label $t: no qperf server"; done
		return
	fi
	for t in $rc_tests; do
		qperf_row "$label" "$1" "$2" "$3" "$4" "$5" 100 "$t"
	done
	kill "$qsrv" 2>/dev/null
	wait "$qsrv" 2>/dev/null
}

echo "TAP version 13"
rdma dev show shca0 >/dev/null 2>&1 && had_shca0=1
qperf_pair "shca0 -> shca0" - - 198.18.0.1 - shca0 tx_bytes

check "the wire bed: shca9 in netns far, rxe0" eval 'wire_bed_far && wire_bed_rxe'
qperf_pair "shca9 -> rxe0" - far 198.18.0.2 far shca9 wire_tx_packets
qperf_pair "rxe0 -> shca9" far - 198.18.0.1 far shca9 wire_tx_packets
wire_bed_restore

check "modprobe rds_rdma" modprobe rds_rdma
if qperf_server -; then
	for t in rds_bw rds_lat; do
		qperf_row "shca0 -> shca0" - 198.18.0.1 - shca0 tx_bytes 1000 "$t"
	done
	kill "$qsrv" 2>/dev/null
	wait "$qsrv" 2>/dev/null
else
	nok "rds_bw: no qperf server"
	nok "rds_lat: no qperf server"
fi
check "no QP or cm_id of qperf left" eval \
	'! rdma res show qp | grep -q "comm qperf" && ! rdma res show cm_id | grep -q "comm qperf"'
echo "1..$n"
exit $failed
