#!/bin/bash
# TAP: reliable connection over a network that loses, delays, reorders and
# duplicates packets (Documentation/wire.md "Loss recovery"). tc netem on
# the egress of both veths of bed (a):
#  - shca9 (netns far) <-> rxe0 (veth1): ibv_rc_pingpong -c both ways under
#    1 % loss, rdma_rxe judging softhca's recovery and softhca rxe's;
#  - shca9 <-> shca8 (netns near, force_wire) under each profile of
#    $profiles: ibv_rc_pingpong -c (every byte checked) at 1 MiB and 4 KiB,
#    rc_ops' cross_dev tests (every opcode, byte and completion field; the
#    atomics' results show no duplicate executed twice), and the counters
#    that prove the recovery ran: retransmissions and sequence NAKs (loss),
#    out_of_sequence (reordering), duplicate_request (duplication).
#    The stock tools' runs lose requests only (netem_requests): each end
#    is its own process, and a last ACK lost after the peer has exited
#    fails any RC pair, a ConnectX's too. rc_ops, which holds both ends,
#    loses ACKs too, NAKs not (its error tests check the NAK's status);
#    ibv_xsrq_pingpong (XRC) at 8 KiB under each profile too;
#  - UC between shca9 and shca8 under 5 % loss: 300 messages of 4
#    packets, each completed whole and in order or dropped, no send failed;
#  - the peer vanishes (100 % loss under a running pingpong): the side
#    with a request in flight fails with RETRY_EXC_ERR after (retry_cnt +
#    1) local ACK timeouts, ibv_rc_pingpong's 8 x 67.1 ms, not sooner and
#    not much later, having counted exactly 8 local_ack_timeouts.
# Everything is put back at the end, also on failure.
set -u
here=$(dirname "$0")
tmo=${SOFTHCA_PINGPONG_TIMEOUT:-300}
out=$(mktemp -d)
port=19900
bin=$here/../build/selftests
had_shca0=0
v1ns=''		# the namespace of veth1: '' (initial) or near
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"
# shellcheck source=selftests/lib/wire_bed.sh
. "$here/lib/wire_bed.sh"

trap 'netem_clear; wire_bed_restore; rm -rf "$out"' EXIT

profiles=("loss 1%" "loss 5%" "delay 4ms reorder 25% 50%" "duplicate 10%")

# veth_tc DEV ARGS...: tc ARGS on DEV where it lives (veth0 in far).
veth_tc() {
	local dev=$1; shift
	if [ "$dev" = veth0 ]; then
		far tc "$@"
	else
		${v1ns:+ip netns exec "$v1ns"} tc "$@"
	fi
}

# netem_set ARGS...: the same netem qdisc on veth0 and veth1's egress.
netem_set() {
	local d
	for d in veth0 veth1; do
		veth_tc $d qdisc replace dev $d root netem "$@" || return 1
	done
}

# netem_requests ARGS...: netem for everything but RC ACKs (BTH opcode
# 0x11 after a 20-byte IP and the UDP header), which a prio band without
# netem carries. A lost last ACK after the peer exited fails any RC pair:
# the stock tools' runs under loss would fail by chance, not by a fault.
# netem_requests -n ARGS...: spare only NAKs (AETH syndrome 011xxxxx at
# byte 40): a lost NAK that moved its responder to ERR makes the request
# end in RETRY_EXC_ERR, not in the status rc_ops checks.
netem_requests() {
	local d m=()
	if [ "$1" = -n ]; then
		m=(match u8 0x60 0xe0 at 40)
		shift
	fi
	netem_clear
	for d in veth0 veth1; do
		veth_tc $d qdisc replace dev $d root handle 1: prio bands 2 \
			priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 &&
		veth_tc $d qdisc add dev $d parent 1:2 handle 20: netem "$@" &&
		veth_tc $d filter add dev $d parent 1: protocol ip u32 \
			match ip protocol 17 0xff match ip dport 4791 0xffff \
			match u8 0x11 0xff at 28 "${m[@]}" flowid 1:1 || return 1
	done
}

netem_clear() {
	veth_tc veth0 qdisc del dev veth0 root 2>/dev/null
	veth_tc veth1 qdisc del dev veth1 root 2>/dev/null
	return 0
}

# stat_sum COUNTER: COUNTER of shca9 plus shca8's.
stat_sum() {
	echo $(($(wire_stat shca9 "$1" far) + $(wire_stat shca8 "$1" near)))
}

