#!/bin/bash
# TAP: XRC over RoCEv2 (Documentation/wire.md "XRC on the wire"), softhca
# on both ends, since rdma_rxe has no XRC: namespace "far" holds veth0
# (198.18.0.1) and shca9, namespace "near" veth1 (198.18.0.2) and shca8,
# and force_wire sends everything between them as packets.
# ibv_xsrq_pingpong each way (a message of 8 KiB is 8 packets at MTU 1024,
# every one naming its SRQ), perftest -c XRC SEND, WRITE, READ and both
# atomics, all captured on veth1: tshark must decode every packet (none
# malformed) and see every XRC opcode: shca8's requests (SEND and WRITE
# in every position, READ, both atomics, each with its XRCETH) and shca9's
# answers (READ responses in every position, ACK, atomic ACK). shca9's
# wire counters must grow in every row, and no XRC request may name a
# wrong SRQ (rx_xrc_srq_errors stays 0 on both). Then selftests/xrc.c
# between them (SOFTHCA_RC_CROSS="shca9 shca8": cross_dev has the
# initiator on shca9, the target and its SRQs on shca8; same_dev and the
# single-device tests run on shca9) with the same checks as on the local
# fabric, and its bad SRQs counted on the target's device only: 5 on
# shca9 (same_dev), 5 on shca8 (cross_dev), read with `rdma statistic` in
# each device's namespace.
set -u
here=$(dirname "$0")
out=$(mktemp -d)
bin=$here/../build/selftests
tmo=${SOFTHCA_PINGPONG_TIMEOUT:-300}
port=19900
had_shca0=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"
# shellcheck source=selftests/lib/wire_bed.sh
. "$here/lib/wire_bed.sh"

trap 'wire_bed_restore; rm -rf "$out"' EXIT

# Large messages for every position, small ones for the ONLY opcodes.
perf=("ib_send_bw 65536" "ib_write_bw 65536" "ib_read_bw 65536"
      "ib_send_lat 64" "ib_write_lat 64" "ib_read_lat 64"
      "ib_atomic_lat 8" "ib_atomic_bw 8")
echo "TAP version 13"
rdma dev show shca0 >/dev/null 2>&1 && had_shca0=1
echo "1..$((4 + ${#perf[@]} + 4))"
for t in tcpdump tshark ibv_xsrq_pingpong ib_send_bw; do
	command -v "$t" >/dev/null || { echo "Bail out! $t not installed"; exit 1; }
done
if ! wire_bed_far || ! wire_bed_near ||
   ! echo 1 >/sys/module/softhca/parameters/force_wire; then
	nok "the bed: shca9 in netns far, shca8 in near, force_wire"
	exit 1
fi

# Not through near(): the PID must be tcpdump's for the SIGINT below.
ip netns exec near tcpdump -i veth1 --immediate-mode -s 2048 -B 8192 -U -w "$out/cap.pcap" \
	udp port 4791 2>"$out/td" &
tdp=$!
for _ in $(seq 600); do grep -q listening "$out/td" && break; sleep 0.05; done

for s in 1 8192; do
	xrun "ibv_xsrq_pingpong shca9 server, shca8 client, $s B x 100" \
		check_xsrq far near 198.18.0.1 \
		ibv_xsrq_pingpong -d shca9 -g "$g9" -m 1024 -s "$s" -n 100 -- \
		ibv_xsrq_pingpong -d shca8 -g "$g8" -m 1024 -s "$s" -n 100
	xrun "ibv_xsrq_pingpong shca8 server, shca9 client, $s B x 100" \
		check_xsrq near far 198.18.0.2 \
		ibv_xsrq_pingpong -d shca8 -g "$g8" -m 1024 -s "$s" -n 100 -- \
		ibv_xsrq_pingpong -d shca9 -g "$g9" -m 1024 -s "$s" -n 100
done
for t in "${perf[@]}"; do
	read -r p s <<<"$t"
	args=(-c XRC -s "$s" -n 200 -m 1024 -F)
	chk="check_bw $s 200"
	case $p in *_lat) chk="check_lat $s 200" ;; esac
	[ "$p" = ib_atomic_bw ] && args+=(-A CMP_AND_SWAP)
	xrun "$p -c XRC ${args[*]:5} shca9 server, shca8 client, $s B" \
		"$chk" far near 198.18.0.1 \
		"$p" -d shca9 -x "$g9" "${args[@]}" -- \
		"$p" -d shca8 -x "$g8" "${args[@]}"
done

sleep 0.5
kill -INT "$tdp"
wait "$tdp"
[ -n "${SOFTHCA_VM_OUT:-}" ] && cp "$out/cap.pcap" "$SOFTHCA_VM_OUT/wire_xrc.pcap"
tshark -r "$out/cap.pcap" -d udp.port==4791,infiniband --disable-protocol rpcordma \
	-T fields -E separator=, -e ip.src -e infiniband.bth.opcode -e _ws.malformed \
	>"$out/cap.txt" 2>/dev/null
bad=$(awk -F, '$3 != ""' "$out/cap.txt" | wc -l)
from8=$(awk -F, '$1 == "198.18.0.2" { print $2 }' "$out/cap.txt" | sort -nu | tr '\n' ' ')
from9=$(awk -F, '$1 == "198.18.0.1" { print $2 }' "$out/cap.txt" | sort -nu | tr '\n' ' ')
missing=
# IBTA Annex A14: 0xa0.. SEND first/middle/last/only, WRITE first/middle/
# last/only, READ request, CmpSwap, FetchAdd from the requester (shca8 in
# the perftest rows); READ response first/middle/last/only, ACK, atomic
# ACK from the responder.
for op in 160 161 162 164 166 167 168 170 172 179 180; do
	grep -qw "$op" <<<"$from8" || missing="$missing shca8:$op"
done
for op in 173 174 175 176 177 178; do
	grep -qw "$op" <<<"$from9" || missing="$missing shca9:$op"
done
if [ "$bad" = 0 ] && [ -z "$missing" ] && [ "$(wc -l <"$out/cap.txt")" -gt 100 ]; then
	ok "capture: $(wc -l <"$out/cap.txt") packets, none malformed; every XRC opcode each way"
else
	echo "# malformed $bad; from shca8: $from8; from shca9: $from9; missing:$missing"
	nok "capture: tshark decodes every packet, every XRC opcode each way"
fi
e9=$(wire_stat shca9 rx_xrc_srq_errors far)
e8=$(wire_stat shca8 rx_xrc_srq_errors near)
if [ "$e9" = 0 ] && [ "$e8" = 0 ]; then
	ok "rx_xrc_srq_errors 0 on shca9 and shca8"
else
	nok "rx_xrc_srq_errors 0 on shca9 and shca8 # $e9 and $e8"
fi

# selftests/xrc.c across the wire; its bad_srq names 5 wrong SRQs per variant.
wire_suite "xrc shca9 <-> shca8 over the wire (force_wire)" "shca9 shca8" xrc
d9=$(($(wire_stat shca9 rx_xrc_srq_errors far) - e9))
d8=$(($(wire_stat shca8 rx_xrc_srq_errors near) - e8))
if [ "$d9" = 5 ] && [ "$d8" = 5 ]; then
	ok "xrc's bad SRQs counted on the target's device: shca9 +5 (same_dev), shca8 +5 (cross_dev)"
else
	nok "xrc's bad SRQs counted on the target's device # shca9 +$d9, shca8 +$d8, want +5 each"
fi
exit "$failed"
