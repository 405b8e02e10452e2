#!/bin/bash
# TAP: reliable connection over RoCEv2 (Documentation/wire.md "Reliable
# connection on the wire"), judged by rdma_rxe and stock tools. Bed (a):
# network namespace "far" holds veth0 (198.18.0.1) and shca9, rxe0 sits on
# veth1 (198.18.0.2) in the initial namespace. Rows, each way (softhca as
# server and as client):
#  - ibv_rc_pingpong -c (every byte checked) at 1 B, 4 KiB, 64 KiB, 1 MiB;
#  - rc_ops' cross_dev tests between shca9 and rxe0 (SOFTHCA_RC_CROSS):
#    every opcode, every byte and completion field, while tcpdump captures
#    veth1; tshark then decodes the capture with no malformed packet and
#    finds every RC opcode softhca sends;
#  - rc_errors' cross_dev tests both ways (RNR, remote access, timeouts);
#  - wire_rc_fuzz: requests forged from a raw socket with rxe0's addresses
#    at live shca9 RC and UC QPs (rkeys, bounds, PSNs, duplicates, other sources,
#    random requests): written only where an MR grants it, drops counted;
#  - the eight perftest tests (send/write/read/atomic, lat and bw);
#  - completion events: ibv_rc_pingpong -e -c 4 KiB and ib_send_lat -e;
#  - UC: ibv_uc_pingpong -c at 1 B and 4 KiB, ib_send_lat and ib_write_lat
#    -c UC;
#  - rping -v (rdma_cm's handshake, then RC SEND/READ/WRITE it verifies);
#  - jumbo frames: both veths at MTU 9000, ibv_rc_pingpong -c at path MTU
#    4096 both ways, shca9's packets 4 KiB of payload each;
#  - a path MTU above the link's: IP's refusals counted in wire_tx_drops.
# shca9's wire counters must grow in every row (wire_rc_softhca.sh has
# softhca on both ends). Everything is put back at the end, also on failure.
set -u
here=$(dirname "$0")
tmo=${SOFTHCA_PINGPONG_TIMEOUT:-300}
out=$(mktemp -d)
port=19700
bin=$here/../build/selftests
had_shca0=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"
# shellcheck source=selftests/lib/wire_bed.sh
. "$here/lib/wire_bed.sh"

trap 'wire_bed_restore; rm -rf "$out"' EXIT

echo "TAP version 13"
for t in tcpdump tshark rping ibv_rc_pingpong ib_send_lat; do
	command -v "$t" >/dev/null || { echo "1..0 # SKIP $t is not installed (scripts/deps)"; exit 0; }
done
rdma dev show shca0 >/dev/null 2>&1 && had_shca0=1
sizes=(1 4096 65536 1048576)
perf=(ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw)
uc_sizes=(1 4096)
uc_perf=(ib_send_lat ib_write_lat)
echo "1..$((2 * ${#sizes[@]} + 2 + 1 + 2 + 1 + 2 * ${#perf[@]} + 4 + 2 + 2 + 2 * ${#uc_sizes[@]} + 2 * ${#uc_perf[@]} + 2 + 1))"
if ! wire_bed_far || ! wire_bed_rxe; then
	nok "the bed: veth0 and shca9 in netns far, rxe0 on veth1, their GIDs"
	exit 1
fi

for s in "${sizes[@]}"; do
	it=200
	[ "$s" -ge 65536 ] && it=20
	xrun "ibv_rc_pingpong shca9 server, rxe0 client, $s B x $it" \
		"check_pingpong $s $it" far - 198.18.0.1 \
		ibv_rc_pingpong -d shca9 -g "$g9" -s "$s" -n "$it" -c -- \
		ibv_rc_pingpong -d rxe0 -g "$gx" -s "$s" -n "$it" -c
	xrun "ibv_rc_pingpong rxe0 server, shca9 client, $s B x $it" \
		"check_pingpong $s $it" - far 198.18.0.2 \
		ibv_rc_pingpong -d rxe0 -g "$gx" -s "$s" -n "$it" -c -- \
		ibv_rc_pingpong -d shca9 -g "$g9" -s "$s" -n "$it" -c
