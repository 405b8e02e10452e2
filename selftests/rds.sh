#!/bin/bash
# TAP: Reliable Datagram Sockets over RDMA on softhca, the kernel's own
# rds_rdma unmodified (Documentation/rds.md), driven from AF_RDS sockets
# by selftests/lib/rds_check.py: a server bound to 198.18.0.2 (shca1 on
# veth1, created here) and a client bound to 198.18.0.1 (shca0), both
# asking for the IB transport. The client's checks, one row each: messages
# of 1 B to 1 MiB echoed and compared; 256 in flight answered in order; RDS
# lists an IB connection between the two addresses; a 1 MiB RDMA WRITE into
# and a 1 MiB RDMA READ of an MR the server maps with its answer (RDS's
# fast registration, zero-based), both notified SUCCESS and compared; an
# RDMA WRITE with the cookie of an MR the server freed and invalidated,
# refused as a remote access error (notification REMOTE_ERROR, no byte of
# the server's buffer changed); messages again after RDS reconnected. Then:
# both ends exited 0, the connection is RC QPs on shca0 and shca1, each
# port sent what the checks moved, shca0 counted exactly one CQE with a
# remote access error. The same checks run first over rdma_rxe (rxe0 on
# veth0, rxe1 on veth1, shca0 away meanwhile) as the comparison point.
# Last, rmmod rds_rdma and rds, and no RC QP left on shca0 or shca1;
# vm-run fails the run on any kernel warning.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
port=0 tmo=60
added_shca1=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"

# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
	jobs -p | xargs -r kill -9 2>/dev/null
	rdma link del rxe0 2>/dev/null
	rdma link del rxe1 2>/dev/null
	rdma dev show shca0 >/dev/null 2>&1 || rdma link add shca0 type softhca netdev veth0
	[ "$added_shca1" = 1 ] && rdma link del shca1 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT

port_counter() { # DEV COUNTER
	rdma statistic show link "$1/1" |
		awk -v c="$2" '{ for (i = 1; i < NF; i++) if ($i == c) print $(i + 1) }'
}

# rds_pair LABEL: rds_check.py's server on 198.18.0.2 and client on
# 198.18.0.1; one row per client check, then both exit codes.
rds_pair() {
	local l=$1 srv cli line rc
	timeout 120 /usr/bin/python3 "$here/lib/rds_check.py" server 198.18.0.2 18634 \
		>"$out/srv.out" 2>&1 &
	srv=$!
	for _ in $(seq 100); do
		grep -q listening "$out/srv.out" 2>/dev/null && break
		sleep 0.05
	done
	timeout 120 /usr/bin/python3 "$here/lib/rds_check.py" client 198.18.0.1 18635 \
		198.18.0.2 18634 >"$out/cli.out" 2>&1
	cli=$?
	while read -r line; do
		case $line in
		"ok "*) ok "$l: ${line#ok }" ;;
		"FAIL "*) nok "$l: ${line#FAIL }" ;;
		*) echo "# $line" ;;
		esac
	done <"$out/cli.out"
	rc=0
	wait "$srv" || rc=$?
	if [ "$cli" = 0 ] && [ "$rc" = 0 ]; then
		ok "$l: client and server exited 0"
	else
		sed 's/^/# server: /' "$out/srv.out"
		nok "$l: client exit $cli, server exit $rc"
	fi
}

# grew LABEL DEV COUNTER BEFORE MIN [MAX]: COUNTER of DEV grew by MIN..MAX.
grew() {
	local d
	d=$(($(port_counter "$2" "$3") - $4))
	if [ "$d" -ge "$5" ] && [ "$d" -le "${6:-$d}" ]; then
		ok "$1: $2's $3 grew by $d"
	else
		nok "$1: $2's $3 grew by $d, not ${5}..${6:-}"
	fi
}

echo "TAP version 13"
check "modprobe rds_rdma" modprobe rds_rdma

# --- rdma_rxe first, the comparison point: rxe0 and rxe1 in place of
# shca0 (one RDMA device per address, or rdma_cm's choice is the first
# that matches).
check "shca0 away, rxe0 on veth0 and rxe1 on veth1" eval '
	rdma link del shca0 && rdma link add rxe0 type rxe netdev veth0 &&
	rdma link add rxe1 type rxe netdev veth1 && sleep 1'
rds_pair "rxe0 -> rxe1"
check "rxe0 and rxe1 deleted, shca0 back on veth0" eval '
	rdma link del rxe0 && rdma link del rxe1 &&
	rdma link add shca0 type softhca netdev veth0 && sleep 0.5 &&
	gid_index shca0 198.18.0.1'

# --- softhca: shca0 to shca1.
shca1_gids || exit 1
tx0=$(port_counter shca0 tx_bytes) tx1=$(port_counter shca1 tx_bytes)
acc0=$(port_counter shca0 cqe_rem_access_err)
rds_pair "shca0 -> shca1"
check "shca0 -> shca1: the RDS connection is RC QPs on shca0 and shca1" eval \
	'rdma res show qp | grep "link shca0/" | grep -q "type RC" &&
	 rdma res show qp | grep "link shca1/" | grep -q "type RC"'
# Each end sent 4 MiB of echoes and one of the two MiB of RDMA.
grew "shca0 -> shca1" shca0 tx_bytes "$tx0" $((5 << 20))
grew "shca0 -> shca1" shca1 tx_bytes "$tx1" $((5 << 20))
grew "shca0 -> shca1" shca0 cqe_rem_access_err "$acc0" 1 1

check "rmmod rds_rdma rds" rmmod rds_rdma rds
check "no RC QP left on shca0 or shca1" eval \
	'! rdma res show qp | grep -E "link shca[01]/" | grep -q "type RC"'
echo "1..$n"
exit $failed
