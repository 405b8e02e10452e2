#!/bin/bash
# TAP: stock UD traffic through our provider, judged by tools nobody here
# wrote (design.md §8): ibv_ud_pingpong with --chk (which checks every
# received buffer after its 40-byte GRH area) at 1 B .. the path MTU, and
# perftest's ib_send_lat and ib_send_bw over UD (-c UD), each between two
# processes on shca0 and between shca0 and shca1 (created on veth1 here,
# deleted at the end). Server and client meet over TCP on 127.0.0.1.
# The veths' MTU of 1500 makes the RoCE path MTU 1024: the largest
# datagram.
#
# Iterations: ibv_ud_pingpong -n SOFTHCA_PINGPONG_N (default 2000),
# perftest -n SOFTHCA_PERFTEST_N (default 1000).
set -u
here=$(dirname "$0")
pp_n=${SOFTHCA_PINGPONG_N:-2000}
pt_n=${SOFTHCA_PERFTEST_N:-1000}
tmo=${SOFTHCA_PINGPONG_TIMEOUT:-300}
out=$(mktemp -d)
port=19500
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

pp_sizes=(1 64 512 1000 1024)
pt_runs=("ib_send_lat 2" "ib_send_lat 1024" "ib_send_bw 1024" "ib_send_bw 64")
echo "1..$(( 2 * ${#pp_sizes[@]} + 2 * ${#pt_runs[@]} ))"

# topology: label server-dev server-gid client-dev client-gid
topos=("shca0 shca0 $g0 shca0 $g0" "shca0-shca1 shca1 $g1 shca0 $g0")

for t in "${topos[@]}"; do
	read -r label sd sg cd cg <<<"$t"
	for s in "${pp_sizes[@]}"; do
		run "ibv_ud_pingpong $label size $s x $pp_n" \
			"check_pingpong $s $pp_n" \
			ibv_ud_pingpong -d "$sd" -g "$sg" -s "$s" -n "$pp_n" -c -- \
			ibv_ud_pingpong -d "$cd" -g "$cg" -s "$s" -n "$pp_n" -c
	done
done

for t in "${topos[@]}"; do
	read -r label sd sg cd cg <<<"$t"
	for r in "${pt_runs[@]}"; do
		read -r p s <<<"$r"
		chk=check_bw
		[ "$p" = ib_send_lat ] && chk=check_lat
		run "$p -c UD $label size $s -n $pt_n" "$chk $s $pt_n" \
			"$p" -c UD -d "$sd" -x "$sg" -s "$s" -n "$pt_n" -F -- \
			"$p" -c UD -d "$cd" -x "$cg" -s "$s" -n "$pt_n" -F
	done
done
exit $failed