done

# Every opcode both ways, captured.
tcpdump -i veth1 --immediate-mode -s 2048 -B 8192 -U -w "$out/cap.pcap" udp port 4791 2>"$out/td" &
tdp=$!
# tcpdump may take more than 5 s to start under TCG on a busy host.
for _ in $(seq 600); do grep -q listening "$out/td" && break; sleep 0.05; done
wire_suite "rc_ops cross_dev: shca9 requester, rxe0 responder" "shca9 rxe0" rc_ops
wire_suite "rc_ops cross_dev: rxe0 requester, shca9 responder" "rxe0 shca9" rc_ops
sleep 0.5
kill -INT "$tdp"
wait "$tdp"
[ -n "${SOFTHCA_VM_OUT:-}" ] && cp "$out/cap.pcap" "$SOFTHCA_VM_OUT/wire_rc.pcap"
# Wireshark's heuristic RPC-over-RDMA dissector takes any short SEND for
# NFS/RDMA and calls it malformed: not ours to judge here.
tshark -r "$out/cap.pcap" -d udp.port==4791,infiniband --disable-protocol rpcordma \
	-T fields -E separator=, -e ip.src -e infiniband.bth.opcode -e _ws.malformed \
	>"$out/cap.txt" 2>/dev/null
bad=$(awk -F, '$3 != ""' "$out/cap.txt" | wc -l)
sent=$(awk -F, '$1 == "198.18.0.1" { print $2 }' "$out/cap.txt" | sort -nu | tr '\n' ' ')
# Every RC opcode softhca sends (IBTA Table 38): SEND and WRITE in all their
# positions, READ request and responses, ACK, both atomics, atomic ACK.
missing=
for op in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
	grep -qw "$op" <<<"$sent" || missing="$missing $op"
done
if [ "$bad" = 0 ] && [ -z "$missing" ] && [ "$(wc -l <"$out/cap.txt")" -gt 100 ]; then
	ok "capture: $(wc -l <"$out/cap.txt") packets, none malformed; shca9 sent every RC opcode 0..20"
else
	echo "# malformed $bad; opcodes from shca9: $sent; missing:$missing"
	nok "capture: tshark decodes every packet, shca9 sends every RC opcode"
fi

# Errors and RNR across the wire: rc_errors' cross_dev tests both ways.
# Tests of one end's own statuses skip when that end is rxe0 (its length
# and QP-rights NAKs, local errors and caps differ); RNR NAKs, their timer
# and retry count, remote access NAKs for MR rights, rkeys and bounds, and
# the ACK timeout are judged against rxe as they are between softhca ends.
wire_suite "rc_errors cross_dev: shca9 requester, rxe0 responder" "shca9 rxe0" rc_errors
wire_suite "rc_errors cross_dev: rxe0 requester, shca9 responder" "rxe0 shca9" rc_errors
# A hostile peer: packets forged with rxe0's addresses at a live shca9 QP.
wire_suite "wire_rc_fuzz: forged requests at live shca9 RC and UC QPs write only where an MR grants it" \
	"shca9 rxe0" wire_rc_fuzz

for t in "${perf[@]}"; do
	case $t in
	*_lat) chk="check_lat 64 200" args=(-s 64 -n 200) ;;
	*) chk="check_bw 65536 200" args=(-s 65536 -n 200) ;;
	esac
	[ "$t" = ib_atomic_lat ] && chk="check_lat 8 200" args=(-n 200)
	[ "$t" = ib_atomic_bw ] && chk="check_bw 8 200" args=(-n 200)
	# READs and atomics in flight: rxe offers 128, shca9 16; perftest
	# gives each QP its own side's, so both ask for what both take.
	case $t in ib_read_* | ib_atomic_*) args+=(-o 16) ;; esac
	xrun "$t shca9 server, rxe0 client" "$chk" far - 198.18.0.1 \
		"$t" -d shca9 -x "$g9" -F "${args[@]}" -- "$t" -d rxe0 -x "$gx" -F "${args[@]}"
	xrun "$t rxe0 server, shca9 client" "$chk" - far 198.18.0.2 \
		"$t" -d rxe0 -x "$gx" -F "${args[@]}" -- "$t" -d shca9 -x "$g9" -F "${args[@]}"