# counter_row NAME WANT...: each "COUNTER" of WANT grew since snap_counters
# (a list of counter names whose sum over both devices must be > 0).
declare -A snap
snap_counters() {
	local c
	for c in tx_retries seq_naks_rcvd seq_naks_sent out_of_sequence \
		 duplicate_request local_ack_timeouts; do
		snap[$c]=$(stat_sum "$c")
	done
}

counter_row() {
	local name=$1 c d sum='' bad=''; shift
	for c in tx_retries seq_naks_sent seq_naks_rcvd out_of_sequence \
		 duplicate_request local_ack_timeouts; do
		d=$(($(stat_sum "$c") - snap[$c]))
		sum+=" $c +$d"
	done
	for c in "$@"; do
		d=$(($(stat_sum "$c") - snap[$c]))
		[ "$d" -gt 0 ] || bad+=" $c"
	done
	if [ -z "$bad" ]; then
		ok "$name #$sum"
	else
		echo "# did not grow:$bad"
		nok "$name #$sum"
	fi
}

# The counters a profile must move: the recovery it exercises.
profile_wants() {
	case $1 in
	loss*) echo tx_retries seq_naks_sent seq_naks_rcvd out_of_sequence ;;
	*reorder*) echo out_of_sequence seq_naks_sent ;;
	duplicate*) echo duplicate_request ;;
	esac
}

# wait_first PID_A PID_B: the one of the two that exits first (within
# $tmo s), its status in $first_rc; the other is killed.
wait_first() {
	local end=$((SECONDS + tmo))
	first=''
	while [ $SECONDS -lt $end ]; do
		for p in "$1" "$2"; do
			if ! kill -0 "$p" 2>/dev/null; then
				wait "$p"
				first_rc=$?
				first=$p
				break 2
			fi
		done
		sleep 0.005
	done
	kill -9 "$1" "$2" 2>/dev/null
	wait "$1" "$2" 2>/dev/null
	[ -n "$first" ]
}

# The peer vanishes under a running pingpong: the side with a request in
# flight must fail after (7 + 1) x 4.096 us x 2^14 (ibv_rc_pingpong's
# retry_cnt and timeout), no sooner, and count 8 local ACK timeouts. The
# pingpongs sleep on their completion channels (-e): two busy pollers on
# the two vCPUs would starve the shell that applies the loss and times
# the failure. Only veth0 loses (one tc command: one moment; both ends'
# traffic dies, a request or its ACK). Sooner is judged from before the
# command (the failing request went after), later from after it.
vanish_row() {
	local name="peer vanishes (100 % loss): RETRY_EXC_ERR after 8 x 67.1 ms"
	local spid cpid ta tb tf early late dev f lo=510 hi=${SOFTHCA_VANISH_MAX_MS:-900}
	local to9 to8 d sum
	port=$((port + 1))
	far ibv_rc_pingpong -d shca9 -g "$g9" -s 4096 -n 100000000 -e -p "$port" >"$out/srv" 2>&1 &
	spid=$!
	wait_port "$port" far || sleep 1
	near ibv_rc_pingpong -d shca8 -g "$g8" -s 4096 -n 100000000 -e -p "$port" 198.18.0.1 >"$out/cli" 2>&1 &
	cpid=$!
	sleep 2		# traffic flowing
	to9=$(wire_stat shca9 local_ack_timeouts far)
	to8=$(wire_stat shca8 local_ack_timeouts near)
	# One qdisc, one moment: shca9's egress, its requests and its ACKs.
	ta=$(date +%s%N)
	veth_tc veth0 qdisc replace dev veth0 root netem loss 100%
	tb=$(date +%s%N)
	if ! wait_first "$spid" "$cpid"; then
		nok "$name # neither side failed within $tmo s"
		return
	fi
	tf=$(date +%s%N)
	early=$(((tf - ta) / 1000000)) late=$(((tf - tb) / 1000000))
	if [ "$first" = "$spid" ]; then
		dev=shca9 f=$out/srv d=$(($(wire_stat shca9 local_ack_timeouts far) - to9))
	else
		dev=shca8 f=$out/cli d=$(($(wire_stat shca8 local_ack_timeouts near) - to8))
	fi
	sum="$dev failed $early ms after the loss began to be applied (want >= $lo), $late ms after it was (want <= $hi), $d local_ack_timeouts"
	if [ "$first_rc" != 0 ] && grep -q 'transport retry counter exceeded' "$f" &&
	   [ "$early" -ge $lo ] && [ "$late" -le "$hi" ] && [ "$d" = 8 ]; then
		ok "$name # $sum"
	else
		echo "# exit $first_rc; $sum"
		sed 's/^/# output: /' "$f" | tail -n 5
		nok "$name # $sum"
	fi
	netem_clear
}

