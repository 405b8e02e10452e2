#!/bin/bash
# TAP: an RDMA device moved between network namespaces, as containers use
# it: in ib_core's exclusive mode (`rdma system set netns exclusive`) each
# device belongs to one namespace, and `rdma dev set DEV netns NS` moves it.
# ib_core removes every client (uverbs, ib_mad, ib_cm, rdma_cm), so the
# processes that hold the device are disassociated, as at rmmod, and adds
# them again in the new namespace; the driver's enable_driver op runs
# again there (the EQs stay: kernel.md "Network namespaces").
#  - shca0 to netns t1 while ibv_asyncwatch and an ibv_rc_pingpong server
#    hold it: both disassociated (DEVICE_FATAL reaches ibv_asyncwatch),
#    nothing of theirs left; shca0 only in t1 (rdma dev, ibv_devices), its
#    GSI QP back as QPN 1; ibv_rc_pingpong --chk between two processes
#    there;
#  - back home, the same ping-pong; then five more round trips, after
#    which shca0 has the interrupt vectors it had at the start and the
#    resources (only ib_mad's) it had before.
# Its netdev stays in the initial namespace: a device whose netdev moves
# is unregistered (kernel.md), so rdma_cm has no route to it from t1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
port=19600 tmo=60
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"

in_t1() { ip netns exec t1 "$@"; }
in_ns() { # NS CMD...: CMD in NS ("-": the initial one)
	local ns=$1
	shift
	if [ "$ns" = - ]; then "$@"; else ip netns exec "$ns" "$@"; fi
}

# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
	jobs -p | xargs -r kill -9 2>/dev/null
	wait 2>/dev/null
	in_t1 rdma dev show shca0 >/dev/null 2>&1 && in_t1 rdma dev set shca0 netns init
	ip netns del t1 2>/dev/null
	ip netns del init 2>/dev/null
	rdma system set netns shared
	rm -rf "$out"
}
trap cleanup EXIT

# vectors: shca0's lines of /proc/interrupts, the IRQ and the name
vectors() {
	awk '/softhca-shca0-/ { print $1, $NF }' /proc/interrupts | xargs
}

# resources NS: shca0's `rdma res` counts, seen from NS ("-": initial)
resources() {
	in_ns "$1" rdma res show shca0 2>&1 | sed 's/^[0-9]*: //'
}

# pingpong NS: ibv_rc_pingpong --chk on shca0, 100 x 4096 B, both sides
# in NS ("-": initial) meeting on its 127.0.0.1
pingpong() {
	local ns=$1 spid c s
	port=$((port + 1))
	in_ns "$ns" timeout -k 5 "$tmo" ibv_rc_pingpong -d shca0 -g 1 -s 4096 -n 100 \
		-p "$port" --chk >"$out/srv" 2>&1 &
	spid=$!
	for _ in $(seq 100); do
		in_ns "$ns" ss -Hltn "sport = :$port" | grep -q . && break
		sleep 0.05
	done
	in_ns "$ns" timeout -k 5 "$tmo" ibv_rc_pingpong -d shca0 -g 1 -s 4096 -n 100 \
		-p "$port" --chk 127.0.0.1 >"$out/cli" 2>&1
	c=$?
	wait "$spid"
	s=$?
	cat "$out/cli"
	[ "$c" = 0 ] && [ "$s" = 0 ] && check_pingpong 4096 100 "$out/cli"
}

# gsi_back NS: ib_mad's GSI QP on shca0 again, QPN 1 in RTS
gsi_back() {
	for _ in $(seq 100); do
		in_ns "$1" rdma res show qp link shca0/1 lqpn 1 2>/dev/null |
			grep -q 'lqpn 1 type GSI state RTS ' && return 0
		sleep 0.05
	done
	return 1
}

echo "TAP version 13"
if ! rdma system show | grep -q '^netns shared'; then
	echo "Bail out! rdma's netns mode is not shared at the start"
	exit 1
fi
vec0=$(vectors)
res0=$(resources -)
check "rdma system set netns exclusive; netns t1 (lo up), init named" eval \
	'rdma system set netns exclusive && ip netns add t1 &&
	 in_t1 ip link set lo up && ip netns attach init 1'

stdbuf -oL ibv_asyncwatch -d shca0 >"$out/aw" 2>&1 &
aw=$!
port=$((port + 1))
ibv_rc_pingpong -d shca0 -g 1 -p "$port" >"$out/holder" 2>&1 &
holder=$!
for _ in $(seq 100); do
	grep -q 'async event FD' "$out/aw" && rdma res show qp | grep -q 'comm ibv_rc_pingpong' &&
		break
	sleep 0.05
done
check "ibv_asyncwatch and an ibv_rc_pingpong server hold shca0" eval \
	'rdma res show shca0 | grep -q " ctx 2 "'
check "rdma dev set shca0 netns t1 (holders there)" rdma dev set shca0 netns t1
fatal() {
	for _ in $(seq 100); do
		grep -q 'IBV_EVENT_DEVICE_FATAL' "$out/aw" && return 0
		sleep 0.05
	done
	cat "$out/aw"
	return 1
}
check "ibv_asyncwatch got DEVICE_FATAL (disassociated)" fatal
check "nothing of the holders left on shca0 (in t1: no context, one QP)" eval \
	'resources t1; resources t1 | grep -q " qp 1 .* ctx 0 "'
kill "$aw" "$holder" 2>/dev/null
wait "$aw" "$holder" 2>/dev/null
check "shca0 is in t1 only (rdma dev, ibv_devices)" eval \
	'! rdma dev show shca0 && in_t1 rdma dev show shca0 &&
	 ! ibv_devices | grep -qw shca0 && in_t1 ibv_devices | grep -qw shca0'
check "in t1: ib_mad's GSI QP is QPN 1 again, RTS" gsi_back t1
check "in t1: ibv_rc_pingpong --chk 100 x 4096 B" pingpong t1
check "rdma dev set shca0 netns init, from t1" in_t1 rdma dev set shca0 netns init
check "home: shca0 in the initial namespace, not in t1" eval \
	'rdma dev show shca0 && ! in_t1 rdma dev show shca0'
check "home: ib_mad's GSI QP is QPN 1 again, RTS" gsi_back -
check "home: ibv_rc_pingpong --chk 100 x 4096 B" pingpong -
round_trips() {
	local i
	for i in 1 2 3 4 5; do
		rdma dev set shca0 netns t1 || { echo "round $i: to t1"; return 1; }
		gsi_back t1 || { echo "round $i: no GSI QP in t1"; return 1; }
		in_t1 rdma dev set shca0 netns init || { echo "round $i: home"; return 1; }
		gsi_back - || { echo "round $i: no GSI QP at home"; return 1; }
	done
}
check "five more round trips to t1 and back" round_trips
check "shca0's interrupt vectors are those of the start" eval \
	"echo \"start: $vec0\"; echo \"now:   \$(vectors)\"; [ \"\$(vectors)\" = \"$vec0\" ]"
check "shca0's resources are those of the start" eval \
	"echo \"start: $res0\"; echo \"now:   \$(resources -)\"; [ \"\$(resources -)\" = \"$res0\" ]"
check "rdma system set netns shared, the namespaces gone" eval \
	'ip netns del t1 && ip netns del init && rdma system set netns shared &&
	 rdma system show | grep -q "^netns shared"'
echo "1..$n"
exit $failed
