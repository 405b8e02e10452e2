#!/bin/bash
# TAP: the set of issue 14 on bed (b), two hosts: scripts/wire-bedb runs
# `set.sh a` in guest a and `set.sh b` in guest b of scripts/vm-pair, whose
# eth0s (198.19.0.1 and 198.19.0.2) share one Ethernet segment. softhca has
# no wire in the initial network namespace by default (Documentation/wire.md),
# so a softhca guest first moves its eth0 into namespace "h" and makes its
# device there; rdma_rxe stays in the initial one. With
# SOFTHCA_BEDB_INIT_NET=1 a softhca guest unloads rdma_rxe instead, sets
# wire_init_net and makes its device on eth0 where it is, as on a host.
#  - round 1: shca0 on a's eth0, rxe0 on b's eth0;
#  - round 2: b's rxe0 goes, shca1 on b's eth0: softhca on both hosts.
# Each round, every row once with the server on a and once on b:
# ibv_rc_pingpong -c at 1 B, 4 KiB, 64 KiB, 1 MiB; ibv_ud_pingpong -c
# (1000 B); the eight perftest tests (as selftests/wire_rc.sh: -o 16 for
# READ and atomics; -u 18, below); rping -v; the rdma_cm examples ucmatose
# (RC), udaddy (UD), rstream -T v (rsockets, data verified) and mckey
# (multicast: the "server" receives, the client sends). A row passes when
# both ends exit 0, the client's result lines are as asked
# (selftests/lib/tools.sh) and both devices sent and took packets on the
# wire (softhca's wire_tx/rx_packets, rxe's sent/rcvd_pkts): for
# ibv_ud_pingpong exactly one each way per iteration, for mckey the
# sender's 100 datagrams or more sent and taken by the receiver.
#
# The guests meet through files (selftests/bedb/lib.sh): before row N both
# write ROLE.rowN and wait for the other's; the server writes ROLE.rowN.up once it listens and the client
# starts then; each writes ROLE.rowN.res ("status verdict tx rx summary") and
# ROLE.rowN.log (its tool's output). Guest a prints the TAP rows; b prints
# nothing on stdout.
# Functions run through setup and CHECK command lines.
# shellcheck disable=SC2317
set -u
here=$(dirname "$0")
# shellcheck source=selftests/bedb/lib.sh
. "$here/lib.sh"

# Both ends' device names, for the row labels.
dev_a=shca0 dev_b=''
rowno=0

# tool_cmd srv|cli TOOL ARG...: the command line of TOOL on this guest into
# cmd, with our device and GID, port $port and (client) the server's address.
tool_cmd() {
	local side=$1 t=$2
	shift 2
	case $t in
	rping)
		if [ "$side" = srv ]; then
			cmd=(rping -s -a "$me" -p "$port" "$@")
		else
			cmd=(rping -c -a "$peer" -p "$port" "$@")
		fi
		return ;;
	ucmatose | rstream)
		cmd=("$t" -b "$me" -p "$port" "$@")
		[ "$side" = srv ] || cmd+=(-s "$peer")
		return ;;
	udaddy)
		# Its own port, 7174; the rows run one at a time.
		cmd=(udaddy -b "$me" "$@")
		[ "$side" = srv ] || cmd+=(-s "$peer")
		return ;;
	mckey)
		# The "server" receives; the client joins and sends, 3 s later.
		cmd=(mckey -b "$me" "$@")
		[ "$side" = srv ] || cmd+=(-s)
		return ;;
	ib_*) cmd=("$t" -d "$dev" -x "$gid" -F "$@" -p "$port") ;;
	*) cmd=("$t" -d "$dev" -g "$gid" "$@" -p "$port") ;;
	esac
	[ "$side" = srv ] || cmd+=("$peer")
}

# listening TOOL: the server of this row is ready for its client.
listening() {
	case $1 in
	rping | ucmatose | udaddy | rstream)
		rdma res show cm_id 2>/dev/null | grep -q LISTEN ;;
	mckey) rdma res show cm_id 2>/dev/null | grep -q "src-addr $me:" ;;
	*) "${pre[@]}" ss -Hltn "sport = :$port" 2>/dev/null | grep -q . ;;
	esac
}

# check_rping N FILE: the client verified N pings.
check_rping() {
	local got
	got=$(grep -c 'ping data:' "$2")
	echo "$got pings of 1000 bytes verified"
	[ "$got" = "$1" ]
}

