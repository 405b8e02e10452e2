#!/bin/bash
# TAP: the wire in the initial network namespace (Documentation/wire.md,
# "The initial namespace"), as on a host whose NIC is in init_net. shca9
# sits in netns "far" on veth0 (198.18.0.1); shca7 is made on veth1
# (198.18.0.2) in the initial namespace:
#  - rdma_rxe loaded and wire_init_net set: UDP 4791 is rxe's, shca7 says
#    so and stays on the local fabric;
#  - rdma_rxe unloaded, wire_init_net 0 (the default): shca7 makes no
#    socket and says why;
#  - wire_init_net 1: shca7 holds UDP 4791 (IPv4 and IPv6) and talks to
#    shca9 across veth (force_wire: both are this host's devices, which
#    the local fabric would join otherwise): ibv_rc_pingpong -c and ibv_ud_pingpong -c both ways,
#    rping -v both ways (rdma_cm from init_net), shca7's wire counters grow;
#  - while shca7 holds the port, modprobe rdma_rxe fails; once shca7 is
#    gone the port is free and rdma_rxe loads again.
# Everything is put back at the end, also on failure (rdma_rxe loaded).
set -u
here=$(dirname "$0")
tmo=${SOFTHCA_PINGPONG_TIMEOUT:-300}
out=$(mktemp -d)
port=19900
had_shca0=0
param=/sys/module/softhca/parameters/wire_init_net
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"
# shellcheck source=selftests/lib/wire_bed.sh
. "$here/lib/wire_bed.sh"

init_net_restore() {
	echo 0 >"$param"
	rdma link del shca7 2>/dev/null
	grep -q '^rdma_rxe ' /proc/modules || modprobe rdma_rxe
	wire_bed_restore
	rm -rf "$out"
}
trap init_net_restore EXIT

# The UDP 4791 sockets of the initial namespace, one line each.
roce_socks() { ss -Huln 'sport = :4791' 2>/dev/null | wc -l; }

# shca7 on veth1 in the initial namespace, with its IPv4 GID; g7 set.
shca7_add() {
	rdma link add shca7 type softhca netdev veth1 || return 1
	for _ in $(seq 200); do
		g7=$(gid_index shca7 198.18.0.2) && return 0
		sleep 0.05
	done
	return 1
}

# A kernel line about shca7 since the mark $1 (a line count of dmesg).
said() { dmesg | tail -n +"$(($1 + 1))" | grep -q "softhca shca7: $2"; }

echo "TAP version 13"
for t in rping ibv_rc_pingpong ibv_ud_pingpong ss; do
	command -v "$t" >/dev/null || { echo "1..0 # SKIP $t is not installed (scripts/deps)"; exit 0; }
done
rdma dev show shca0 >/dev/null 2>&1 && had_shca0=1
echo "1..12"
if ! wire_bed_far || ! grep -q '^rdma_rxe ' /proc/modules; then
	nok "the bed: veth0 and shca9 in netns far, rdma_rxe loaded"
	exit 1
fi

# rdma_rxe holds the port: shca7 cannot take it, whatever the parameter.
echo 1 >"$param"
m=$(dmesg | wc -l)
if shca7_add && said "$m" "UDP port 4791 is taken" && rdma link del shca7; then
	ok "rdma_rxe loaded, wire_init_net 1: shca7 finds UDP 4791 taken, local fabric only"
else
	nok "rdma_rxe loaded, wire_init_net 1: shca7 did not say UDP 4791 is taken"
fi
if ! rmmod rdma_rxe || [ "$(roce_socks)" != 0 ]; then
	nok "rmmod rdma_rxe frees UDP 4791 # $(roce_socks) sockets left"
	exit 1
fi
ok "rmmod rdma_rxe frees UDP 4791"

echo 0 >"$param"
m=$(dmesg | wc -l)
if shca7_add && [ "$(roce_socks)" = 0 ] && said "$m" "no RoCEv2 wire in the initial" &&
	rdma link del shca7; then
	ok "wire_init_net 0: shca7 makes no socket in the initial namespace"
else
	nok "wire_init_net 0: shca7 made $(roce_socks) sockets or said nothing"
fi

echo 1 >"$param"
if shca7_add && [ "$(roce_socks)" = 2 ]; then
	ok "wire_init_net 1: shca7 holds UDP 4791, IPv4 and IPv6"
else
	nok "wire_init_net 1: $(roce_socks) sockets on UDP 4791 (want 2)"
	exit 1
fi

echo 1 >/sys/module/softhca/parameters/force_wire
rx0=$(wire_stat shca7 wire_rx_packets)
xpp "ibv_rc_pingpong shca9 server, shca7 (init_net) client, 4096 B x 200" \
	ibv_rc_pingpong 4096 200 far - 198.18.0.1 shca9 "$g9" shca7 "$g7"
xpp "ibv_rc_pingpong shca7 (init_net) server, shca9 client, 65536 B x 20" \
	ibv_rc_pingpong 65536 20 - far 198.18.0.2 shca7 "$g7" shca9 "$g9"
xpp "ibv_ud_pingpong shca7 (init_net) server, shca9 client, 1000 B x 200" \
	ibv_ud_pingpong 1000 200 - far 198.18.0.2 shca7 "$g7" shca9 "$g9"
rping_row "rping -v shca9 client -> shca7 (init_net) server" - far 198.18.0.2
rping_row "rping -v shca7 (init_net) client -> shca9 server" far - 198.18.0.1
rx=$(($(wire_stat shca7 wire_rx_packets) - rx0))
# At least a packet per pingpong message taken: 200 + 20 x 16 + 200.
if [ "$rx" -ge 720 ]; then
	ok "shca7 took the wire's packets in the initial namespace # $rx"
else
	nok "shca7 took $rx wire packets (want >= 720)"
fi

if modprobe rdma_rxe 2>"$out/mp"; then
	nok "modprobe rdma_rxe loaded while shca7 holds UDP 4791"
	rmmod rdma_rxe
else
	ok "modprobe rdma_rxe fails while shca7 holds UDP 4791 # $(head -n 1 "$out/mp")"
fi
if rdma link del shca7 && [ "$(roce_socks)" = 0 ] && modprobe rdma_rxe &&
	[ "$(roce_socks)" = 2 ]; then
	ok "shca7 gone: UDP 4791 free, rdma_rxe loads and takes it"
else
	nok "shca7 gone: rdma_rxe did not load or take UDP 4791 ($(roce_socks) sockets)"
fi
