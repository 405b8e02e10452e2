#!/bin/bash
# TAP: a kernel rdma_cm consumer, tests/kmod/softhca_kcm.ko (Documentation/
# testing.md), loaded once per topology: on shca0 (198.18.0.1 to itself)
# and between shca0 and shca1 (198.18.0.1 to 198.18.0.2; shca1 is created
# on veth1 here and deleted at the end). At load it listens, connects with
# private data both ways, moves a SEND each way and an RDMA WRITE and READ
# on the server's MR, disconnects, is rejected with private data, and is
# refused by a port nobody listens on; each of its checks prints a line in
# the kernel log, which becomes one TAP line here. Then: the run ended,
# every check ran, no cm_id is left and each device holds only ib_mad's
# PD, CQ and GSI QP, and the module unloads.
set -u
here=$(cd "$(dirname "$0")" && pwd)
ko=${SOFTHCA_KCM_KO:-$here/../tests/kmod/softhca_kcm.ko}
par=/sys/module/softhca_kcm/parameters
# Every check of softhca_kcm.c that passes on a correct device, per run.
want=${SOFTHCA_KCM_CHECKS:-65}
out=$(mktemp -d)
port=19960
added_shca1=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"

cleanup() {
	rmmod softhca_kcm 2>/dev/null
	[ "$added_shca1" = 1 ] && rdma link del shca1
	rm -rf "$out"
}
trap cleanup EXIT

# The module's lines of run TAG, as TAP: "ok NAME", "FAIL NAME" (after
# a "# why" line), anything else a comment.
module_lines() {
	local label=$1 t=$2 verdict rest
	dmesg | sed -n "s/^.*softhca_kcm $t: //p" >"$out/lines"
	while read -r verdict rest; do
		case $verdict in
		ok) ok "$label: $rest" ;;
		FAIL) nok "$label: $rest" ;;
		'#') echo "# $label: $rest" ;;
		*) echo "# $label: $verdict $rest" ;;
		esac
	done <"$out/lines"
}

# run_kcm LABEL SERVER-DEV SERVER-ADDR CLIENT-DEV CLIENT-ADDR
run_kcm() {
	local label=$1 sd=$2 sa=$3 cd=$4 ca=$5 t=$1.$$ p
	port=$((port + 2))
	check "$label: insmod softhca_kcm (port $port)" insmod "$ko" tag="$t" \
		saddr="$sa" caddr="$ca" sdev="$sd" cdev="$cd" port="$port" rxe="$rxe"
	module_lines "$label" "$t"
	check "$label: the run ended (done=1)" test "$(cat $par/done 2>&1)" = 1
	check "$label: no check failed (failed=$(cat $par/failed 2>&1))" \
		test "$(cat $par/failed 2>&1)" = 0
	p=$(cat $par/passed 2>&1)
	check "$label: every check ran and passed (passed=$p of $want)" \
		test "$p" = "$want"
	check "$label: no cm_id left, only ib_mad's PD, CQ and GSI QP" only_ib_mad_left
	check "$label: rmmod softhca_kcm" rmmod softhca_kcm
}

echo "TAP version 13"
# shca0 <-> shca1 needs ARP between two local addresses (rc_pingpong.sh).
if [ "$(cat /proc/sys/net/ipv4/conf/all/accept_local)" != 1 ]; then
	echo "Bail out! net.ipv4.conf.all.accept_local is not 1 (scripts/vm-run sets it)"
	exit 1
fi
# SOFTHCA_RC_LINK_TYPE=rxe: the same over rdma_rxe, to check the test
# (shca0 made as rxe by hand); RC src_qp, IB_WC_GRH and
# IB_WC_WITH_NETWORK_HDR_TYPE are then not compared (rxe's RC receives).
rxe=0
[ "${SOFTHCA_RC_LINK_TYPE:-softhca}" = rxe ] && rxe=1
rmmod softhca_kcm 2>/dev/null
shca1_gids || exit 1
# insmod does not load what the module needs.
check "modprobe rdma_cm" modprobe rdma_cm
run_kcm shca0 shca0 198.18.0.1 shca0 198.18.0.1
run_kcm shca0-shca1 shca1 198.18.0.2 shca0 198.18.0.1
echo "1..$n"
exit $failed
