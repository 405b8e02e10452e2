#!/bin/bash
# TAP: RoCEv2 on the wire (Documentation/wire.md) between softhca and
# rdma_rxe, judged by rxe and by stock tools. The bed: network namespace
# "far" holds veth0 (198.18.0.1) and shca9 made there, rxe0 sits on veth1
# (198.18.0.2) in the initial namespace (where rdma_rxe's UDP 4791 socket
# is; ours is far's). Rows:
#  - ibv_ud_pingpong -c (it checks every byte after the GRH area), softhca
#    server / rxe client and the reverse, over the IPv4 GIDs at several
#    sizes up to the path MTU (1024 on the veths' 1500) and over the IPv6
#    link-local GIDs, each with shca9's wire counters and rxe0's
#    sent_pkts / rcvd_pkts grown by exactly the run's packets;
#  - a capture on veth1 (tcpdump) that tshark's InfiniBand dissector
#    decodes with no malformed packet, every packet UD SEND_ONLY (100)
#    with the DETH of the run;
#  - rping from shca9 to an rxe0 server: rdma_cm's address and route
#    resolution and the connection handshake (MADs over both GSI QPs)
#    reach ESTABLISHED on both sides (the RC data that follows needs the
#    wire's RC transport and is not looked at);
#  - tools/wire_fuzz: crafted packets into far during an ibv_ud_pingpong
#    between the same devices, which must still pass, and shca9's drop
#    counters (header, ICRC, unknown QPN, Q_Key, length, queue full)
#    grown by exactly what was sent, dmesg clean;
#  - multicast: mckey (rdma_cm's join, then ibv_attach_mcast) rxe0 ->
#    shca9 and shca9 -> rxe0, 100 datagrams each as IP multicast; while
#    shca9's QP is attached its HCA holds the IP group on veth0 too (2
#    users with rdma_cm's), and neither holds it after;
#  - the local devices' own rule: shca8 on veth1 moved into a second
#    namespace "near": between shca9 and shca8 no packet without
#    force_wire (the local fabric), every datagram a packet with it; a
#    group's datagrams reach shca8 once each either way (the fabric's
#    copy, or with force_wire the wire's).
# Everything is put back at the end, also on failure: veth0 home with
# 198.18.0.1 and shca0 on it again if it was there, rxe0 and the
# namespaces gone.
set -u
here=$(dirname "$0")
tmo=${SOFTHCA_PINGPONG_TIMEOUT:-300}
pp_n=${SOFTHCA_WIRE_N:-1000}
fuzz_n=${SOFTHCA_FUZZ_PACKETS:-3000}
out=$(mktemp -d)
port=19600
fuzz=$here/../build/tools/wire_fuzz
param=/sys/module/softhca/parameters
had_shca0=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"
# shellcheck source=selftests/lib/wire_bed.sh
. "$here/lib/wire_bed.sh"

trap 'wire_bed_restore; rm -rf "$out"' EXIT
stat() { wire_stat "$@"; }

# gid6 DEV: index of DEV's RoCE v2 link-local IPv6 GID.
gid6() {
	local f i
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		i=${f##*/}
		case $(cat "$f" 2>/dev/null) in
		fe80:*)
			[ "$(cat /sys/class/infiniband/"$1"/ports/1/gid_attrs/types/"$i" 2>/dev/null)" = "RoCE v2" ] &&
				echo "$i" && return 0 ;;
		esac
	done
	return 1
}

bed_up() {
	wire_bed_far && wire_bed_rxe || return 1
	for _ in $(seq 200); do
		g96=$(gid6 shca9) && gx6=$(gid6 rxe0) && return 0
		sleep 0.05
	done
	return 1
}

# counts DEV NS: "tx rx txbytes rxbytes" of a softhca port's wire.
counts() {
	echo "$(stat "$1" wire_tx_packets "$2") $(stat "$1" wire_rx_packets "$2")" \
	     "$(stat "$1" wire_tx_bytes "$2") $(stat "$1" wire_rx_bytes "$2")"
}

