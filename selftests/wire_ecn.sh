#!/bin/bash
# TAP: congestion on the wire, RoCEv2's ECN and CNP (Documentation/wire.md
# "Congestion"). shca9 in netns "far" on veth0, shca8 in "near" on veth1,
# force_wire. tc netem on veth0 marks 30 % of shca9's packets CE instead of
# dropping them (its "ecn"): the pingpong loses nothing, shca8 counts the
# marks and answers with CNPs (one per QP per 50 us at most), shca9 counts
# the CNPs it took; a capture on veth1 shows every data packet ECT(0), the
# CNPs (opcode 0x81) Not-ECT and as many as shca8 counted, and tshark finds
# nothing malformed. The same for UD datagrams (ibv_ud_pingpong): the CNPs
# go to the source QP of the DETH. With wire_ecn=0 the packets leave
# Not-ECT. Everything
# is put back at the end, also on failure.
set -u
here=$(dirname "$0")
tmo=${SOFTHCA_PINGPONG_TIMEOUT:-300}
out=$(mktemp -d)
port=20100
had_shca0=0
param=/sys/module/softhca/parameters/wire_ecn
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"
# shellcheck source=selftests/lib/wire_bed.sh
. "$here/lib/wire_bed.sh"

ecn_restore() {
	echo 1 >"$param"
	far tc qdisc del dev veth0 root 2>/dev/null
	wire_bed_restore
	rm -rf "$out"
}
trap ecn_restore EXIT

# cap_start FILE / cap_stop: tcpdump on veth1 in near.
cap_start() {
	ip netns exec near tcpdump -i veth1 --immediate-mode -s 128 -B 8192 -U -w "$1" udp port 4791 2>"$out/td" &
	tdp=$!
	for _ in $(seq 600); do grep -q listening "$out/td" && break; sleep 0.05; done
}
cap_stop() {
	sleep 0.5
	kill "$tdp" 2>/dev/null
	wait "$tdp" 2>/dev/null
}
# fields FILE: "source ECN opcode" per RoCEv2 packet.
fields() {
	tshark -r "$1" -d udp.port==4791,infiniband -T fields \
		-e ip.src -e ip.dsfield.ecn -e infiniband.bth.opcode 2>/dev/null
}
# delta COUNTER DEV NS BEFORE
delta() { echo $(($(wire_stat "$2" "$1" "$3") - $4)); }

echo "TAP version 13"
for t in tcpdump tshark tc ibv_rc_pingpong; do
	command -v "$t" >/dev/null || { echo "1..0 # SKIP $t is not installed (scripts/deps)"; exit 0; }
done
rdma dev show shca0 >/dev/null 2>&1 && had_shca0=1
echo "1..8"
if ! wire_bed_far || ! wire_bed_near || ! echo 1 >/sys/module/softhca/parameters/force_wire; then
	nok "the bed: shca9 in far, shca8 in near, force_wire"
	exit 1
fi

far tc qdisc add dev veth0 root netem loss 30% ecn
m0=$(wire_stat shca8 np_ecn_marked_roce_packets near)
c0=$(wire_stat shca8 np_cnp_sent near)
r0=$(wire_stat shca9 rp_cnp_ignored far)
t0=$(wire_stat shca9 wire_tx_packets far)
cap_start "$out/marked.pcap"
xpp "ibv_rc_pingpong 4 KiB x 200 shca8 server, shca9 client, 30 % of shca9's packets marked CE" \
	ibv_rc_pingpong 4096 200 near far 198.18.0.2 shca8 "$g8" shca9 "$g9"
cap_stop
marked=$(delta np_ecn_marked_roce_packets shca8 near "$m0")
cnps=$(delta np_cnp_sent shca8 near "$c0")
took=$(delta rp_cnp_ignored shca9 far "$r0")
sent=$(delta wire_tx_packets shca9 far "$t0")
# UD: each marked datagram's CNP goes to its source QP at its address.
m1=$(wire_stat shca8 np_ecn_marked_roce_packets near)
c1=$(wire_stat shca8 np_cnp_sent near)
r1=$(wire_stat shca9 rp_cnp_ignored far)
xpp "ibv_ud_pingpong 1000 B x 500 shca8 server, shca9 client, marked CE" \
	ibv_ud_pingpong 1000 500 near far 198.18.0.2 shca8 "$g8" shca9 "$g9"
