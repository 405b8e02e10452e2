#!/bin/bash
# TAP: the stock rdma_cm tools through ib_cm and ib_mad's GSI QP on our
# ports, judged by tools nobody here wrote (design.md §8, §11): rping
# (-V: it validates every ping; -v: we count the pings both sides print),
# ucmatose (RC over rdma_cm), udaddy (UD over rdma_cm), rdma_server /
# rdma_client (librdmacm's rdma_verbs), rstream and riostream (rsockets
# and their RDMA-mapped I/O, -T v: they verify the data), cmtime (50
# connections set up and torn down, each step timed), perftest's
# ib_send_lat and ib_write_bw with -R (connection through rdma_cm), each
# between two processes on shca0 and between shca0 and shca1 (created on
# veth1 here, deleted at the end). Addresses: 198.18.0.1 (shca0),
# 198.18.0.2 (shca1). An rping connection whose client or server is
# killed (-9) leaves no cm_id, QP, CQ, MR, PD or context behind. On shca0
# only (the tools take no source address): rcopy (a 3 MB file over
# rsockets, compared byte for byte) and rdma_xserver / rdma_xclient, RC
# and XRC (librdmacm's XRC example: rdma_rxe has no XRC). Over IPv6
# (fd00::1 on veth0): rping, ucmatose and udaddy on shca0. udpong (rsocket
# datagrams) is not here: it fails with ENOENT from rconnect on rdma_rxe
# as on softhca (rdma-core 44).
# perftest -R and rdma_server/rdma_client (rdma_client takes no source
# address) between shca0 and shca1 run with veth1 in a network
# namespace of its own, shca1 made again on it there, the server inside:
# in one namespace the route to the local 198.18.0.2 goes through lo,
# which ib_core turns into the netdev owning 198.18.0.2, so perftest's
# client ran on shca1 too, with or without --source_ip (rdma res show
# cm_id; rping -I and the others get shca0). Across namespaces the
# route leaves through veth0, as between two hosts; the port counters
# show the bytes leave shca0 and reach shca1. veth1 and shca1 come home
# afterwards. At the end no cm_id is left and every device holds only
# ib_mad's GSI QP, CQ and PD.
set -u
here=$(dirname "$0")
tmo=${SOFTHCA_CM_TIMEOUT:-120}
pt_n=${SOFTHCA_PERFTEST_N:-1000}
out=$(mktemp -d)
port=19800
mc=0
added_shca1=0
link_type=${SOFTHCA_RC_LINK_TYPE:-softhca}
ns=softhca-ns1 in_ns=0
cm_race=''
cm_kill_srv=''
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"