# pingpong LABEL SIZE N SRV_NS SRV_DEV SRV_GID CLI_NS CLI_DEV CLI_GID ADDR
# (NS "-": the initial namespace). 0 if both ends passed and the client
# printed the bytes and iterations asked for.
pingpong() {
	local label=$1 s=$2 iters=$3 sns=$4 sd=$5 sg=$6 cns=$7 cd=$8 cg=$9 addr=${10}
	local spre=() cpre=() c r srv
	[ "$sns" = - ] || spre=(ip netns exec "$sns")
	[ "$cns" = - ] || cpre=(ip netns exec "$cns")
	port=$((port + 1))
	timeout -k 5 "$tmo" "${spre[@]}" "${pp_tool:-ibv_ud_pingpong}" -d "$sd" -g "$sg" -s "$s" \
		-n "$iters" -c -p "$port" >"$out/srv" 2>&1 &
	srv=$!
	wait_port "$port" "$sns" || sleep 1
	timeout -k 5 "$tmo" "${cpre[@]}" "${pp_tool:-ibv_ud_pingpong}" -d "$cd" -g "$cg" -s "$s" \
		-n "$iters" -c -p "$port" "$addr" >"$out/cli" 2>&1
	c=$?
	wait "$srv"
	r=$?
	if [ "$c" = 0 ] && [ "$r" = 0 ] && sum=$(check_pingpong "$s" "$iters" "$out/cli"); then
		return 0
	fi
	echo "# $label: client exit $c, server exit $r"
	sed 's/^/# client: /' "$out/cli" | tail -n 10
	sed 's/^/# server: /' "$out/srv" | tail -n 10
	return 1
}

# wire_row LABEL SIZE N SRV_NS SRV_DEV SRV_GID CLI_NS CLI_DEV CLI_GID ADDR
# A pingpong between shca9 and rxe0, and both ports' packet counts grown
# by exactly N each way (UD SEND_ONLY: BTH + DETH + payload padded + ICRC).
wire_row() {
	local label=$1 s=$2 iters=$3 b0 b1 x0 x1 want
	read -r -a b0 <<<"$(counts shca9 far)"
	x0="$(stat rxe0 sent_pkts) $(stat rxe0 rcvd_pkts)"
	if ! pingpong "$@"; then
		nok "$label"
		return
	fi
	read -r -a b1 <<<"$(counts shca9 far)"
	read -r -a x0 <<<"$x0"
	x1=($(stat rxe0 sent_pkts) $(stat rxe0 rcvd_pkts))
	want=$(( iters * (12 + 8 + (s + 3) / 4 * 4 + 4) ))
	if [ $((b1[0] - b0[0])) = "$iters" ] && [ $((b1[1] - b0[1])) = "$iters" ] &&
	   [ $((b1[2] - b0[2])) = "$want" ] && [ $((b1[3] - b0[3])) = "$want" ] &&
	   [ $((x1[0] - x0[0])) = "$iters" ] && [ $((x1[1] - x0[1])) = "$iters" ]; then
		ok "$label # $sum; shca9 sent and took $iters packets ($want bytes) each way, rxe0 too"
	else
		echo "# shca9 wire tx/rx packets, tx/rx bytes before: ${b0[*]} after: ${b1[*]} (want +$iters, +$want)"
		echo "# rxe0 sent/rcvd before: ${x0[*]} after: ${x1[*]}"
		nok "$label"
	fi
}

# rc6_row LABEL SRV_NS SRV_DEV SRV_GID CLI_NS CLI_DEV CLI_GID ADDR: an
# ibv_rc_pingpong -c of 4 KiB over IPv6 GIDs (an RC QP's route is kept in
# its per-CPU cache, wire_pkt.c): 4 request packets a message each way.
rc6_row() {
	local label=$1 b0 b1; shift
	read -r -a b0 <<<"$(counts shca9 far)"
	if ! pp_tool=ibv_rc_pingpong pingpong "$label" 4096 "$pp_n" "$@"; then
		nok "$label"
		return
	fi
	read -r -a b1 <<<"$(counts shca9 far)"
	if [ $((b1[0] - b0[0])) -ge $((4 * pp_n)) ] && [ $((b1[1] - b0[1])) -ge $((4 * pp_n)) ]; then
		ok "$label # $sum; shca9 sent $((b1[0] - b0[0])), took $((b1[1] - b0[1])) packets"
	else
		nok "$label # shca9 sent $((b1[0] - b0[0])), took $((b1[1] - b0[1])) packets, want >= $((4 * pp_n)) each"
	fi
}