done

# Completion events across the wire: both ends sleep in ibv_get_cq_event,
# so every message waits for the completion channel (EQ, tasklet, uverbs
# event) of the end it reaches, and ib_send_lat -e checks each one.
xrun "ibv_rc_pingpong -e shca9 server, rxe0 client, 4096 B x 200" \
	"check_pingpong 4096 200" far - 198.18.0.1 \
	ibv_rc_pingpong -e -d shca9 -g "$g9" -s 4096 -n 200 -c -- \
	ibv_rc_pingpong -e -d rxe0 -g "$gx" -s 4096 -n 200 -c
xrun "ibv_rc_pingpong -e rxe0 server, shca9 client, 4096 B x 200" \
	"check_pingpong 4096 200" - far 198.18.0.2 \
	ibv_rc_pingpong -e -d rxe0 -g "$gx" -s 4096 -n 200 -c -- \
	ibv_rc_pingpong -e -d shca9 -g "$g9" -s 4096 -n 200 -c
xrun "ib_send_lat -e shca9 server, rxe0 client" "check_lat 64 200" far - 198.18.0.1 \
	ib_send_lat -e -d shca9 -x "$g9" -F -s 64 -n 200 -- ib_send_lat -e -d rxe0 -x "$gx" -F -s 64 -n 200
xrun "ib_send_lat -e rxe0 server, shca9 client" "check_lat 64 200" - far 198.18.0.2 \
	ib_send_lat -e -d rxe0 -x "$gx" -F -s 64 -n 200 -- ib_send_lat -e -d shca9 -x "$g9" -F -s 64 -n 200

# UC: its packets (no ACKs), judged by rxe's UC; ping-pong only, as a
# message that finds no receive posted is dropped, and a run that lost one
# would hang and fail.
for s in "${uc_sizes[@]}"; do
	xrun "ibv_uc_pingpong shca9 server, rxe0 client, $s B x 200" \
		"check_pingpong $s 200" far - 198.18.0.1 \
		ibv_uc_pingpong -d shca9 -g "$g9" -s "$s" -n 200 -c -- \
		ibv_uc_pingpong -d rxe0 -g "$gx" -s "$s" -n 200 -c
	xrun "ibv_uc_pingpong rxe0 server, shca9 client, $s B x 200" \
		"check_pingpong $s 200" - far 198.18.0.2 \
		ibv_uc_pingpong -d rxe0 -g "$gx" -s "$s" -n 200 -c -- \
		ibv_uc_pingpong -d shca9 -g "$g9" -s "$s" -n 200 -c
done
for t in "${uc_perf[@]}"; do
	a=(-c UC -F -s 64 -n 200)
	xrun "$t -c UC shca9 server, rxe0 client" "check_lat 64 200" far - 198.18.0.1 \
		"$t" -d shca9 -x "$g9" "${a[@]}" -- "$t" -d rxe0 -x "$gx" "${a[@]}"
	xrun "$t -c UC rxe0 server, shca9 client" "check_lat 64 200" - far 198.18.0.2 \
		"$t" -d rxe0 -x "$gx" "${a[@]}" -- "$t" -d shca9 -x "$g9" "${a[@]}"
done

rping_row "rping -v shca9 client -> rxe0 server" - far 198.18.0.2
rping_row "rping -v rxe0 client -> shca9 server" far - 198.18.0.1
# rdma_cm over IPv6 global addresses: the route, the GIDs and ib_cm's MADs
# (in GRHs of IPv6 GIDs) of fd00::1 (veth0, shca9) and fd00::2 (rxe0).
if ip -n far -6 addr add fd00::1/64 dev veth0 nodad &&
   ip -6 addr add fd00::2/64 dev veth1 nodad; then
	rping_row "rping -v over IPv6, shca9 client -> rxe0 server" - far fd00::2
	rping_row "rping -v over IPv6, rxe0 client -> shca9 server" far - fd00::1
else
	nok "rping -v over IPv6, shca9 client -> rxe0 server: fd00::1, fd00::2"
	nok "rping -v over IPv6, rxe0 client -> shca9 server: fd00::1, fd00::2"
