#!/bin/bash
# TAP: iSER between two hosts on bed (b) (Documentation/iser.md, "Across
# two hosts"): the kernel's LIO target with ib_isert on guest b exports a
# 32 MiB RAM disk on an iSER portal at 198.19.0.2:3260, open-iscsi's
# initiator with ib_iser on guest a logs in over RoCEv2 across the
# Ethernet segment of scripts/vm-pair and runs fio with crc32c
# verification (selftests/lib/fio.sh's verify_set). The kernel's RDMA
# users make their rdma_cm IDs in the initial namespace only, so softhca
# takes the wire there (SOFTHCA_BEDB_INIT_NET=1, set here: rdma_rxe
# unloaded while a softhca device holds UDP 4791).
#  - round 1: initiator on rxe0 (a), target on shca1 (b);
#  - round 2: initiator on shca0 (a): softhca on both hosts;
#  - round 3: target on rxe0 (b), initiator on shca0 (a).
# Each round: discovery and login; the session an iser one, its
# connection a QP of a's device, the LUN the RAM disk's size; five fio
# runs, each verified; logout, no session left; and both devices sent and
# took packets on the wire in the round. Guest a prints the TAP rows, b's
# steps reach it through the files of selftests/bedb/lib.sh.
# Functions run through setup and check command lines.
# shellcheck disable=SC2317
set -u
here=$(dirname "$0")
export SOFTHCA_BEDB_INIT_NET=1
# shellcheck source=selftests/bedb/lib.sh
. "$here/lib.sh"
# shellcheck source=selftests/lib/iser.sh
. "$here/../lib/iser.sh"
iqn=iqn.2026-12.io.softhca:bedb
initiator=iqn.2026-12.io.softhca:bedb-initiator
disk_bytes=$((32 * 1024 * 1024))

cleanup() {
	if [ "$role" = a ]; then
		iscsid_down
	else
		lio_target_down 2>/dev/null
	fi
	jobs -p | xargs -r kill -9 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT

# ulp_a R LABEL: the initiator's rows of round R (a); ulp_b: the target
# has nothing to do meanwhile (b).
ulp_a() {
	iser_login "$2" "$peer" "$dev" 1
	verify_set "$2" "$disk"
	iser_logout "$2" "$peer"
}
ulp_b() { :; }

ulp_rounds initiator target \
	'modprobe -a ib_iser sd_mod && iscsid_up "$initiator" && make_rxe' \
	'make_softhca shca1 && lio_target_up && lio_portal_add "$me"' \
	'lio_portal_del "$me" && rdma link del shca1 && make_rxe && lio_portal_add "$me"'
exit "$failed"