echo "TAP version 13"
for t in tcpdump tshark rping ibv_ud_pingpong; do
	command -v "$t" >/dev/null || { echo "1..0 # SKIP $t is not installed (scripts/deps)"; exit 0; }
done
[ -x "$fuzz" ] || { echo "1..0 # SKIP $fuzz is not built (make tools)"; exit 0; }
rdma dev show shca0 >/dev/null 2>&1 && had_shca0=1

sizes=(1 512 1000 1024)
echo "1..$((2 * ${#sizes[@]} + 4 + 13))"
if ! bed_up; then
	nok "the bed: veth0 and shca9 in netns far, rxe0 on veth1, their GIDs"
	rdma link show | sed 's/^/# /'
	exit 1
fi

for s in "${sizes[@]}"; do
	wire_row "ibv_ud_pingpong shca9 server, rxe0 client, size $s x $pp_n" \
		"$s" "$pp_n" far shca9 "$g9" - rxe0 "$gx" 198.18.0.1
	wire_row "ibv_ud_pingpong rxe0 server, shca9 client, size $s x $pp_n" \
		"$s" "$pp_n" - rxe0 "$gx" far shca9 "$g9" 198.18.0.2
done
wire_row "ibv_ud_pingpong over IPv6 link-local GIDs, shca9 server, size 256 x $pp_n" \
	256 "$pp_n" far shca9 "$g96" - rxe0 "$gx6" 198.18.0.1
wire_row "ibv_ud_pingpong over IPv6 link-local GIDs, rxe0 server, size 256 x $pp_n" \
	256 "$pp_n" - rxe0 "$gx6" far shca9 "$g96" 198.18.0.2
rc6_row "ibv_rc_pingpong over IPv6 link-local GIDs, shca9 server, 4 KiB x $pp_n" \
	far shca9 "$g96" - rxe0 "$gx6" 198.18.0.1
rc6_row "ibv_rc_pingpong over IPv6 link-local GIDs, rxe0 server, 4 KiB x $pp_n" \
	- rxe0 "$gx6" far shca9 "$g96" 198.18.0.2

# The capture: 100 round trips of 700 bytes, both directions on veth1.
tcpdump -i veth1 --immediate-mode -s 2048 -B 8192 -U -w "$out/cap.pcap" udp port 4791 2>"$out/td" &
tdp=$!
# tcpdump can take more than 5 s to start under TCG on a busy host (two
# rows saw no packet after a 5 s wait); "listening" also comes a little
# before the capture is sure to see packets, and the run of 100 round
# trips takes only tens of ms on a quiet host. --immediate-mode: without
# it packets wait in the capture ring's block until its 1 s timeout, and
# a tcpdump stopped before then wrote none of them ("200 packets received
# by filter, 0 captured", make check 2026-12-05); with it the ring has a
# frame per snapshot length, so -s 2048 -B 8192 give it 4096 frames (at
# the default 262144 it had 8: "46 packets dropped by kernel").
for _ in $(seq 600); do grep -q listening "$out/td" && break; sleep 0.05; done
sleep 1
pingpong capture 700 100 far shca9 "$g9" - rxe0 "$gx" 198.18.0.1
capok=$?
# Stopped once the 200 packets (each over 700 bytes) are in the file
# (-U: written as they come), or after 10 s.
for _ in $(seq 200); do
	# wc, not stat: this script's stat() is wire_stat.
	[ "$(wc -c <"$out/cap.pcap" 2>/dev/null || echo 0)" -ge 140000 ] && break
	sleep 0.05
done
sleep 0.2
kill -INT "$tdp"
wait "$tdp"
# Kept for a look (Documentation/wire.md "Capturing").
[ -n "${SOFTHCA_VM_OUT:-}" ] && cp "$out/cap.pcap" "$SOFTHCA_VM_OUT/wire.pcap"
# One tshark pass (it starts slowly under TCG): per packet the source,
# opcode, DETH source QPN and any malformed or expert warning mark.
tshark -r "$out/cap.pcap" -d udp.port==4791,infiniband -T fields -E separator=, \
	-e ip.src -e infiniband.bth.opcode -e infiniband.deth.srcqp \
	-e _ws.malformed -e _ws.expert.severity >"$out/cap.txt" 2>"$out/ts"