ud_marked=$(delta np_ecn_marked_roce_packets shca8 near "$m1")
ud_cnps=$(delta np_cnp_sent shca8 near "$c1")
ud_took=$(delta rp_cnp_ignored shca9 far "$r1")
far tc qdisc del dev veth0 root
if [ "$ud_marked" -ge 50 ] && [ "$ud_cnps" -ge 1 ] && [ "$ud_cnps" -le "$ud_marked" ] &&
	[ "$ud_took" = "$ud_cnps" ]; then
	ok "UD: shca8 answered marked datagrams with CNPs to shca9's QP # $ud_marked marked, $ud_cnps CNPs sent, $ud_took taken"
else
	nok "UD: $ud_marked marked (want >= 50), $ud_cnps CNPs sent (want 1..$ud_marked), $ud_took taken (want $ud_cnps)"
fi
# 30 % of about 1,000 packets: far outside 15..50 % is not chance.
if [ $((marked * 100)) -ge $((sent * 15)) ] && [ $((marked * 100)) -le $((sent * 50)) ]; then
	ok "shca8 counted the CE marks # $marked of the $sent packets shca9 sent"
else
	nok "shca8 counted $marked CE marks of the $sent packets shca9 sent (want 15..50 %)"
fi
if [ "$cnps" -ge 1 ] && [ "$cnps" -le "$marked" ] && [ "$took" = "$cnps" ]; then
	ok "shca8 answered with CNPs, shca9 took them all # $cnps sent, $took taken"
else
	nok "CNPs: shca8 sent $cnps (want 1..$marked), shca9 took $took (want $cnps)"
fi
fields "$out/marked.pcap" >"$out/f"
cap_cnps=$(awk '$3 == 129' "$out/f" | wc -l)
bad_cnp=$(awk '$3 == 129 && ($1 != "198.18.0.2" || $2 != 0)' "$out/f" | wc -l)
bad_ect=$(awk '$3 != 129 && !(($1 == "198.18.0.2" && $2 == 2) || ($1 == "198.18.0.1" && ($2 == 2 || $2 == 3)))' "$out/f" | wc -l)
ce=$(awk '$1 == "198.18.0.1" && $2 == 3' "$out/f" | wc -l)
malformed=$(tshark -r "$out/marked.pcap" -d udp.port==4791,infiniband -Y '_ws.malformed' 2>/dev/null | wc -l)
if [ "$cap_cnps" = "$cnps" ] && [ "$bad_cnp" = 0 ] && [ "$bad_ect" = 0 ] && [ "$ce" -ge "$marked" ] &&
	[ "$malformed" = 0 ]; then
	ok "the capture: data ECT(0), $ce CE, $cap_cnps CNPs (0x81, Not-ECT, from shca8), nothing malformed"
else
	nok "the capture: $cap_cnps CNPs (want $cnps), $bad_cnp bad CNPs, $bad_ect packets neither ECT(0) nor CE, $ce CE (want >= $marked), $malformed malformed"
	sort "$out/f" | uniq -c | head -n 20 | sed 's/^/# /'
fi

# wire_ecn=0: nothing leaves ECN-capable.
echo 0 >"$param"
cap_start "$out/off.pcap"
xpp "ibv_rc_pingpong 4 KiB x 50 with wire_ecn=0" \
	ibv_rc_pingpong 4096 50 near far 198.18.0.2 shca8 "$g8" shca9 "$g9"
cap_stop
echo 1 >"$param"
fields "$out/off.pcap" >"$out/f"
pk=$(wc -l <"$out/f")
ect=$(awk '$2 != 0' "$out/f" | wc -l)
if [ "$pk" -ge 500 ] && [ "$ect" = 0 ]; then
	ok "wire_ecn=0: every packet Not-ECT # $pk packets"
else
	nok "wire_ecn=0: $ect of $pk packets ECN-capable (want 0 of at least 500)"
fi
