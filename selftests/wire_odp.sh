#!/bin/bash
# TAP: on-demand paging over RoCEv2 (Documentation/engine.md "On-demand
# paging"). A responder whose ODP pages are not there yet answers an RNR
# NAK (SEND, WRITE) or nothing (READ: the requester's timer asks again); a
# requester waits for its fault before it sends. Two beds:
# - softhca to softhca: shca9 in netns "far" (198.18.0.1), shca8 in "near"
#   (198.18.0.2), force_wire: ibv_rc_pingpong -o (ODP), -O (implicit) and
#   -O -P (prefetch), 64 KiB, each way; perftest --odp WRITE, READ, SEND.
#   Both devices must raise responder and requester page faults, and the
#   responders must have sent RNR NAKs for them.
# - softhca to rdma_rxe (rxe0 on veth1 in the initial namespace, which has
#   no ODP): ibv_rc_pingpong -o on shca9's side only, shca9 as server and
#   as client, and ib_write_bw / ib_read_bw --odp with shca9 the one whose
#   memory is ODP (the server's side of perftest registers the target).
#   shca9's page faults must grow.
# Then selftests/odp.c between shca9 and shca8 over the wire.
set -u
here=$(dirname "$0")
out=$(mktemp -d)
bin=$here/../build/selftests
tmo=${SOFTHCA_PINGPONG_TIMEOUT:-300}
port=20300
had_shca0=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"
# shellcheck source=selftests/lib/wire_bed.sh
. "$here/lib/wire_bed.sh"

trap 'wire_bed_restore; rm -rf "$out"' EXIT

# faults DEV NS: requester and responder page faults of DEV, summed.
faults() {
	echo $(($(wire_stat "$1" odp_faults_req "$2") +
		$(wire_stat "$1" odp_faults_resp "$2")))
}

echo "TAP version 13"
rdma dev show shca0 >/dev/null 2>&1 && had_shca0=1
echo "1..17"
for t in ibv_rc_pingpong ib_write_bw; do
	command -v "$t" >/dev/null || { echo "Bail out! $t not installed"; exit 1; }
done
if ! wire_bed_far || ! wire_bed_near ||
   ! echo 1 >/sys/module/softhca/parameters/force_wire; then
	nok "the bed: shca9 in netns far, shca8 in near, force_wire"
	exit 1
fi

r9=$(wire_stat shca9 odp_faults_resp far)
q9=$(wire_stat shca9 odp_faults_req far)
r8=$(wire_stat shca8 odp_faults_resp near)
q8=$(wire_stat shca8 odp_faults_req near)
n9=$(wire_stat shca9 rnr_naks_sent far)
n8=$(wire_stat shca8 rnr_naks_sent near)
for o in "-o" "-O" "-O -P"; do
	# shellcheck disable=SC2086 # $o is one or two options
	xrun "ibv_rc_pingpong $o 64 KiB x 50 shca9 server, shca8 client" \
		"check_pingpong 65536 50" far near 198.18.0.1 \
		ibv_rc_pingpong -d shca9 -g "$g9" -m 1024 $o -s 65536 -n 50 -- \
		ibv_rc_pingpong -d shca8 -g "$g8" -m 1024 $o -s 65536 -n 50
	# shellcheck disable=SC2086
	xrun "ibv_rc_pingpong $o 64 KiB x 50 shca8 server, shca9 client" \
		"check_pingpong 65536 50" near far 198.18.0.2 \
		ibv_rc_pingpong -d shca8 -g "$g8" -m 1024 $o -s 65536 -n 50 -- \
		ibv_rc_pingpong -d shca9 -g "$g9" -m 1024 $o -s 65536 -n 50
done
for p in ib_write_bw ib_read_bw ib_send_bw; do
	xrun "$p --odp 64 KiB shca9 server, shca8 client" \
		"check_bw 65536 200" far near 198.18.0.1 \
		"$p" -d shca9 -x "$g9" --odp -s 65536 -n 200 -m 1024 -F -- \
		"$p" -d shca8 -x "$g8" --odp -s 65536 -n 200 -m 1024 -F
done
dr9=$(($(wire_stat shca9 odp_faults_resp far) - r9))
dq9=$(($(wire_stat shca9 odp_faults_req far) - q9))
dr8=$(($(wire_stat shca8 odp_faults_resp near) - r8))
dq8=$(($(wire_stat shca8 odp_faults_req near) - q8))
dn9=$(($(wire_stat shca9 rnr_naks_sent far) - n9))
dn8=$(($(wire_stat shca8 rnr_naks_sent near) - n8))
if [ "$dr9" -gt 0 ] && [ "$dq9" -gt 0 ] && [ "$dr8" -gt 0 ] && [ "$dq8" -gt 0 ]; then
	ok "page faults on both: shca9 req +$dq9 resp +$dr9, shca8 req +$dq8 resp +$dr8"
else
	nok "page faults on both # shca9 req +$dq9 resp +$dr9, shca8 req +$dq8 resp +$dr8"
fi
# Every pingpong's first message lands in pages never touched: RNR NAKs.
if [ "$dn9" -gt 0 ] && [ "$dn8" -gt 0 ]; then
	ok "responders sent RNR NAKs for their faults: shca9 +$dn9, shca8 +$dn8"
else
	nok "responders sent RNR NAKs for their faults # shca9 +$dn9, shca8 +$dn8"
fi

SOFTHCA_ODP_WIRE=1 wire_suite "odp shca9 <-> shca8 over the wire (force_wire)" \
	"shca9 shca8" odp

# softhca to rdma_rxe: shca9 keeps far, rxe0 takes veth1 home.
echo 0 >/sys/module/softhca/parameters/force_wire
near rdma link del shca8
ip -n near link set veth1 netns $$
ip addr replace 198.18.0.2/24 dev veth1 && ip link set veth1 up
if ! wire_bed_rxe; then
	nok "the bed: rxe0 on veth1"
	exit 1
fi
f9=$(faults shca9 far)
xrun "ibv_rc_pingpong -o 64 KiB x 50 shca9 (ODP) server, rxe0 client" \
	"check_pingpong 65536 50" far - 198.18.0.1 \
	ibv_rc_pingpong -d shca9 -g "$g9" -m 1024 -o -s 65536 -n 50 -- \
	ibv_rc_pingpong -d rxe0 -g "$gx" -m 1024 -s 65536 -n 50
xrun "ibv_rc_pingpong -O 64 KiB x 50 rxe0 server, shca9 (implicit ODP) client" \
	"check_pingpong 65536 50" - far 198.18.0.2 \
	ibv_rc_pingpong -d rxe0 -g "$gx" -m 1024 -s 65536 -n 50 -- \
	ibv_rc_pingpong -d shca9 -g "$g9" -m 1024 -O -s 65536 -n 50
for p in ib_write_bw ib_read_bw; do
	xrun "$p 64 KiB shca9 (--odp) server, rxe0 client" \
		"check_bw 65536 200" far - 198.18.0.1 \
		"$p" -d shca9 -x "$g9" --odp -s 65536 -n 200 -m 1024 -F -- \
		"$p" -d rxe0 -x "$gx" -s 65536 -n 200 -m 1024 -F
done
d9=$(($(faults shca9 far) - f9))
if [ "$d9" -gt 0 ]; then
	ok "shca9 faulted its pages in against rxe0: +$d9 page faults"
else
	nok "shca9 faulted its pages in against rxe0 # +$d9 page faults"
fi
exit "${failed:-0}"