total=$(wc -l <"$out/cap.txt")
bad=$(awk -F, '$4 != "" || ($5 != "" && $5 >= 6291456)' "$out/cap.txt" | wc -l)
ops=$(cut -d, -f2 "$out/cap.txt" | sort -u | tr '\n' ' ')
qpns=$(awk -F, '$1 == "198.18.0.1" { print $3 }' "$out/cap.txt" | sort -u | wc -l)
if [ "$capok" = 0 ] && [ "$total" = 200 ] && [ "$bad" = 0 ] && [ "$ops" = "100 " ] &&
   [ "$qpns" = 1 ]; then
	ok "capture on veth1: 200 packets, tshark decodes all as RoCEv2 UD SEND_ONLY, none malformed"
else
	echo "# packets $total, malformed or warnings $bad, opcodes '$ops', shca9 source QPNs $qpns"
	head -3 "$out/cap.txt" | sed 's/^/# /'
	sed 's/^/# tcpdump: /' "$out/td" | tail -n 4
	sed 's/^/# tshark: /' "$out/ts" | tail -n 4
	nok "capture on veth1: 200 packets, tshark decodes all as RoCEv2 UD SEND_ONLY, none malformed"
fi

# rdma_cm across: resolution and the REQ / REP / RTU through both GSI QPs.
rping -s -a 198.18.0.2 -p 19690 -C 1 -v -d >"$out/rs" 2>&1 &
rsp=$!
for _ in $(seq 200); do rdma res show cm_id 2>/dev/null | grep -q LISTEN && break; sleep 0.05; done
timeout -k 5 60 ip netns exec far rping -c -a 198.18.0.2 -p 19690 -C 1 -v -d >"$out/rc" 2>&1
sleep 1
kill "$rsp" 2>/dev/null
wait "$rsp" 2>/dev/null
if grep -q 'RDMA_CM_EVENT_ROUTE_RESOLVED' "$out/rc" &&
   grep -q 'RDMA_CM_EVENT_ESTABLISHED' "$out/rc" &&
   grep -q 'RDMA_CM_EVENT_CONNECT_REQUEST' "$out/rs" &&
   grep -q 'RDMA_CM_EVENT_ESTABLISHED' "$out/rs"; then
	ok "rping shca9 -> rxe0: address, route, CONNECT_REQUEST and ESTABLISHED on both sides (MADs over the wire)"
else
	sed 's/^/# client: /' "$out/rc" | tail -n 15
	sed 's/^/# server: /' "$out/rs" | tail -n 15
	nok "rping shca9 -> rxe0: address, route, CONNECT_REQUEST and ESTABLISHED on both sides (MADs over the wire)"
fi

# The fuzzer during real traffic between the same devices.
names=(wire_rx_header_drops wire_rx_icrc_drops wire_rx_unknown_qpn_drops
	rx_qkey_drops rx_len_drops wire_rx_queue_full_drops)
snap() { local c; for c in "${names[@]}"; do stat shca9 "$c" far; done | tr '\n' ' '; }
read -r -a d0 <<<"$(snap)"
port=$((port + 1))
timeout -k 5 "$tmo" ip netns exec far ibv_ud_pingpong -d shca9 -g "$g9" -s 512 -n "$pp_n" -c \
	-p "$port" >"$out/srv" 2>&1 &
srv=$!
wait_port "$port" far || sleep 1
timeout -k 5 "$tmo" ibv_ud_pingpong -d rxe0 -g "$gx" -s 512 -n "$pp_n" -c -p "$port" \
	198.18.0.1 >"$out/cli" 2>&1 &
cli=$!
res=$("$fuzz" -s 198.18.0.2 -d 198.18.0.1 -n "$fuzz_n" ${SOFTHCA_FUZZ_SEED:+-S "$SOFTHCA_FUZZ_SEED"})
frc=$?
wait "$cli"; crc=$?
wait "$srv"; src=$?
echo "# wire_fuzz: $res"
if [ "$crc" = 0 ] && [ "$src" = 0 ] && check_pingpong 512 "$pp_n" "$out/cli" >/dev/null; then
	ok "ibv_ud_pingpong shca9 <-> rxe0 passes while wire_fuzz sends $fuzz_n crafted packets"