cleanup() {
	jobs -p | xargs -r kill -9 2>/dev/null
	[ "$in_ns" = 1 ] && shca1_home
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

# check_xend C S: rdma_xclient / rdma_xserver's last line.
check_xend() {
	grep -q '^rdma_xclient: end 0$' "$1" || return 1
	grep -q '^rdma_xserver: end 0$' "$2" || return 1
	echo "end 0"
}

# check_cmtime C S: the client's table has every step, each with its
# total in ms.
check_cmtime() {
	local step
	for step in "create id" "resolve addr" "resolve route" "create qp" \
		    connect disconnect destroy; do
		grep -Eq "^$step *: +[0-9.]+ " "$1" || { echo "no step $step"; return 1; }
	done
	grep -E '^connect *:' "$1" | tr -s ' '
}

# rcopy_row: rcopy's server (it serves until killed) on shca0, a client
# copying a 3 MB random file to it; the copy must equal the file.
rcopy_row() {
	local spid c
	port=$((port + 1))
	head -c 3000000 /dev/urandom >"$out/rcopy.src"
	rm -f "$out/rcopy.dst"
	timeout -k 5 "$tmo" rcopy -p "$port" >"$out/srv" 2>&1 &
	spid=$!
	server_ready "listen $port" || echo "# rcopy: server not ready"
	timeout -k 5 "$tmo" rcopy "$out/rcopy.src" "198.18.0.1:$out/rcopy.dst" \
		-p "$port" >"$out/cli" 2>&1
	c=$?
	# The server writes the file; its "done" comes after the client's.
	for _ in $(seq 100); do
		grep -q 'closing...done' "$out/srv" && break
		sleep 0.05
	done
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	if [ "$c" = 0 ] && cmp -s "$out/rcopy.src" "$out/rcopy.dst"; then
		ok "rcopy shca0: 3000000 bytes, the copy equals the file"
	else
		echo "# rcopy: client exit $c"
		sed 's/^/# client: /' "$out/cli" | tail -n 5
		sed 's/^/# server: /' "$out/srv" | tail -n 5
		nok "rcopy shca0: 3000000 bytes, the copy equals the file"
	fi
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
# A client that fails with $cm_race (a pattern, if set) in its output
# lost a race of the tool's own: both run again, up to three times.
# With $cm_kill_srv set, the server is killed once the client is done.
# tools.sh's checks of a client (check_lat, check_bw) get the server's
# output as an extra argument, which they ignore.
run_cm() {
	local name=$1 check=$2 ready=$3; shift 3
	local srv=() cli=() c s spid t0 t sum r try
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	for try in 1 2 3; do
		timeout -k 5 "$tmo" "${srv[@]}" >"$out/srv" 2>&1 &
		spid=$!
		server_ready "$ready" || echo "# $name: server not ready after 10 s ($ready)"
		t0=$(date +%s.%N)
		timeout -k 5 "$tmo" "${cli[@]}" >"$out/cli" 2>&1
		c=$?
		if [ "$c" != 0 ] && [ "$try" != 3 ] && [ -n "$cm_race" ] &&
		   grep -q "$cm_race" "$out/cli"; then
			echo "# $name: the client (exit $c) lost its tool's own race ($cm_race): again"
			kill "$spid"
			wait "$spid"
			continue
		fi
		# A server that serves until killed ($cm_kill_srv): ended here,
		# its status 0 if it was still up.
		if [ -n "$cm_kill_srv" ] && kill "$spid" 2>/dev/null; then
			wait "$spid"
			s=0
		else
			wait "$spid"
			s=$?
		fi
		break
	done
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

# ports_ready: g0 and g1 the RoCE v2 GIDs of 198.18.0.1 on shca0 and
# 198.18.0.2 on shca1 again, and both ports ACTIVE; 1 after 5 s without.
ports_ready() {
	for _ in $(seq 100); do
		g0=$(gid_index shca0 198.18.0.1) &&
			g1=$(gid_index shca1 198.18.0.2) &&
			[ "$(rdma link show | grep -cE '^link shca[01]/1 state ACTIVE ')" = 2 ] &&
			return 0
		sleep 0.05
	done
	rdma link show | sed 's/^/# /'
	return 1
}

# shca1_to_netns: veth1 into namespace $ns with 198.18.0.2, shca1 made
# again on it from there (a device whose netdev leaves its namespace is
# unregistered, by our driver as by rxe). 1 if a step fails.
shca1_to_netns() {
	[ "$added_shca1" = 1 ] || return 1	# never someone else's shca1
	rdma link del shca1 || return 1
	added_shca1=0 in_ns=1
	ip netns add "$ns" && ip link set veth1 netns "$ns" &&
		ip -n "$ns" addr add 198.18.0.2/24 dev veth1 &&
		ip -n "$ns" link set lo up && ip -n "$ns" link set veth1 up &&
		ip netns exec "$ns" rdma link add shca1 type "$link_type" netdev veth1 &&
		added_shca1=1 && ports_ready
}

# shca1_home: the reverse, so that the rest of this script and the next
# suites find veth1 and shca1 as scripts/vm-run and tools.sh made them.
shca1_home() {
	[ "$added_shca1" = 1 ] && rdma link del shca1
	added_shca1=0
	ip -n "$ns" link set veth1 netns $$ &&
		ip addr add 198.18.0.2/24 dev veth1 && ip link set veth1 up &&
		ip netns del "$ns" && in_ns=0 &&
		rdma link add shca1 type "$link_type" netdev veth1 &&
		added_shca1=1 && ports_ready
}

# crossed BYTES CHECK... C S: CHECK's verdict, provided shca0's tx_bytes
# and shca1's rx_bytes each grew by BYTES or more since tx0 and rx0 were
# taken (the client ran on shca0 and the server on shca1); else 1, also
# for a run CHECK would skip.
crossed() {
	local bytes=$1 sum r tx rx
	shift
	sum=$("$@")
	r=$?
	tx=$(( $(port_bytes shca0 tx_bytes) - tx0 ))
	rx=$(( $(port_bytes shca1 rx_bytes) - rx0 ))
	echo "${sum% }; shca0 sent $tx B, shca1 received $rx B"
	[ "$tx" -ge "$bytes" ] && [ "$rx" -ge "$bytes" ] || return 1
	return "$r"
}

# perftest_rows LABEL [SERVER-WRAP...]: ib_send_lat -R and ib_write_bw
# -R from $cd/$cg to $sd/$sg at $sa. With SERVER-WRAP (a command the
# servers run under), the bytes must also cross from shca0 to shca1.
# perftest's race: after the handshake on its control connection, its
# client sends the REQ of its test QPs at once, while its server only
# then binds and listens for it; a REQ that comes first is rejected by
# ib_cm (no listener for the service ID: REJECTED, error 8, as on any
# fabric), and perftest's client retries with the cm_ids it has just
# destroyed and crashes (SIGSEGV). Seen in 1 of 6 ib_write_bw runs here:
# run again (the crash's "traps:" line in the kernel log is a user
# process's fault: scripts/vm-run does not count it as the kernel's).
perftest_rows() {
	local label=$1 lat="check_lat 2 $pt_n" bw="check_bw 65536 $pt_n"
	local cm_race='RDMA_CM_EVENT_REJECTED; error: 8\.'
	shift
	if [ $# -gt 0 ]; then
		lat="crossed $((2 * pt_n)) $lat" bw="crossed $((65536 * pt_n)) $bw"
	fi
	port=$((port + 1))
	tx0=$(port_bytes shca0 tx_bytes) rx0=$(port_bytes shca1 rx_bytes)
	run_cm "ib_send_lat -R $label size 2 -n $pt_n" "$lat" "listen $port" \
		"$@" ib_send_lat -R -d "$sd" -x "$sg" -n "$pt_n" -F -p "$port" -- \
		ib_send_lat -R -d "$cd" -x "$cg" -n "$pt_n" -F -p "$port" "$sa"
	port=$((port + 1))
	tx0=$(port_bytes shca0 tx_bytes) rx0=$(port_bytes shca1 rx_bytes)
	run_cm "ib_write_bw -R $label size 65536 -n $pt_n" "$bw" "listen $port" \
		"$@" ib_write_bw -R -d "$sd" -x "$sg" -s 65536 -n "$pt_n" -F -p "$port" -- \
		ib_write_bw -R -d "$cd" -x "$cg" -s 65536 -n "$pt_n" -F -p "$port" "$sa"
}

echo "TAP version 13"

# shca0 <-> shca1 needs ARP between two local addresses (rc_pingpong.sh).
if [ "$(cat /proc/sys/net/ipv4/conf/all/accept_local)" != 1 ]; then
	echo "Bail out! net.ipv4.conf.all.accept_local is not 1 (scripts/vm-run sets it)"
	exit 1
fi

# SOFTHCA_RC_LINK_TYPE=rxe: the same over rdma_rxe, to check the script.
shca1_gids || exit 1

per_topo=8
# The GSI QPs (2), the tools on both topologies, perftest on both (2
# each), rcopy and the two rdma_xclient rows on shca0 (3), IPv6 (3),
# nothing left after the netns pair (1) and after all (1), the two kills
# (2).
echo "1..$((2 + 2 * per_topo + 2 * 2 + 3 + 3 + 1 + 1 + 2))"

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
	# rdma_client takes no source address: towards shca1 it runs with
	# the server in the netns, below.
	if [ "$label" = shca0 ]; then
		port=$((port + 1))
		run_cm "rdma_server/rdma_client $label" check_end "listen $port" \
			rdma_server -s "$sa" -p "$port" -- \
			rdma_client -s "$sa" -p "$port"
	fi
	# The sender sleeps 3 s after its join, so the receiver's join,
	# right after its bind, is done before the first datagram.
	run_cm "mckey $label -C 100 -S 1024" check_status "bound $sa" \
		mckey -m 239.18.0.$((++mc)) -b "$sa" -C 100 -S 1024 -- \
		mckey -m 239.18.0.$mc -b "$ca" -s -C 100 -S 1024
	port=$((port + 1))
	run_cm "rstream -T v $label 100 x 4096" "check_rstream 4096 100" "listen $port" \
		rstream -b "$sa" -p "$port" -T v -C 100 -S 4096 -- \
		rstream -s "$sa" "${rs_bind[@]}" -p "$port" -T v -C 100 -S 4096
	port=$((port + 1))
	run_cm "riostream -T v $label 100 x 4096" "check_rstream 4096 100" "listen $port" \
		riostream -b "$sa" -p "$port" -T v -C 100 -S 4096 -- \
		riostream -s "$sa" "${rs_bind[@]}" -p "$port" -T v -C 100 -S 4096
	port=$((port + 1))
	cm_kill_srv=1 run_cm "cmtime $label 50 connections" check_cmtime "listen $port" \
		cmtime -b "$sa" -p "$port" -c 50 -- \
		cmtime -s "$sa" -b "$ca" -p "$port" -c 50
	if [ "$label" = shca0 ]; then
		rcopy_row
		for x in r x; do
			if [ "$x" = x ] && [ "$link_type" != softhca ]; then
				ok "rdma_xserver/rdma_xclient -c x $label # SKIP rdma_rxe has no XRC"
				continue
			fi
			port=$((port + 1))
			run_cm "rdma_xserver/rdma_xclient -c $x $label" check_xend "listen $port" \
				rdma_xserver -p "$port" -c "$x" -- \
				rdma_xclient -s "$sa" -p "$port" -c "$x"
		done
	fi
	if [ "$label" = shca0 ]; then
		perftest_rows "$label"
	elif [ "$link_type" != softhca ]; then
		# rxe_net.c of 6.1: its UDP sockets and routes are init_net's.
		for row in "rdma_server/rdma_client" "ib_send_lat -R" "ib_write_bw -R" "after perftest -R"; do
			ok "$row $label (netns) # SKIP rdma_rxe works in init_net only"
		done
	elif shca1_to_netns; then
		# The GID indexes as ports_ready found them.
		sg=$g1 cg=$g0
		# rdma_client sends one 16-byte message and receives one.
		port=$((port + 1))
		tx0=$(port_bytes shca0 tx_bytes) rx0=$(port_bytes shca1 rx_bytes)
		run_cm "rdma_server/rdma_client $label (netns)" "crossed 16 check_end" \
			"listen $port" ip netns exec "$ns" rdma_server -s "$sa" -p "$port" -- \
			rdma_client -s "$sa" -p "$port"
		perftest_rows "$label (netns)" ip netns exec "$ns"
		# Before shca1 goes: the server's side is checked too.
		if only_ib_mad_left; then
			ok "after perftest -R $label (netns): no cm_id, only ib_mad's PD, CQ and GSI QP"
		else
			nok "after perftest -R $label (netns): no cm_id, only ib_mad's PD, CQ and GSI QP"
		fi
		shca1_home || echo "# veth1 and shca1 did not come home"
	else
		for row in "rdma_server/rdma_client" "ib_send_lat -R" "ib_write_bw -R" "after perftest -R"; do
			nok "$row $label (netns): shca1 on veth1 in $ns"
		done
		shca1_home
	fi
done

# rdma_cm over an IPv6 global address of veth0 (fd00::1, an IPv6 GID of
# shca0): rping, ucmatose, udaddy between two processes on shca0.
if ip -6 addr add fd00::1/64 dev veth0 nodad; then
	port=$((port + 1))
	run_cm "rping shca0 IPv6 -C 20 -S 100" "check_rping 20" "listen $port" \
		rping -s -a fd00::1 -p "$port" -C 20 -S 100 -V -v -- \
		rping -c -a fd00::1 -p "$port" -C 20 -S 100 -V -v
	port=$((port + 1))
	run_cm "ucmatose shca0 IPv6" check_status "listen $port" \
		ucmatose -b fd00::1 -p "$port" -- ucmatose -s fd00::1 -p "$port"
	run_cm "udaddy shca0 IPv6" check_status "listen 7174" \
		udaddy -b fd00::1 -- udaddy -s fd00::1
	ip -6 addr del fd00::1/64 dev veth0
else
	for row in rping ucmatose udaddy; do nok "$row shca0 IPv6: fd00::1 on veth0"; done
fi

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
