#!/bin/bash
# TAP: SRP between two hosts on bed (b) (Documentation/srp.md, "Across two
# hosts"): the kernel's LIO target with ib_srpt on guest b exports a 32 MiB
# RAM disk and listens on rdma_cm port 5555 of 198.19.0.2; the kernel's
# ib_srp on guest a logs in over RoCEv2 across the Ethernet segment of
# scripts/vm-pair and runs fio with crc32c verification
# (selftests/lib/fio.sh's verify_set). The kernel's RDMA users make their
# rdma_cm IDs in the initial namespace only, so softhca takes the wire
# there (SOFTHCA_BEDB_INIT_NET=1, set here: rdma_rxe unloaded while a
# softhca device holds UDP 4791).
#  - round 1: initiator on rxe0 (a), target on shca1 (b);
#  - round 2: initiator on shca0 (a): softhca on both hosts;
#  - round 3: target on rxe0 (b), initiator on shca0 (a).
# Each round: add_target with b's SRP target port ID (ib_srpt's service
# GUID, which b hands a in a file); the remote port running, its channels
# QPs of a's device, the LUN the RAM disk's size; five fio runs, each
# verified; the remote port deleted and no RC QP left on a's device; and
# both devices sent and took packets on the wire in the round. Guest a
# prints the TAP rows, b's steps reach it through the files of
# selftests/bedb/lib.sh.
# Functions run through setup and check command lines.
# shellcheck disable=SC2317
set -u
here=$(dirname "$0")
export SOFTHCA_BEDB_INIT_NET=1
# shellcheck source=selftests/bedb/lib.sh
. "$here/lib.sh"
# shellcheck source=selftests/lib/srp.sh
. "$here/../lib/srp.sh"
disk_bytes=$((32 * 1024 * 1024))

cleanup() {
	local r
	if [ "$role" = a ]; then
		for r in /sys/class/srp_remote_ports/*; do
			[ -e "$r/delete" ] && echo 1 >"$r/delete"
		done
	else
		srpt_down 2>/dev/null
	fi
	jobs -p | xargs -r kill -9 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT

# target_up: ib_srpt on b's device, its service GUID for a.
target_up() {
	srpt_up && srpt_port_add "$dev" "$me" &&
		put srpt_guid "$(cat /sys/module/ib_srpt/parameters/srpt_service_guid)"
}

# ulp_a R LABEL: the initiator's rows of round R (a); ulp_b: the target
# has nothing to do meanwhile (b).
ulp_a() {
	srp_login "$2" "$dev" "$peer" "$(cat "$D/b.srpt_guid")" 1
	verify_set "$2" "$disk"
	srp_logout "$2" "$dev"
}
ulp_b() { :; }

ulp_rounds initiator target \
	'modprobe -a ib_srp sd_mod && make_rxe' \
	'make_softhca shca1 && target_up' \
	'srpt_port_del shca1 && rdma link del shca1 && make_rxe && srpt_port_add rxe0 "$me"'
exit "$failed"