# check_status FILE: librdmacm's examples end with "return status 0".
check_status() {
	grep -q '^return status 0$' "$1" && echo "return status 0"
}

# check_rstream SIZE COUNT FILE: rstream's result line ("name bytes xfers
# iters total time Gb/sec usec/xfer") counts COUNT transfers (of SIZE,
# the row's -S).
check_rstream() {
	local line
	line=$(grep -A1 '^name ' "$3" | tail -n 1)
	echo "$line" | tr -s ' \t' ' ' | sed 's/^ //'
	echo "$line" | awk -v n="$2" '{ exit !($3 == n) }'
}

# row LABEL SERVER CHECK PACKETS TOOL ARG...: TOOL's server on guest
# SERVER (a|b), its client on the other; CHECK a check_* command line for
# the client's output; PACKETS "any" (both devices sent and took some) or
# a number (each sent and took exactly that many).
row() {
	local label=$1 server=$2 check=$3 want=$4
	shift 4
	local id spid st v=- sum='' c0 c1 i
	rowno=$((rowno + 1)) id=row$rowno port=$((19700 + rowno))
	meet "$id"
	read -r -a c0 <<<"$(counts)"
	if [ "$role" = "$server" ]; then
		tool_cmd srv "$@"
		timeout -k 5 "$tmo" "${pre[@]}" "${cmd[@]}" >"$out/log" 2>&1 &
		spid=$!
		for i in $(seq 400); do
			listening "$1" && break
			kill -0 "$spid" 2>/dev/null || break
			sleep 0.05
		done
		[ "$i" = 400 ] && sleep 1
		: >"$D/$role.$id.up"
		wait "$spid"
		st=$?
	else
		wait_file "$D/$other.$id.up" "$meet_tmo"
		tool_cmd cli "$@"
		timeout -k 5 "$tmo" "${pre[@]}" "${cmd[@]}" >"$out/log" 2>&1
		st=$?
		if [ "$st" = 0 ]; then
			# shellcheck disable=SC2086 # CHECK is a command line
			sum=$($check "$out/log")
			v=$?
			sum=$(tr '\n' ' ' <<<"$sum")
		fi
	fi
	read -r -a c1 <<<"$(counts)"
	{
		cat "$out/log"
		echo "counters of $dev after the row (non-zero):"
		awk '{ for (i = 3; i < NF; i += 2) if ($(i + 1) != 0) printf " %s %s", $i, $(i + 1); print "" }' "$out/stat"
	} >"$D/$role.$id.log"
	put "$id.res" "$st $v $((c1[0] - c0[0])) $((c1[1] - c0[1])) $sum"
	[ "$role" = a ] && report "$label" "$id" "$want" "$server"
	return 0
}

# pkts_ok WANT TX RX SIDE: the packet counts a row asks for of the guest
# on SIDE (srv|cli): "any", exactly WANT each way, or "mc:N" (multicast:
# the sender, the client, sent N or more and the receiver took as many).
pkts_ok() {
	case $1 in
	any) [ "$2" -gt 0 ] && [ "$3" -gt 0 ] ;;
	mc:*) if [ "$4" = cli ]; then [ "$2" -ge "${1#mc:}" ]; else [ "$3" -ge "${1#mc:}" ]; fi ;;
	*) [ "$2" = "$1" ] && [ "$3" = "$1" ] ;;
	esac
}

# report LABEL ID WANT SERVER (guest a): one TAP row from both guests'
# results.
report() {
	local label=$1 id=$2 want=$3 server=$4 sa va ta ra suma sb vb tb rb sumb v sum
	local side_a=cli side_b=srv
	[ "$server" = a ] && side_a=srv side_b=cli
	wait_file "$D/b.$id.res" "$meet_tmo" || bail "no result from guest b for $label"
	read -r sa va ta ra suma <"$D/a.$id.res"
	read -r sb vb tb rb sumb <"$D/b.$id.res"
	v=$va sum=$suma
	[ "$v" = - ] && v=$vb sum=$sumb
	local pk="$dev_a@a sent $ta took $ra, $dev_b@b sent $tb took $rb packets"
	if [ "$sa" = 0 ] && [ "$sb" = 0 ] && pkts_ok "$want" "$ta" "$ra" "$side_a" &&
		pkts_ok "$want" "$tb" "$rb" "$side_b"; then
		case $v in
		0) ok "$label # $sum; $pk"; return ;;
		2) ok "$label # SKIP $sum; $pk"; return ;;
		esac
	fi
	echo "# $label: a exit $sa, b exit $sb (124: timed out after ${tmo}s); check $v: $sum"
	echo "# $pk (want $want each way)"
	sed 's/^/# a: /' "$D/a.$id.log" | tail -n 10
	sed 's/^/# b: /' "$D/b.$id.log" | tail -n 10
	nok "$label"
}