echo "TAP version 13"
for t in tc ibv_rc_pingpong; do
	command -v "$t" >/dev/null || { echo "1..0 # SKIP $t is not installed (scripts/deps)"; exit 0; }
done
if ! modprobe sch_netem 2>/dev/null; then
	echo "1..0 # SKIP no sch_netem module for this kernel"
	exit 0
fi
rdma dev show shca0 >/dev/null 2>&1 && had_shca0=1
echo "1..$((2 + 5 * ${#profiles[@]} - 1 + 1 + 1))"

# softhca <-> rdma_rxe under loss.
if ! wire_bed_far || ! wire_bed_rxe || ! netem_requests loss 1%; then
	nok "the bed: veth0 and shca9 in netns far, rxe0 on veth1, netem"
	exit 1
fi
xpp "1 % loss: ibv_rc_pingpong shca9 server, rxe0 client, 64 KiB x 50" \
	ibv_rc_pingpong 65536 50 far - 198.18.0.1 shca9 "$g9" rxe0 "$gx"
xpp "1 % loss: ibv_rc_pingpong rxe0 server, shca9 client, 64 KiB x 50" \
	ibv_rc_pingpong 65536 50 - far 198.18.0.2 rxe0 "$gx" shca9 "$g9"
netem_clear

# softhca on both ends.
v1ns=near
if ! wire_bed_near || ! echo 1 >/sys/module/softhca/parameters/force_wire; then
	nok "the bed: veth1 and shca8 in netns near, force_wire"
	exit 1
fi
for p in "${profiles[@]}"; do
	snap_counters
	# shellcheck disable=SC2086 # a profile is netem's arguments
	case $p in
	loss*) netem_requests $p ;;
	*) netem_set $p ;;
	esac || { nok "netem $p"; continue; }
	xrun "netem $p: ibv_rc_pingpong shca9 server, shca8 client, 1 MiB x 4" \
		"check_pingpong 1048576 4" far near 198.18.0.1 \
		ibv_rc_pingpong -d shca9 -g "$g9" -s 1048576 -n 4 -c -- \
		ibv_rc_pingpong -d shca8 -g "$g8" -s 1048576 -n 4 -c
	xrun "netem $p: ibv_rc_pingpong shca8 server, shca9 client, 4 KiB x 200" \
		"check_pingpong 4096 200" near far 198.18.0.2 \
		ibv_rc_pingpong -d shca8 -g "$g8" -s 4096 -n 200 -c -- \
		ibv_rc_pingpong -d shca9 -g "$g9" -s 4096 -n 200 -c
	# XRC: every packet of the 8-packet SENDs names its SRQ, resent ones
	# and duplicates too (wire.md "XRC").
	xrun "netem $p: ibv_xsrq_pingpong shca9 server, shca8 client, 8 KiB x 50" \
		check_xsrq far near 198.18.0.1 \
		ibv_xsrq_pingpong -d shca9 -g "$g9" -m 1024 -s 8192 -n 50 -- \
		ibv_xsrq_pingpong -d shca8 -g "$g8" -m 1024 -s 8192 -n 50
	# rc_ops holds both ends: ACKs may be lost too, NAKs not.
	# shellcheck disable=SC2086
	case $p in
	"loss 1%") ;;
	loss*) if netem_requests -n $p; then
			wire_suite "netem $p: rc_ops shca9 <-> shca8" "shca9 shca8" rc_ops
		else
			nok "netem $p: rc_ops shca9 <-> shca8 # netem"
		fi ;;
	*) wire_suite "netem $p: rc_ops shca9 <-> shca8" "shca9 shca8" rc_ops ;;
	esac
	# shellcheck disable=SC2046 # a list of counter names
	counter_row "netem $p: the recovery's counters" $(profile_wants "$p")
	netem_clear
done
# UC under 5 % loss: a message arrives whole or not at all, in order, and
# no send fails (uc.c, messages_arrive_whole_or_not_at_all; its other
# tests skip under SOFTHCA_UC_LOSS).
if netem_set loss 5%; then
	SOFTHCA_UC_LOSS=1 wire_suite "netem loss 5%: UC messages whole or lost, never short, shca9 <-> shca8" \
		"shca9 shca8" uc
else
	nok "netem loss 5%: UC # netem"
fi
netem_clear
vanish_row
exit "$failed"
