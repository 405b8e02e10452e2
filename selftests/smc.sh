#!/bin/bash
# TAP: SMC-R, the kernel's Shared Memory Communications over RDMA (the smc
# module, AF_SMC stream sockets), on softhca unmodified (Documentation/
# smc.md), driven by selftests/lib/smc_check.py. SMC-R version 2 (RoCE v2)
# is proposed only with a user EID, which smc_check.py adds over generic
# netlink. SMC looks for the RoCE device of the netdev the TCP handshake
# leaves on, so the two ends sit in two network namespaces (a connection
# between two addresses of one namespace leaves on lo and falls back to
# TCP). Per pair, four connections at once each carry 4 MiB each way,
# every byte checked through SHA-256, and both devices' port counters must
# have carried the 16 MiB (TCP would not touch them), on SMC's RC QPs:
#  - shca0 (initial namespace) to shca8 (netns near): the local fabric;
#  - shca9 (netns far) to shca8 with force_wire: RoCEv2 on the wire,
#    shca9's wire_tx_bytes grown by the 16 MiB as well.
# Last, rmmod smc takes its link groups down: no RC QP left on shca8 or
# shca9. vm-run fails the run on any kernel warning.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
port=0 tmo=60
had_shca0=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"
# shellcheck source=selftests/lib/wire_bed.sh
. "$here/lib/wire_bed.sh"
smc_check=$here/lib/smc_check.py

# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
	wire_bed_restore
	grep -q '^smc ' /proc/modules && rmmod smc
	rm -rf "$out"
}
trap cleanup EXIT

in_ns() { # NS CMD...: CMD in NS ("-": the initial one)
	local ns=$1
	shift
	if [ "$ns" = - ]; then "$@"; else ip netns exec "$ns" "$@"; fi
}
stat_of() { # DEV COUNTER NS
	wire_stat "$1" "$2" "${3#-}"
}
smc_qps() { # DEV NS: RC QPs of SMC's link groups on DEV
	in_ns "$2" rdma res show qp | grep "link $1/" | grep "type RC" | grep -c "comm \[smc\]"
}

# smc_pair LABEL CLI_NS CDEV SRV_NS SDEV PORT: smc_check.py's server on
# 198.18.0.2 in SRV_NS, its client on 198.18.0.1 in CLI_NS; the rows.
mib=4 conns=4
smc_pair() {
	local l=$1 cns=$2 cdev=$3 sns=$4 sdev=$5 p=$6 srv crc=0 rc=0 line c0 s0 c1 s1
	c0=$(stat_of "$cdev" tx_bytes "$cns") s0=$(stat_of "$sdev" tx_bytes "$sns")
	in_ns "$sns" timeout 120 /usr/bin/python3 "$smc_check" server 198.18.0.2 "$p" \
		"$conns" >"$out/srv.out" 2>&1 &
	srv=$!
	for _ in $(seq 100); do
		grep -q listening "$out/srv.out" 2>/dev/null && break
		sleep 0.05
	done
	in_ns "$cns" timeout 120 /usr/bin/python3 "$smc_check" client 198.18.0.1 \
		198.18.0.2 "$p" $((mib << 20)) "$conns" >"$out/cli.out" 2>&1 || crc=$?
	wait "$srv" || rc=$?
	while read -r line; do
		case $line in
		*" ok: "*) ok "$l: ${line%% ok:*} ${line#* ok: }, digests match" ;;
		*" FAIL: "*) nok "$l: $line" ;;
		*) echo "# $line" ;;
		esac
	done <"$out/cli.out"
	if [ "$crc" = 0 ] && [ "$rc" = 0 ]; then
		ok "$l: client and server exited 0"
	else
		sed 's/^/# server: /' "$out/srv.out"
		nok "$l: client exit $crc, server exit $rc"
	fi
	c1=$(stat_of "$cdev" tx_bytes "$cns") s1=$(stat_of "$sdev" tx_bytes "$sns")
	check "$l: SMC-R, not TCP: $cdev and $sdev each sent the $((mib * conns)) MiB" eval \
		"echo \"$cdev sent $((c1 - c0)) B, $sdev $((s1 - s0)) B\";
		 [ $((c1 - c0)) -ge $((mib * conns << 20)) ] && [ $((s1 - s0)) -ge $((mib * conns << 20)) ]"
	check "$l: the link group is RC QPs of SMC on $cdev and $sdev" eval \
		"[ \$(smc_qps $cdev $cns) -ge 1 ] && [ \$(smc_qps $sdev $sns) -ge 1 ]"
}

echo "TAP version 13"
rdma dev show shca0 >/dev/null 2>&1 && had_shca0=1
check "modprobe smc, a user EID (SMC-R v2)" eval \
	"modprobe smc && /usr/bin/python3 $smc_check ueid SOFTHCA-SMC-TEST"
check "veth1 into netns near with shca8" wire_bed_near
smc_pair "shca0 -> shca8" - shca0 near shca8 12345

check "veth0 into netns far with shca9, force_wire" eval \
	'wire_bed_far && echo 1 >/sys/module/softhca/parameters/force_wire'
w0=$(stat_of shca9 wire_tx_bytes far)
smc_pair "shca9 -> shca8 over the wire" far shca9 near shca8 12346
w1=$(stat_of shca9 wire_tx_bytes far)
check "shca9 -> shca8 over the wire: shca9's wire_tx_bytes grew by the $((mib * conns)) MiB" eval \
	"echo $((w1 - w0)) B; [ $((w1 - w0)) -ge $((mib * conns << 20)) ]"

check "rmmod smc" rmmod smc
check "no RC QP of SMC left on shca8 or shca9" eval \
	'[ "$(smc_qps shca8 near)" = 0 ] && [ "$(smc_qps shca9 far)" = 0 ]'
echo "1..$n"
exit $failed