fi
ip -6 addr del fd00::2/64 dev veth1 2>/dev/null

# Jumbo frames, as RoCE fabrics run: at MTU 9000 both devices' active MTU
# is 4096, and a 64 KiB message is 16 packets. check_jumbo: the pingpong's
# lines, and shca9's packets since the row began (jb0, jp0) 3 KiB or more
# each on average (its SENDs are 4 KiB packets; its ACKs are few).
# shellcheck disable=SC2317 # called by xrun, as its CHECK
check_jumbo() {
	local b p line
	line=$(check_pingpong 65536 20 "$1") || { echo "$line"; return 1; }
	b=$(($(wire_stat shca9 wire_tx_bytes far) - jb0))
	p=$(($(wire_stat shca9 wire_tx_packets far) - jp0))
	echo "$line; shca9 sent $b bytes in $p packets"
	[ "$p" -gt 0 ] && [ $((b / p)) -ge 3072 ]
}
ip -n far link set veth0 mtu 9000 && ip link set veth1 mtu 9000
for dir in shca9 rxe0; do
	jb0=$(wire_stat shca9 wire_tx_bytes far)
	jp0=$(wire_stat shca9 wire_tx_packets far)
	if [ "$dir" = shca9 ]; then
		xrun "ibv_rc_pingpong -m 4096 over MTU 9000, shca9 server, rxe0 client, 64 KiB x 20" \
			check_jumbo far - 198.18.0.1 \
			ibv_rc_pingpong -d shca9 -g "$g9" -m 4096 -s 65536 -n 20 -c -- \
			ibv_rc_pingpong -d rxe0 -g "$gx" -m 4096 -s 65536 -n 20 -c
	else
		xrun "ibv_rc_pingpong -m 4096 over MTU 9000, rxe0 server, shca9 client, 64 KiB x 20" \
			check_jumbo - far 198.18.0.2 \
			ibv_rc_pingpong -d rxe0 -g "$gx" -m 4096 -s 65536 -n 20 -c -- \
			ibv_rc_pingpong -d shca9 -g "$g9" -m 4096 -s 65536 -n 20 -c
	fi
done
ip -n far link set veth0 mtu 1500 && ip link set veth1 mtu 1500

# A path MTU above the link's (MODIFY_QP takes it, as rxe does): IP refuses
# each packet (DF), wire_tx_drops counts it, the SEND ends in RETRY_EXC_ERR.
ip -n far link set veth0 mtu 600
port=$((port + 1))
d0=$(wire_stat shca9 wire_tx_drops far)
p0=$(wire_stat shca9 wire_tx_packets far)
timeout -k 5 60 ibv_rc_pingpong -d rxe0 -g "$gx" -m 1024 -s 2048 -n 1 -p "$port" >"$out/srv" 2>&1 &
spid=$!
wait_port "$port" - || sleep 1
timeout -k 5 60 ip netns exec far ibv_rc_pingpong -d shca9 -g "$g9" -m 1024 -s 2048 -n 1 \
	-p "$port" 198.18.0.2 >"$out/cli" 2>&1
c=$?
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
d1=$(wire_stat shca9 wire_tx_drops far)
p1=$(wire_stat shca9 wire_tx_packets far)
ip -n far link set veth0 mtu 1500
ip -n far route flush cache
# The SEND, then a packet at least for each of the 7 retries (retry_cnt 7).
if [ "$c" != 0 ] && grep -q 'retry counter exceeded' "$out/cli" &&
   [ $((d1 - d0)) -ge 8 ] && [ $((p1 - p0)) -lt $((d1 - d0)) ]; then
	ok "path MTU 1024 over a 600-byte link: IP refused $((d1 - d0)) packets, all in wire_tx_drops; RETRY_EXC_ERR"
else
	echo "# client exit $c; wire_tx_drops +$((d1 - d0)), wire_tx_packets +$((p1 - p0))"
	sed 's/^/# client: /' "$out/cli" | tail -n 5
	nok "path MTU 1024 over a 600-byte link: IP's refusals in wire_tx_drops"
fi

exit "$failed"
