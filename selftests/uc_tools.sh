#!/bin/bash
# TAP: stock UC traffic through our provider, judged by tools nobody here
# wrote (design.md §8): ibv_uc_pingpong with --chk (which checks every
# received buffer) at 1 B .. 64 KiB, and perftest's ib_send_lat,
# ib_write_lat, ib_send_bw and ib_write_bw over UC (-c UC), each between
# two processes on shca0 and between shca0 and shca1 (created on veth1
# here, deleted at the end). Server and client meet over TCP on
# 127.0.0.1. UC drops a message its receiver cannot take; a run that
# lost one would hang (the pingpong waits for every message) and fail.
#
# Iterations: ibv_uc_pingpong -n SOFTHCA_PINGPONG_N (default 2000),
# perftest -n SOFTHCA_PERFTEST_N (default 1000).
set -u
here=$(dirname "$0")
pp_n=${SOFTHCA_PINGPONG_N:-2000}
pt_n=${SOFTHCA_PERFTEST_N:-1000}
tmo=${SOFTHCA_PINGPONG_TIMEOUT:-300}
out=$(mktemp -d)
port=19700
added_shca1=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"

cleanup() {
	jobs -p | xargs -r kill -9 2>/dev/null
	[ "$added_shca1" = 1 ] && rdma link del shca1
	rm -rf "$out"
}
trap cleanup EXIT

echo "TAP version 13"

# shca0 <-> shca1 needs ARP between two local addresses (rc_pingpong.sh).
if [ "$(cat /proc/sys/net/ipv4/conf/all/accept_local)" != 1 ]; then
	echo "Bail out! net.ipv4.conf.all.accept_local is not 1 (scripts/vm-run sets it)"
	exit 1
fi

# SOFTHCA_RC_LINK_TYPE=rxe: the same over rdma_rxe, to check the script.
shca1_gids || exit 1

pp_sizes=(1 4096 65536)
pt_runs=("ib_send_lat 2" "ib_write_lat 64" "ib_send_bw 4096" "ib_write_bw 65536")
echo "1..$(( 2 * ${#pp_sizes[@]} + 2 * ${#pt_runs[@]} ))"

# topology: label server-dev server-gid client-dev client-gid
topos=("shca0 shca0 $g0 shca0 $g0" "shca0-shca1 shca1 $g1 shca0 $g0")

for t in "${topos[@]}"; do
	read -r label sd sg cd cg <<<"$t"
	for s in "${pp_sizes[@]}"; do
		run "ibv_uc_pingpong $label size $s x $pp_n" \
			"check_pingpong $s $pp_n" \
			ibv_uc_pingpong -d "$sd" -g "$sg" -s "$s" -n "$pp_n" -c -- \
			ibv_uc_pingpong -d "$cd" -g "$cg" -s "$s" -n "$pp_n" -c
	done
done

for t in "${topos[@]}"; do
	read -r label sd sg cd cg <<<"$t"
	for r in "${pt_runs[@]}"; do
		read -r p s <<<"$r"
		chk=check_bw
		case $p in *_lat) chk=check_lat ;; esac
		run "$p -c UC $label size $s -n $pt_n" "$chk $s $pt_n" \
			"$p" -c UC -d "$sd" -x "$sg" -s "$s" -n "$pt_n" -F -- \
			"$p" -c UC -d "$cd" -x "$cg" -s "$s" -n "$pt_n" -F
	done
done
exit $failed
