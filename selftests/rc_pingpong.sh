#!/bin/bash
# TAP: stock RC traffic through our provider, judged by tools nobody here
# wrote (design.md §8): ibv_rc_pingpong (with --chk, which checks every
# received buffer) at 1 B .. 1 MiB, and the perftest latency and bandwidth
# tests for SEND, WRITE, READ and atomics, each between two processes on
# shca0 and between shca0 and shca1 (created on veth1 here, deleted at the
# end). Server and client meet over TCP on 127.0.0.1. ibv_rc_pingpong -t
# (completion timestamps: cq_ex) runs on shca0 too.
#
# Iterations: ibv_rc_pingpong -n 10000 up to 64 KiB; at
# 1 MiB, -n 10000 moves 20 GiB through memcpy, which takes far too long
# under TCG, so that size runs SOFTHCA_PINGPONG_BIG_N iterations (default
# 300; set 10000 for the full run). perftest runs -n SOFTHCA_PERFTEST_N
# (default 1000).
set -u
here=$(dirname "$0")
big_n=${SOFTHCA_PINGPONG_BIG_N:-300}
pt_n=${SOFTHCA_PERFTEST_N:-1000}
tmo=${SOFTHCA_PINGPONG_TIMEOUT:-300}
out=$(mktemp -d)
port=19000
added_shca1=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"

# SOFTHCA_RC_LINK_TYPE=rxe: the same over rdma_rxe, to check the script.
tools_two_dev_begin || exit 1

pp_sizes=(1 64 4096 65536 1048576)
pt_tests=(ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat
	  ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw)
echo "1..$(( 2 * ${#pp_sizes[@]} + 2 * ${#pt_tests[@]} + 2 ))"

# topology: label server-dev server-gid client-dev client-gid
topos=("shca0 shca0 $g0 shca0 $g0" "shca0-shca1 shca1 $g1 shca0 $g0")

for t in "${topos[@]}"; do
	read -r label sd sg cd cg <<<"$t"
	for s in "${pp_sizes[@]}"; do
		iters=10000
		[ "$s" -ge 1048576 ] && iters=$big_n
		run "ibv_rc_pingpong $label size $s x $iters" \
			"check_pingpong $s $iters" \
			ibv_rc_pingpong -d "$sd" -g "$sg" -s "$s" -n "$iters" -c -- \
			ibv_rc_pingpong -d "$cd" -g "$cg" -s "$s" -n "$iters" -c
	done
done

# -t: completion timestamps (ibv_create_cq_ex, the extended poll API and
# the device clock) on shca0, polling. Not with -e: there ibv_rc_pingpong
# re-arms before it polls and fails on an event whose CQEs its previous
# batch already took (start_poll ENOENT): a CQE written between an event
# and that arm is announced by the arm (no lost wake-up, as an HCA does),
# and the previous batch then polls it (Documentation/testing.md).
for s in 4096 65536; do
	run "ibv_rc_pingpong shca0 -t size $s x 1000" \
		"check_pingpong_ts $s 1000" \
		ibv_rc_pingpong -d shca0 -g "$g0" -s "$s" -n 1000 -c -t -- \
		ibv_rc_pingpong -d shca0 -g "$g0" -s "$s" -n 1000 -c -t
done

# perftest prints a header and then one line of numbers per size: the
# default size of each test (2 B latency, 64 KiB bandwidth, 8 B atomics).
pt_check() { # TEST
	case $1 in
	ib_atomic_lat) echo "check_lat 8 $pt_n" ;;
	ib_atomic_bw) echo "check_bw 8 $pt_n" ;;
	*_lat) echo "check_lat 2 $pt_n" ;;
	*_bw) echo "check_bw 65536 $pt_n" ;;
	esac
}
for t in "${topos[@]}"; do
	read -r label sd sg cd cg <<<"$t"
	for p in "${pt_tests[@]}"; do
		run "$p $label -n $pt_n" "$(pt_check "$p")" \
			"$p" -d "$sd" -x "$sg" -n "$pt_n" -F -- \
			"$p" -d "$cd" -x "$cg" -n "$pt_n" -F
	done
done
exit $failed
