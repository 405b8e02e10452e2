#!/bin/bash
# TAP: RC over RoCEv2 with softhca on both ends (Documentation/wire.md
# "Reliable connection on the wire"): namespace "far" holds veth0
# (198.18.0.1) and shca9, namespace "near" veth1 (198.18.0.2) and shca8,
# and force_wire sends everything between them as packets. rc_ops,
# rc_errors, rc_threads, rc_stress, mkey_inv, mw and uc (UC's packets and
# drops; the suites make check runs on the local fabric) run between shca9
# and shca8 (SOFTHCA_RC_CROSS),
# softhca's own semantics judged on both ends; shca9's wire counters must
# grow in every row. Then: the responder coalesces ACKs (an 8 B
# ib_write_bw burst), completion events on both ends (ibv_rc_pingpong -e
# and ib_send_lat -e), UCX's ucx_perftest (UCP over RC with UD wire-up,
# and over UD alone), and rc_ops again with every post a wake-up call
# (engine_poll=0: the callers send and take the packets). Everything is put
# back at the end, also on failure.
set -u
here=$(dirname "$0")
out=$(mktemp -d)
bin=$here/../build/selftests
had_shca0=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"
# shellcheck source=selftests/lib/wire_bed.sh
. "$here/lib/wire_bed.sh"

trap 'echo 1 >/sys/module/softhca/parameters/engine_poll; wire_bed_restore; rm -rf "$out"' EXIT

suites=(rc_ops rc_errors rc_threads rc_stress mkey_inv mw uc)
echo "TAP version 13"
rdma dev show shca0 >/dev/null 2>&1 && had_shca0=1
ucx_rows=("rc_verbs,ud_verbs,self tag_lat 8 1000" "rc_verbs,ud_verbs,self tag_bw 1048576 20"
	"rc_verbs,ud_verbs,self ucp_get 65536 100" "ud_verbs,self tag_bw 65536 100")
echo "1..$((${#suites[@]} + 6 + ${#ucx_rows[@]}))"
if ! wire_bed_far || ! wire_bed_near || ! echo 1 >/sys/module/softhca/parameters/force_wire; then
	for b in "${suites[@]}" unknown_qpn; do nok "$b over the wire: the bed"; done
	exit 1
fi
# RC packets that reach no QP: both devices' unknown-QPN drops.
unknown_qpn() {
	echo $(($(wire_stat shca9 wire_rx_unknown_qpn_drops far) +
		$(wire_stat shca8 wire_rx_unknown_qpn_drops near)))
}

for b in "${suites[@]}"; do
	[ "$b" = rc_errors ] && u0=$(unknown_qpn)
	# mkey_inv and mw are short: a few dozen messages, many an error and
	# a reconnect.
	min=100
	case $b in mkey_inv | mw) min=10 ;; esac
	wire_suite "$b shca9 <-> shca8 over the wire (force_wire)" "shca9 shca8" \
		"$b" "$min"
	[ "$b" = rc_errors ] && u1=$(unknown_qpn)
done
# transport_retry_exceeded and route_to_destroyed_qp_times_out send at
# least a request and two retries each to a QP destroyed on the far end.

# ACK coalescing (Documentation/wire.md, "Reliable connection"): a burst of
# 8 B WRITEs asks for an ACK per message, the responder answers a batch
# with one ACK per 16 requests at most, so shca8 sends far fewer packets
# than it takes (one per request without coalescing).
tmo=120 port=18600 its=20000  # n is the TAP count
rx0=$(wire_stat shca8 wire_rx_packets near)
tx0=$(wire_stat shca8 wire_tx_packets near)
xrun "ib_write_bw 8 B x $its shca8 server, shca9 client" "check_bw 8 $its" near far 198.18.0.2 \
	ib_write_bw -d shca8 -x "$g8" -F -s 8 -n "$its" -- ib_write_bw -d shca9 -x "$g9" -F -s 8 -n "$its"
rx=$(($(wire_stat shca8 wire_rx_packets near) - rx0))
tx=$(($(wire_stat shca8 wire_tx_packets near) - tx0))
if [ "$rx" -ge "$its" ] && [ $((tx * 4)) -le "$rx" ]; then
	ok "the responder coalesced its ACKs # shca8 took $rx packets, sent $tx"
else
	nok "the responder coalesced its ACKs # shca8 took $rx packets (want >= $its), sent $tx (want <= 1/4 of them)"
fi

# Completion events on both ends of the wire: each message wakes the
# process it reaches through its CQ's EQ, tasklet and completion channel.
xrun "ibv_rc_pingpong -e -c 4096 B x 200 shca8 server, shca9 client" "check_pingpong 4096 200" \
	near far 198.18.0.2 \
	ibv_rc_pingpong -e -d shca8 -g "$g8" -s 4096 -n 200 -c -- \
	ibv_rc_pingpong -e -d shca9 -g "$g9" -s 4096 -n 200 -c
xrun "ib_send_lat -e shca8 server, shca9 client" "check_lat 64 200" near far 198.18.0.2 \
	ib_send_lat -e -d shca8 -x "$g8" -F -s 64 -n 200 -- ib_send_lat -e -d shca9 -x "$g9" -F -s 64 -n 200

# UCX across the wire (Documentation/hpc.md): its UD wire-up and RC data,
# then UD alone with UCX's own reliability, each UCX datagram's GRH area
# and packet type built from a packet that crossed the veth.
for r in "${ucx_rows[@]}"; do
	read -r tls t s its <<<"$r"
	xrun "ucx_perftest UCP $t $s B x $its, UCX_TLS=$tls, shca8 server, shca9 client" \
		"check_ucx_final $its" near far 198.18.0.2 \
		env UCX_TLS="$tls" UCX_NET_DEVICES=shca8:1 ucx_perftest -- \
		env UCX_TLS="$tls" UCX_NET_DEVICES=shca9:1 ucx_perftest -t "$t" -s "$s" \
		-n "$its" -w 10
done

# Every post through the wake-up call (the thread never polls): the
# callers send their wire QPs' packets and take the wire's receive queues
# themselves (wire.md, "Receive, a wake-up call").
p=/sys/module/softhca/parameters
w0=$(cat $p/engine_wakeups)
echo 0 >$p/engine_poll
wire_suite "rc_ops shca9 <-> shca8 over the wire, every post a wake-up call (engine_poll=0)" \
	"shca9 shca8" rc_ops 100
echo 1 >$p/engine_poll
w=$(($(cat $p/engine_wakeups) - w0))
if [ "$w" -ge 1000 ]; then
	ok "wake-up calls carried rc_ops over the wire # engine_wakeups +$w"
else
	nok "wake-up calls carried rc_ops over the wire # engine_wakeups +$w, want >= 1000"
fi

if [ $((u1 - u0)) -ge 6 ]; then
	ok "RC packets to destroyed QPs counted as wire_rx_unknown_qpn_drops # +$((u1 - u0)) during rc_errors"
else
	nok "RC packets to destroyed QPs counted as wire_rx_unknown_qpn_drops # +$((u1 - u0)) during rc_errors, want >= 6"
fi
exit "$failed"
