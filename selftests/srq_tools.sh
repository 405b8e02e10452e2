#!/bin/bash
# TAP: shared receive queues judged by stock tools (design.md §8):
# ibv_srq_pingpong (16 QPs on one SRQ, --chk on the received buffers) and
# perftest's ib_send_bw / ib_send_lat --use-srq, between two processes on
# shca0 and between shca0 and shca1 (the local fabric), then over RoCEv2
# on the wire bed (selftests/lib/wire_bed.sh): shca9 in namespace "far"
# against rdma_rxe's rxe0 (the SRQ on either end), and shca9 against
# shca8 in namespace "near" (force_wire). Everything is put back at the
# end, also on failure.
#
# Iterations: SOFTHCA_PINGPONG_N (default 100 per QP), perftest -n
# SOFTHCA_PERFTEST_N (default 1000).
set -u
here=$(dirname "$0")
pp_n=${SOFTHCA_PINGPONG_N:-100}
pt_n=${SOFTHCA_PERFTEST_N:-1000}
wn=${SOFTHCA_WIRE_PERFTEST_N:-200}	# a slow path: fewer
tmo=${SOFTHCA_PINGPONG_TIMEOUT:-300}
out=$(mktemp -d)
port=19700
added_shca1=0
had_shca0=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"
# shellcheck source=selftests/lib/wire_bed.sh
. "$here/lib/wire_bed.sh"

cleanup() {
	jobs -p | xargs -r kill -9 2>/dev/null
	[ "$added_shca1" = 1 ] && rdma link del shca1
	wire_bed_restore
	rm -rf "$out"
}
trap cleanup EXIT

echo "TAP version 13"
if [ "$(cat /proc/sys/net/ipv4/conf/all/accept_local)" != 1 ]; then
	echo "Bail out! net.ipv4.conf.all.accept_local is not 1 (scripts/vm-run sets it)"
	exit 1
fi
rdma dev show shca0 >/dev/null 2>&1 && had_shca0=1
shca1_gids || exit 1
echo "1..12"

# ---- the local fabric ----------------------------------------------------
topos=("shca0 shca0 $g0 shca0 $g0" "shca0-shca1 shca1 $g1 shca0 $g0")
for t in "${topos[@]}"; do
	read -r label sd sg cd cg <<<"$t"
	for s in 1 4096; do
		run "ibv_srq_pingpong $label 16 QPs size $s x $pp_n" \
			"check_pingpong $s $pp_n" \
			ibv_srq_pingpong -d "$sd" -g "$sg" -s "$s" -n "$pp_n" -c -- \
			ibv_srq_pingpong -d "$cd" -g "$cg" -s "$s" -n "$pp_n" -c
	done
done
run "ib_send_bw --use-srq shca0 size 65536 -n $pt_n" "check_bw 65536 $pt_n" \
	ib_send_bw --use-srq -d shca0 -x "$g0" -s 65536 -n "$pt_n" -F -- \
	ib_send_bw --use-srq -d shca0 -x "$g0" -s 65536 -n "$pt_n" -F
run "ib_send_lat --use-srq shca0 size 64 -n $pt_n" "check_lat 64 $pt_n" \
	ib_send_lat --use-srq -d shca0 -x "$g0" -s 64 -n "$pt_n" -F -- \
	ib_send_lat --use-srq -d shca0 -x "$g0" -s 64 -n "$pt_n" -F
run "ib_send_bw --use-srq shca0-shca1 size 4096 -n $pt_n" "check_bw 4096 $pt_n" \
	ib_send_bw --use-srq -d shca1 -x "$g1" -s 4096 -n "$pt_n" -F -- \
	ib_send_bw --use-srq -d shca0 -x "$g0" -s 4096 -n "$pt_n" -F

# ---- the wire ------------------------------------------------------------
[ "$added_shca1" = 1 ] && rdma link del shca1
added_shca1=0
rdma link del shca1 2>/dev/null
if ! wire_bed_far || ! wire_bed_rxe; then
	for _ in 1 2 3 4 5; do nok "the wire bed (shca9 in far, rxe0)"; done
	exit 1
fi
xrun "ibv_srq_pingpong shca9 server (its SRQ), rxe0 client, 4096 B x $pp_n" \
	"check_pingpong 4096 $pp_n" far - 198.18.0.1 \
	ibv_srq_pingpong -d shca9 -g "$g9" -s 4096 -n "$pp_n" -c -- \
	ibv_srq_pingpong -d rxe0 -g "$gx" -s 4096 -n "$pp_n" -c
xrun "ibv_srq_pingpong rxe0 server, shca9 client (its SRQ), 4096 B x $pp_n" \
	"check_pingpong 4096 $pp_n" - far 198.18.0.2 \
	ibv_srq_pingpong -d rxe0 -g "$gx" -s 4096 -n "$pp_n" -c -- \
	ibv_srq_pingpong -d shca9 -g "$g9" -s 4096 -n "$pp_n" -c
xrun "ib_send_bw --use-srq shca9 server, rxe0 client, 16384 B" \
	"check_bw 16384 $wn" far - 198.18.0.1 \
	ib_send_bw --use-srq -d shca9 -x "$g9" -s 16384 -n "$wn" -F -- \
	ib_send_bw -d rxe0 -x "$gx" -s 16384 -n "$wn" -F
if ! wire_bed_near || ! echo 1 >/sys/module/softhca/parameters/force_wire; then
	for _ in 1 2; do nok "the wire bed (shca9 in far, shca8 in near)"; done
	exit 1
fi
xrun "ibv_srq_pingpong shca9 <-> shca8 (force_wire), 4096 B x $pp_n" \
	"check_pingpong 4096 $pp_n" far near 198.18.0.1 \
	ibv_srq_pingpong -d shca9 -g "$g9" -s 4096 -n "$pp_n" -c -- \
	ibv_srq_pingpong -d shca8 -g "$g8" -s 4096 -n "$pp_n" -c
xrun "ib_send_lat --use-srq shca9 <-> shca8 (force_wire), 64 B" \
	"check_lat 64 $wn" far near 198.18.0.1 \
	ib_send_lat --use-srq -d shca9 -x "$g9" -s 64 -n "$wn" -F -- \
	ib_send_lat --use-srq -d shca8 -x "$g8" -s 64 -n "$wn" -F
exit "$failed"