# label_of SERVER: "DEV@a server, DEV@b client" or the reverse.
label_of() {
	if [ "$1" = a ]; then
		echo "$dev_a@a server, $dev_b@b client"
	else
		echo "$dev_b@b server, $dev_a@a client"
	fi
}

# The set, once per round.
the_set() {
	local s it srv t chk args
	for s in 1 4096 65536 1048576; do
		it=200
		[ "$s" -ge 65536 ] && it=20
		for srv in a b; do
			row "ibv_rc_pingpong -c $s B x $it, $(label_of $srv)" $srv \
				"check_pingpong $s $it" any ibv_rc_pingpong -s "$s" -n "$it" -c
		done
	done
	for srv in a b; do
		row "ibv_ud_pingpong -c 1000 B x 200, $(label_of $srv)" $srv \
			"check_pingpong 1000 200" 200 ibv_ud_pingpong -s 1000 -n 200 -c
	done
	for t in ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat \
		ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw; do
		case $t in
		*_lat) chk="check_lat 64 200" args=(-s 64 -n 200) ;;
		*) chk="check_bw 65536 200" args=(-s 65536 -n 200) ;;
		esac
		[ "$t" = ib_atomic_lat ] && chk="check_lat 8 200" args=(-n 200)
		[ "$t" = ib_atomic_bw ] && chk="check_bw 8 200" args=(-n 200)
		# READs and atomics in flight: rxe offers 128, softhca 16.
		case $t in ib_read_* | ib_atomic_*) args+=(-o 16) ;; esac
		# QP timeout 4.096 us x 2^18 (1.07 s), not perftest's 14 (67 ms):
		# a guest that does not run for 0.86 s (captured on both eth0s, host
		# load 7) outlasts 8 x 67 ms, and both ends end in RETRY_EXC_ERR.
		args+=(-u 18)
		for srv in a b; do
			row "$t, $(label_of $srv)" $srv "$chk" any "$t" "${args[@]}"
		done
	done
	for srv in a b; do
		row "rping -v x 50, $(label_of $srv)" $srv "check_rping 50" any \
			rping -C 50 -v -S 1000
		row "ucmatose, $(label_of $srv)" $srv check_status any ucmatose
		row "udaddy, $(label_of $srv)" $srv check_status any udaddy
		row "rstream -T v 100 x 4096, $(label_of $srv)" $srv \
			"check_rstream 4096 100" any rstream -T v -C 100 -S 4096
		row "mckey 239.19.0.$rowno 100 x 512, $(label_of $srv) (receiver first)" $srv \
			check_status mc:100 mckey -m "239.19.0.$rowno" -C 100 -S 512
	done
}

rows_per_round=36
[ "$role" = a ] && { echo "TAP version 13"; echo "1..$((2 * (1 + rows_per_round)))"; }
say "guest $role: $(uname -r), eth0 $me, peer $peer"

where="netns h"
[ "${SOFTHCA_BEDB_INIT_NET:-0}" = 1 ] && where="initial netns, wire_init_net"

# Round 1: softhca (a) and rdma_rxe (b).
dev_b=rxe0
if [ "$role" = a ]; then
	setup setup1 "bed: shca0 on a's eth0 ($where), rxe0 on b's eth0" make_softhca shca0
else
	setup setup1 "" make_rxe
fi
the_set

# Round 2: softhca on both hosts.
dev_b=shca1
if [ "$role" = a ]; then
	setup setup2 "bed: shca0 on a's eth0 ($where), shca1 on b's eth0 ($where)" true
else
	setup setup2 "" eval 'rdma link del rxe0 && make_softhca shca1'
fi
the_set
meet finish
[ "$role" = a ] && [ "$rowno" != $((2 * rows_per_round)) ] && nok "rows: $rowno run, $((2 * rows_per_round)) planned"
exit "$failed"
