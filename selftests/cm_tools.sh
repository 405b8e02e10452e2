#!/bin/bash
# TAP: the stock rdma_cm tools through ib_cm and ib_mad's GSI QP on our
# ports, judged by tools nobody here wrote (design.md §8, §11): rping
# (-V: it validates every ping; -v: we count the pings both sides print),
# ucmatose (RC over rdma_cm), udaddy (UD over rdma_cm), rdma_server /
# rdma_client (librdmacm's rdma_verbs), rstream (rsockets, -T v: it
# verifies the data), perftest's ib_send_lat and ib_write_bw with -R
# (connection through rdma_cm), each
# between two processes on shca0 and between shca0 and shca1 (created on
# veth1 here, deleted at the end). Addresses: 198.18.0.1 (shca0),
# 198.18.0.2 (shca1). An rping connection whose client or server is
# killed (-9) leaves no cm_id, QP, CQ, MR, PD or context behind.
# perftest's -R client takes no source address: the
# route to a local address starts from that address, so it would run on
# the server's device; perftest -R runs on shca0 alone. At the end no cm_id is left and every device holds
# only ib_mad's GSI QP, CQ and PD.
set -u
here=$(dirname "$0")
tmo=${SOFTHCA_CM_TIMEOUT:-120}
pt_n=${SOFTHCA_PERFTEST_N:-1000}
out=$(mktemp -d)
port=19800
mc=0
added_shca1=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"

cleanup() {
	jobs -p | xargs -r kill -9 2>/dev/null
	[ "$added_shca1" = 1 ] && rdma link del shca1
	rm -rf "$out"
}
trap cleanup EXIT

# Checks of both outputs: check_* ARGS... CLIENT_FILE SERVER_FILE, as
# tools.sh's (0 good, 2 skip, 1 bad).

# check_rping COUNT C S: COUNT pings printed by each side, in order, each
# the pattern rping's -V checked.
check_rping() {
	local cnt=$1 c=$2 s=$3 i
	for i in $(seq 0 $((cnt - 1))); do
		if ! grep -q "^ping data: rdma-ping-$i: " "$c" ||
		   ! grep -q "^server ping data: rdma-ping-$i: " "$s"; then
			echo "ping $i missing"
			return 1
		fi
	done
	if [ "$(grep -c '^ping data: ' "$c")" != "$cnt" ] ||
	   [ "$(grep -c '^server ping data: ' "$s")" != "$cnt" ]; then
		echo "not $cnt pings"
		return 1
	fi
	echo "$cnt pings validated"
}

# check_status C S: librdmacm's examples end with "return status 0".
check_status() {
	grep -q '^return status 0$' "$1" || return 1
	grep -q '^return status 0$' "$2" || return 1
	echo "return status 0"
}

# check_end C S: rdma_client / rdma_server's last line.
check_end() {
	grep -q '^rdma_client: end 0$' "$1" || return 1
	grep -q '^rdma_server: end 0$' "$2" || return 1
	echo "end 0"
}

# check_rstream SIZE COUNT C S: the result line "name bytes xfers iters
# total time Gb/sec usec/xfer": COUNT transfers of SIZE, on both sides.
check_rstream() {
	local size=$1 cnt=$2 f line
	for f in "$3" "$4"; do
		line=$(grep -A1 '^name ' "$f" | tail -n 1)
		echo "$line" | awk -v n="$cnt" '{ exit !($3 == n) }' || {
			echo "result: $line"
			return 1
		}
	done
	echo "$line" | tr -s ' \t' ' ' | sed 's/^ //'
}

# server_ready "listen PORT" | "bound ADDR": an rdma_cm ID listens on
# PORT, or one (mckey's, which joins a group next) is bound to ADDR
# (rdma res show cm_id); 1 after 10 s without.
server_ready() {
	local pat
	case $1 in
	listen\ *) pat="state LISTEN .*src-addr [^ ]*:${1#listen } " ;;
	bound\ *) pat="src-addr ${1#bound }:" ;;
	esac
	for _ in $(seq 200); do
		rdma res show cm_id 2>/dev/null | grep -q "$pat" && return 0
		sleep 0.05
	done
	return 1
}

