#!/bin/bash
# TAP: NVMe over Fabrics between two hosts on bed (b) (Documentation/
# nvmeof.md, "Across two hosts"): the kernel's nvmet-rdma target on guest b
# exports a 32 MiB RAM disk on 198.19.0.2:4420, the kernel's nvme-rdma host
# on guest a connects to it over RoCEv2 across the Ethernet segment of
# scripts/vm-pair and runs fio with crc32c verification (selftests/lib/
# nvme.sh's verify_set). The kernel's RDMA users make their rdma_cm IDs in
# the initial namespace only, so softhca takes the wire there
# (SOFTHCA_BEDB_INIT_NET=1, set here: rdma_rxe unloaded while a softhca
# device holds UDP 4791).
#  - round 1: host on rxe0 (a), target on shca1 (b);
#  - round 2: host on shca0 (a): softhca on both hosts;
#  - round 3: target on rxe0 (b), host on shca0 (a).
# Each round: nvme connect; the controller live, its queues QPs of a's
# device, the namespace the RAM disk's size; five fio runs, each verified;
# nvme disconnect, no controller left; and both devices sent and took
# packets on the wire in the round (softhca's wire_tx/rx_packets, rxe's
# sent/rcvd_pkts). Guest a prints the TAP rows, b's steps reach it
# through the files of selftests/bedb/lib.sh.
# Functions run through setup and check command lines.
# shellcheck disable=SC2317
set -u
here=$(dirname "$0")
export SOFTHCA_BEDB_INIT_NET=1
# shellcheck source=selftests/bedb/lib.sh
. "$here/lib.sh"
# shellcheck source=selftests/lib/nvme.sh
. "$here/../lib/nvme.sh"
cfs=/sys/kernel/config/nvmet
nqn=nqn.2026-12.io.softhca:bedb
hostnqn=nqn.2026-12.io.softhca:bedb-host
disk_mib=32 disk_bytes=$((32 * 1024 * 1024))
ctrl='' ns=''

cleanup() {
	if [ "$role" = a ]; then
		nvme disconnect -n "$nqn" >/dev/null 2>&1
	else
		rm -f "$cfs/ports/1/subsystems/$nqn" 2>/dev/null
		rmdir "$cfs/ports/1" 2>/dev/null
	fi
	jobs -p | xargs -r kill -9 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT

# target_up: nvmet-rdma with the subsystem, its port on our address (b).
target_up() {
	modprobe -a nvmet nvmet-rdma &&
		modprobe brd rd_nr=1 rd_size=$((disk_mib * 1024)) &&
		nvmet_subsystem && add_port 1 "$me"
}

# target_to_rxe: the port moved from shca1 to a new rxe0 (b).
target_to_rxe() {
	del_port 1 && rdma link del shca1 && make_rxe && add_port 1 "$me"
}

# ulp_a R LABEL: the host's rows of round R (a); ulp_b: the target has
# nothing to do meanwhile (b).
ulp_a() {
	connect "$2" "$peer" "$me" "$dev"
	verify_set "$2" "$ns"
	disconnect "$2"
}
ulp_b() { :; }

ulp_rounds host target 'modprobe nvme-rdma && make_rxe' \
	'make_softhca shca1 && target_up' target_to_rxe
exit "$failed"
