#!/bin/bash
# TAP: RDS over RDMA between two hosts on bed (b) (Documentation/rds.md,
# "Across two hosts"): selftests/lib/rds_check.py's server bound to
# 198.19.0.2 on guest b, its client bound to 198.19.0.1 on guest a, both
# asking for the IB transport, talk over RoCEv2 across the Ethernet
# segment of scripts/vm-pair: echoed messages of 1 B to 1 MiB, a burst in
# order, RDS's IB connection, 1 MiB RDMA WRITE and READ through the
# server's mapped MR, a write with an invalidated rkey refused, and
# messages again after RDS reconnected. rds_rdma makes its rdma_cm IDs in
# the initial namespace only, so softhca takes the wire there
# (SOFTHCA_BEDB_INIT_NET=1, set here: rdma_rxe unloaded while a softhca
# device holds UDP 4791).
#  - round 1: client on rxe0 (a), server on shca1 (b);
#  - round 2: client on shca0 (a): softhca on both hosts;
#  - round 3: server on rxe0 (b), client on shca0 (a).
# Each round: the client's rows, both ends exited 0, and both devices sent
# and took packets on the wire. Guest a prints the TAP rows; b's server
# reaches it through the files of selftests/bedb/lib.sh.
# Functions run through setup and check command lines.
# shellcheck disable=SC2317
set -u
here=$(dirname "$0")
export SOFTHCA_BEDB_INIT_NET=1
# shellcheck source=selftests/bedb/lib.sh
. "$here/lib.sh"
rds_check=$here/../lib/rds_check.py

# ulp_b R: the server of round R (b): up, then its exit status for a.
ulp_b() {
	local rc=0
	timeout 300 /usr/bin/python3 "$rds_check" server "$me" 18634 >"$out/srv.out" 2>&1 &
	for _ in $(seq 200); do
		grep -q listening "$out/srv.out" 2>/dev/null && break
		sleep 0.05
	done
	put "rds$1.up" 0
	wait $! || rc=$?
	put "rds$1.srv" "$rc $(tr '\n' ' ' <"$out/srv.out" | tail -c 300)"
}

# ulp_a R LABEL: the client's rows of round R (a).
ulp_a() {
	local line crc=0 srv
	wait_file "$D/b.rds$1.up" "$meet_tmo" || bail "no RDS server on b in round $1"
	timeout 300 /usr/bin/python3 "$rds_check" client "$me" 18635 "$peer" 18634 \
		>"$out/cli.out" 2>&1 || crc=$?
	while read -r line; do
		case $line in
		"ok "*) ok "$2: ${line#ok }" ;;
		"FAIL "*) nok "$2: ${line#FAIL }" ;;
		*) echo "# $line" ;;
		esac
	done <"$out/cli.out"
	wait_file "$D/b.rds$1.srv" "$meet_tmo" || bail "no end of the RDS server on b in round $1"
	srv=$(cat "$D/b.rds$1.srv")
	if [ "$crc" = 0 ] && [ "${srv%% *}" = 0 ]; then
		ok "$2: client and server exited 0"
	else
		nok "$2: client exit $crc, server: $srv"
	fi
}

ulp_rounds client server 'modprobe rds_rdma && make_rxe' \
	'modprobe rds_rdma && make_softhca shca1' 'rdma link del shca1 && make_rxe'
exit "$failed"