# run_cm NAME CHECK READY SERVER_CMD... -- CLIENT_CMD...
# The commands as given (each tool takes its address and port its own
# way); the client starts when the server is ready (server_ready READY).
# tools.sh's checks of a client (check_lat, check_bw) get the server's
# output as an extra argument, which they ignore.
run_cm() {
	local name=$1 check=$2 ready=$3; shift 3
	local srv=() cli=() c s spid t0 t sum r
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	timeout -k 5 "$tmo" "${srv[@]}" >"$out/srv" 2>&1 &
	spid=$!
	server_ready "$ready" || echo "# $name: server not ready after 10 s ($ready)"
	t0=$(date +%s.%N)
	timeout -k 5 "$tmo" "${cli[@]}" >"$out/cli" 2>&1
	c=$?
	wait "$spid"
	s=$?
	t=$(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)")
	r=1
	if [ "$c" = 0 ] && [ "$s" = 0 ]; then
		# shellcheck disable=SC2086 # CHECK is a command line
		sum=$($check "$out/cli" "$out/srv")
		r=$?
	fi
	case $r in
	0) ok "$name # ${t}s: $sum" ;;
	2) ok "$name # SKIP after ${t}s: $sum" ;;
	*)
		echo "# $name: client exit $c, server exit $s (124: timed out after ${tmo}s)"
		[ "$c" = 0 ] && [ "$s" = 0 ] && echo "# result not as expected: $sum"
		sed 's/^/# client: /' "$out/cli" | tail -n 25
		sed 's/^/# server: /' "$out/srv" | tail -n 25
		nok "$name"
		;;
	esac
}

# kill_side WHICH: an endless rping between shca0 and shca1; once both
# cm_ids are connected, kill -9 the WHICH (client or server) process.
# The other side sees the disconnect and exits; nothing is left.
kill_side() {
	local which=$1 sp cp victim up=0
	port=$((port + 1))
	rping -s -a 198.18.0.2 -p "$port" -S 100 >"$out/srv" 2>&1 &
	sp=$!
	server_ready "listen $port" || echo "# kill $which: server not ready"
	rping -c -a 198.18.0.2 -I 198.18.0.1 -p "$port" -S 100 >"$out/cli" 2>&1 &
	cp=$!
	for _ in $(seq 200); do
		[ "$(rdma res show cm_id 2>/dev/null | grep -c 'state CONNECT ')" -ge 2 ] &&
			up=1 && break
		sleep 0.05
	done
	victim=$cp
	[ "$which" = server ] && victim=$sp
	kill -9 "$victim"
	# The survivor ends by itself; it is killed only if it does not.
	timeout 30 tail --pid="$cp" -f /dev/null
	timeout 30 tail --pid="$sp" -f /dev/null
	kill -9 "$sp" "$cp" 2>/dev/null
	wait "$sp" "$cp" 2>/dev/null
	if [ "$up" = 0 ]; then
		sed 's/^/# client: /' "$out/cli" | tail -n 5
		nok "kill -9 of the rping $which: never connected"
	elif only_ib_mad_left; then
		ok "kill -9 of the rping $which: nothing left"
	else
		nok "kill -9 of the rping $which: nothing left"
	fi
}

echo "TAP version 13"

# shca0 <-> shca1 needs ARP between two local addresses (rc_pingpong.sh).
if [ "$(cat /proc/sys/net/ipv4/conf/all/accept_local)" != 1 ]; then
	echo "Bail out! net.ipv4.conf.all.accept_local is not 1 (scripts/vm-run sets it)"
	exit 1
fi

# SOFTHCA_RC_LINK_TYPE=rxe: the same over rdma_rxe, to check the script.
shca1_gids || exit 1

per_topo=6
# The GSI QPs (2), the tools on both topologies, perftest on shca0 (2),
# nothing left after them (1), the two kills (2).
echo "1..$((2 + 2 * per_topo + 2 + 1 + 2))"

