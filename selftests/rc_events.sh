#!/bin/bash
# TAP: stock tools in event mode: every completion they
# wait for comes through an armed CQ, the engine's EQE, the vector's IRQ,
# the tasklet and the completion channel (Documentation/events.md).
#  - ibv_rc_pingpong -e --chk (both sides sleep in ibv_get_cq_event) at
#    1 B .. 1 MiB;
#  - the perftest latency tests that take -e: ib_send_lat, ib_read_lat,
#    ib_atomic_lat (ib_write_lat has no event mode), each result line
#    checked for sane numbers (size and iterations as asked, 0 < t_min <=
#    t_typical, t_avg <= t_max);
# each between two processes on shca0 and between shca0 and shca1 (created
# on veth1 here, deleted at the end). Server and client meet over TCP on
# 127.0.0.1. A lost event hangs a tool: each run is killed after
# SOFTHCA_EVENTS_TIMEOUT seconds (default 120) and fails. Last, the async
# events as ibv_asyncwatch prints them: veth0 down and up, then an address
# added to it, give shca0's PORT_ERR, PORT_ACTIVE and GID_CHANGE in order.
#
# Iterations: ibv_rc_pingpong -n SOFTHCA_EVENTS_N (default 1000) up to
# 64 KiB and 100 at 1 MiB; perftest -n SOFTHCA_PERFTEST_N (default 1000).
set -u
here=$(dirname "$0")
pp_n=${SOFTHCA_EVENTS_N:-1000}
pt_n=${SOFTHCA_PERFTEST_N:-1000}
tmo=${SOFTHCA_EVENTS_TIMEOUT:-120}
out=$(mktemp -d)
port=19500
added_shca1=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"

accept_local=$(cat /proc/sys/net/ipv4/conf/all/accept_local)
cleanup() {
	jobs -p | xargs -r kill -9 2>/dev/null
	[ "$added_shca1" = 1 ] && rdma link del shca1
	ip addr del 198.18.9.1/24 dev veth0 2>/dev/null
	echo "$accept_local" >/proc/sys/net/ipv4/conf/all/accept_local
	rm -rf "$out"
}
trap cleanup EXIT

echo "TAP version 13"

# veth0 and veth1 share a namespace: shca0 <-> shca1 needs accept_local
# (Documentation/testing.md, "shca1").
echo 1 >/proc/sys/net/ipv4/conf/all/accept_local
shca1_gids || exit 1

pp_sizes=(1 64 4096 65536 1048576)
pt_tests=(ib_send_lat ib_read_lat ib_atomic_lat)
echo "1..$(( 2 * ${#pp_sizes[@]} + 2 * ${#pt_tests[@]} + 1 ))"

# topology: label server-dev server-gid client-dev client-gid
topos=("shca0 shca0 $g0 shca0 $g0" "shca0-shca1 shca1 $g1 shca0 $g0")

for t in "${topos[@]}"; do
	read -r label sd sg cd cg <<<"$t"
	for s in "${pp_sizes[@]}"; do
		iters=$pp_n
		[ "$s" -ge 1048576 ] && iters=100
		run "ibv_rc_pingpong -e $label size $s x $iters" "check_pingpong $s $iters" \
			ibv_rc_pingpong -e -d "$sd" -g "$sg" -s "$s" -n "$iters" -c -- \
			ibv_rc_pingpong -e -d "$cd" -g "$cg" -s "$s" -n "$iters" -c
	done
done

for t in "${topos[@]}"; do
	read -r label sd sg cd cg <<<"$t"
	for p in "${pt_tests[@]}"; do
		# ib_atomic_lat moves 8 bytes whatever -s says.
		size=2
		[ "$p" = ib_atomic_lat ] && size=8
		run "$p -e $label -n $pt_n" "check_lat $size $pt_n" \
			"$p" -e -d "$sd" -x "$sg" -n "$pt_n" -F -- \
			"$p" -e -d "$cd" -x "$cg" -n "$pt_n" -F
	done
done

# asyncwatch_events: the event lines ibv_asyncwatch printed, one word each
asyncwatch_events() {
	sed -n 's/^ *event_type IBV_EVENT_\([A-Z_]*\) .*, port 1$/\1/p' "$out/aw" | xargs
}

# port_active DEV: its port 1 ACTIVE again (5 s at most)
port_active() {
	for _ in $(seq 100); do
		rdma link show "$1/1" | grep -q 'state ACTIVE ' && return 0
		sleep 0.05
	done
	return 1
}

want="PORT_ERR PORT_ACTIVE GID_CHANGE"
stdbuf -oL ibv_asyncwatch -d shca0 >"$out/aw" 2>&1 &
aw=$!
for _ in $(seq 100); do
	grep -q 'async event FD' "$out/aw" && break
	sleep 0.05
done
ip link set veth0 down && ip link set veth0 up && port_active shca0 &&
	ip addr add 198.18.9.1/24 dev veth0
for _ in $(seq 100); do
	[ "$(asyncwatch_events)" = "$want" ] && break
	sleep 0.05
done
kill "$aw"
wait "$aw" 2>/dev/null
ip addr del 198.18.9.1/24 dev veth0
got=$(asyncwatch_events)
if [ "$got" = "$want" ]; then
	ok "ibv_asyncwatch shca0: $want"
else
	sed 's/^/# /' "$out/aw"
	nok "ibv_asyncwatch shca0: $want (got: $got)"
fi
exit $failed