else
	sed 's/^/# client: /' "$out/cli" | tail -n 10
	nok "ibv_ud_pingpong shca9 <-> rxe0 passes while wire_fuzz sends $fuzz_n crafted packets"
fi
# The engine takes what was queued: the counters settle.
sleep 1
read -r -a d1 <<<"$(snap)"
v() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<" $res"; }
hi=$(( d1[0] - d0[0] + d1[1] - d0[1] ))
want_hi=$(( $(v random) + $(v truncated) + $(v bad_icrc) + $(v bad_opcode) + $(v bad_tver) ))
if [ "$frc" = 0 ] && [ "$hi" = "$want_hi" ] &&
   [ $((d1[1] - d0[1])) -ge "$(v bad_icrc)" ] &&
   [ $((d1[0] - d0[0])) -ge $(( $(v bad_opcode) + $(v bad_tver) )) ] &&
   [ $((d1[2] - d0[2])) = "$(v unknown_qpn)" ] &&
   [ $((d1[3] - d0[3])) = "$(v bad_qkey)" ] &&
   [ $((d1[4] - d0[4])) = "$(v oversize)" ] && [ $((d1[5] - d0[5])) = 0 ]; then
	ok "drop counters say why: header+ICRC $hi, unknown QPN $((d1[2] - d0[2])), Q_Key $((d1[3] - d0[3])), length $((d1[4] - d0[4]))"
else
	echo "# ${names[*]}"
	echo "# before: ${d0[*]}"
	echo "# after:  ${d1[*]} (header+ICRC want $want_hi)"
	nok "drop counters say why"
fi
# A flood against a receive queue of 2: what is not queued is counted full.
echo 2 >"$param/wire_rx_queue_len"
read -r -a d0 <<<"$(snap)"
res=$("$fuzz" -s 198.18.0.2 -d 198.18.0.1 -n 0 -f 5000)
sleep 1
read -r -a d1 <<<"$(snap)"
echo 1024 >"$param/wire_rx_queue_len"
q=$((d1[5] - d0[5])) u=$((d1[2] - d0[2]))
if [ $((q + u)) = 5000 ] && [ "$q" -gt 0 ]; then
	ok "flood of 5000 with wire_rx_queue_len 2: $q counted queue full, $u reached the engine (unknown QPN)"
elif [ $((q + u)) = 5000 ]; then
	ok "flood of 5000 with wire_rx_queue_len 2 # SKIP the engine kept up with all (unknown QPN $u)"
else
	echo "# queue full $q + unknown QPN $u != 5000"
	nok "flood of 5000 with wire_rx_queue_len 2: every packet counted once"
fi

# Multicast across: mckey joins through rdma_cm (which takes the IP group
# on the netdev itself), then librdmacm attaches the QP; the receiver's
# HCA then holds the group as well, until the QP leaves it.
# igmp_users NS GROUP_HEX: users of a group on veth0/veth1 (0: none).
igmp_users() {
	ip netns exec "$1" awk -v g="$2" '$1 == g { print $2; f = 1 } END { if (!f) print 0 }' \
		/proc/net/igmp
}
# mcast_row LABEL GROUP RECV_NS RECV_ADDR SEND_NS SEND_ADDR [IGMP_NS]
# (NS "-": the initial one): 100 x 512 B; with IGMP_NS, the receiver's
# group users there must be 2 while it runs and 0 after.
mcast_row() {
	local label=$1 grp=$2 rns=$3 raddr=$4 sns=$5 saddr=$6 ins=${7:-} rpre=() spre=()
	local hex r s u1=- u2=- t0 t1 o1 o2 o3 o4
	[ "$rns" = - ] || rpre=(ip netns exec "$rns")
	[ "$sns" = - ] || spre=(ip netns exec "$sns")
	# /proc/net/igmp prints the group as a host-order (x86) word.
	IFS=. read -r o1 o2 o3 o4 <<<"$grp"
	hex=$(printf '%02X%02X%02X%02X' "$o4" "$o3" "$o2" "$o1")
	t0=$(counts shca9 far)
	timeout -k 5 60 "${rpre[@]}" mckey -m "$grp" -b "$raddr" -C 100 -S 512 >"$out/mr" 2>&1 &
	r=$!
	# The sender waits 3 s after its join: the receiver has joined by then.
	for _ in $(seq 40); do grep -q "joined" "$out/mr" 2>/dev/null && break; sleep 0.05; done
	timeout -k 5 60 "${spre[@]}" mckey -m "$grp" -b "$saddr" -s -C 100 -S 512 >"$out/ms" 2>&1 &
	s=$!
	[ -n "$ins" ] && { sleep 1; u1=$(igmp_users "$ins" "$hex"); }
	wait "$s"; s=$?
	wait "$r"; r=$?
	[ -n "$ins" ] && u2=$(igmp_users "$ins" "$hex")
	t1=$(counts shca9 far)
	if [ "$r" = 0 ] && [ "$s" = 0 ] && grep -q '^return status 0$' "$out/mr" &&
	   grep -q '^return status 0$' "$out/ms" &&
	   { [ -z "$ins" ] || { [ "$u1" = 2 ] && [ "$u2" = 0 ]; }; }; then
		ok "$label # 100 x 512 B; shca9 wire tx/rx $(awk -v a="$t0" -v b="$t1" 'BEGIN { split(a, x); split(b, y); print y[1] - x[1] "/" y[2] - x[2] }'); IP group users $u1 then $u2"
	else
		echo "# receiver $r, sender $s; IP group users while attached $u1, after $u2"
		sed 's/^/# receiver: /' "$out/mr" | tail -n 4
		sed 's/^/# sender: /' "$out/ms" | tail -n 4
		nok "$label"
	fi
}
mcast_row "mckey rxe0 -> shca9: IP multicast across, shca9's HCA in the IP group while attached" \
	239.18.1.1 far 198.18.0.1 - 198.18.0.2 far