# topology: label server-dev server-addr server-gid client-dev client-addr client-gid
topos=("shca0 shca0 198.18.0.1 $g0 shca0 198.18.0.1 $g0"
       "shca0-shca1 shca1 198.18.0.2 $g1 shca0 198.18.0.1 $g0")

for t in "${topos[@]}"; do
	read -r label sd sa sg cd ca cg <<<"$t"
	# rstream's client binds its source address to the server's port too.
	rs_bind=()
	[ "$ca" != "$sa" ] && rs_bind=(-b "$ca")
	port=$((port + 1))
	run_cm "rping $label -C 20 -S 100" "check_rping 20" "listen $port" \
		rping -s -a "$sa" -p "$port" -C 20 -S 100 -V -v -- \
		rping -c -a "$sa" -I "$ca" -p "$port" -C 20 -S 100 -V -v
	port=$((port + 1))
	run_cm "ucmatose $label" check_status "listen $port" \
		ucmatose -b "$sa" -p "$port" -- \
		ucmatose -s "$sa" -b "$ca" -p "$port"
	run_cm "udaddy $label" check_status "listen 7174" \
		udaddy -b "$sa" -- \
		udaddy -s "$sa" -b "$ca"
	port=$((port + 1))
	run_cm "rdma_server/rdma_client $label" check_end "listen $port" \
		rdma_server -s "$sa" -p "$port" -- \
		rdma_client -s "$sa" -p "$port"
	# The sender sleeps 3 s after its join, so the receiver's join,
	# right after its bind, is done before the first datagram.
	run_cm "mckey $label -C 100 -S 1024" check_status "bound $sa" \
		mckey -m 239.18.0.$((++mc)) -b "$sa" -C 100 -S 1024 -- \
		mckey -m 239.18.0.$mc -b "$ca" -s -C 100 -S 1024
	port=$((port + 1))
	run_cm "rstream -T v $label 100 x 4096" "check_rstream 4096 100" "listen $port" \
		rstream -b "$sa" -p "$port" -T v -C 100 -S 4096 -- \
		rstream -s "$sa" "${rs_bind[@]}" -p "$port" -T v -C 100 -S 4096
	[ "$label" = shca0 ] || continue
	port=$((port + 1))
	run_cm "ib_send_lat -R $label size 2 -n $pt_n" "check_lat 2 $pt_n" "listen $port" \
		ib_send_lat -R -d "$sd" -x "$sg" -n "$pt_n" -F -p "$port" -- \
		ib_send_lat -R -d "$cd" -x "$cg" -n "$pt_n" -F -p "$port" "$sa"
	port=$((port + 1))
	run_cm "ib_write_bw -R $label size 65536 -n $pt_n" \
		"check_bw 65536 $pt_n" "listen $port" \
		ib_write_bw -R -d "$sd" -x "$sg" -s 65536 -n "$pt_n" -F -p "$port" -- \
		ib_write_bw -R -d "$cd" -x "$cg" -s 65536 -n "$pt_n" -F -p "$port" "$sa"
done

# ib_mad's GSI QP on each port: QPN 1, up (RTS), the kernel's.
for d in shca0 shca1; do
	q=$(rdma res show qp link "$d/1" lqpn 1 2>&1)
	if grep -q "lqpn 1 type GSI state RTS " <<<"$q" && grep -q "comm \[ib_core\]" <<<"$q"; then
		ok "$d: the GSI QP is QPN 1, RTS, ib_core's"
	else
		sed 's/^/# /' <<<"$q"
		nok "$d: the GSI QP is QPN 1, RTS, ib_core's"
	fi
done

# Every connection went: no cm_id on any device, and each holds only
# what ib_mad keeps (its PD, its CQ and the GSI QP).
if only_ib_mad_left; then
	ok "after the tools: no cm_id, only ib_mad's PD, CQ and GSI QP"
else
	nok "after the tools: no cm_id, only ib_mad's PD, CQ and GSI QP"
fi
kill_side client
kill_side server
exit $failed