mcast_row "mckey shca9 -> rxe0: shca9 sends a group's datagrams as IP multicast out of veth0" \
	239.18.1.2 - 198.18.0.2 far 198.18.0.1

# Two softhca devices, each in its namespace: the local fabric between
# them, unless force_wire.
if wire_bed_near; then
	for fw in 0 1; do
		echo "$fw" >"$param/force_wire"
		read -r -a b0 <<<"$(counts shca9 far)"
		pingpong "force_wire=$fw" 512 "$pp_n" far shca9 "$g9" near shca8 "$g8" 198.18.0.1
		r=$?
		read -r -a b1 <<<"$(counts shca9 far)"
		tx=$((b1[0] - b0[0])) rx=$((b1[1] - b0[1]))
		want=0
		[ "$fw" = 1 ] && want=$pp_n
		if [ "$r" = 0 ] && [ "$tx" = "$want" ] && [ "$rx" = "$want" ]; then
			ok "shca9 (far) <-> shca8 (near), force_wire=$fw: pingpong passes, $tx packets each way on the wire"
		else
			echo "# pingpong $r, shca9 wire packets sent $tx, taken $rx (want $want)"
			nok "shca9 (far) <-> shca8 (near), force_wire=$fw"
		fi
		# A group's datagrams: the wire carries them either way (for
		# other hosts); shca8 takes each once, from the fabric without
		# force_wire (the wire's copy from a local device is dropped).
		# Taken or finding no receive: a second copy would be one or
		# the other.
		q0=$(($(wire_stat shca8 rx_requests near) + $(wire_stat shca8 out_of_buffer near)))
		mcast_row "mckey shca9 -> shca8, force_wire=$fw: each datagram received once" \
			239.18.1.$((3 + fw)) near 198.18.0.2 far 198.18.0.1
		q1=$(($(wire_stat shca8 rx_requests near) + $(wire_stat shca8 out_of_buffer near)))
		if [ $((q1 - q0)) -ge 100 ] && [ $((q1 - q0)) -lt 150 ]; then
			ok "shca8's datagrams during the mckey run, force_wire=$fw: $((q1 - q0)) (100 sent, no second copy)"
		else
			nok "shca8's datagrams during the mckey run, force_wire=$fw: $((q1 - q0)), want 100 and no second copy"
		fi
	done
	echo 0 >"$param/force_wire"
else
	for fw in 0 1; do
		nok "shca9 (far) <-> shca8 (near), force_wire=$fw: the bed"
		nok "mckey shca9 -> shca8, force_wire=$fw: the bed"
		nok "shca8's datagrams during the mckey run, force_wire=$fw: the bed"
	done
fi
exit $failed
