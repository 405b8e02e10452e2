#!/bin/bash
# TAP: the kernel's own NVMe over Fabrics RDMA target (nvmet-rdma) and host
# (nvme-rdma), unmodified, on softhca (Documentation/nvmeof.md). The target
# exports a brd RAM disk through configfs on 198.18.0.1:4420 (shca0, veth0)
# and 198.18.0.2:4420 (shca1, veth1, created here); nvme-cli connects over
# shca0 to itself and from shca0 to shca1. On each path fio writes and reads
# back with crc32c verification: random 4 KiB, sequential 128 KiB, and a
# random read/write mix; fio's exit status, its error field and the bytes
# it moved are checked. On the shca0 path also: a controller reset and I/O
# after it; fio killed with SIGKILL mid-I/O, then a clean disconnect; the
# target port taken away under I/O and given back, after which the host
# reconnects and the I/O completes without error. The same verified I/O
# then runs over rdma_rxe (rxe0 on veth1 in place of shca1) as the
# comparison point. Last, disconnect and rmmod nvme-rdma and nvmet-rdma;
# vm-run fails the run on any kernel warning.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
port=0 tmo=60
added_shca1=0
cfs=/sys/kernel/config/nvmet
nqn=nqn.2026-12.io.softhca:nvmeof
hostnqn=nqn.2026-12.io.softhca:host
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"

# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
	[ -n "$fio_pid" ] && kill -9 "$fio_pid" 2>/dev/null
	nvme disconnect -n "$nqn" >/dev/null 2>&1
	for p in 1 2 3; do
		rm -f "$cfs/ports/$p/subsystems/$nqn" 2>/dev/null
		rmdir "$cfs/ports/$p" 2>/dev/null
	done
	[ -d "$cfs/subsystems/$nqn" ] && {
		echo 0 >"$cfs/subsystems/$nqn/namespaces/1/enable"
		rmdir "$cfs/subsystems/$nqn/namespaces/1" "$cfs/subsystems/$nqn"
	} 2>/dev/null
	rdma link del rxe0 2>/dev/null
	[ "$added_shca1" = 1 ] && rdma link del shca1 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT

# shellcheck source=selftests/lib/nvme.sh
. "$here/lib/nvme.sh"

echo "TAP version 13"
disk_mib=32 disk_bytes=$((32 * 1024 * 1024))
check "modprobe nvmet nvmet-rdma nvme-rdma brd" eval \
	"modprobe -a nvmet nvmet-rdma nvme-rdma && modprobe brd rd_nr=1 rd_size=$((disk_mib * 1024))"
check "subsystem $nqn with /dev/ram0 as namespace 1" nvmet_subsystem
shca1_gids || exit 1
check "target port 1 on 198.18.0.1:4420 (shca0)" add_port 1 198.18.0.1
check "target port 2 on 198.18.0.2:4420 (shca1)" add_port 2 198.18.0.2

# --- shca0 to itself, with the failure cases.
connect shca0 198.18.0.1 198.18.0.1 shca0
verify_set shca0 "$ns"

check "shca0: reset_controller" eval "echo 1 >/sys/class/nvme/$ctrl/reset_controller"
check "shca0: live again after the reset" wait_state live 20
run_fio "shca0: random 4 KiB write + verify after the reset" "$ns" 4096 4096 \
	--rw=randwrite --bs=4k --iodepth=16 --size=4m --verify=crc32c --verify_fatal=1

fio_kill_mid shca0 "$ns"
disconnect "shca0 after kill -9 of fio"

# Port taken away under I/O: the host sees the queues drop, retries every
# reconnect_delay (1 s) and, once the port is back, reconnects; fio's I/O
# waits meanwhile and completes (ctrl_loss_tmo 30 s is not reached).
connect "shca0 again" 198.18.0.1 198.18.0.1 shca0
fio_bg p "$ns" --rw=randwrite --bs=4k --iodepth=8 --size=8m \
	--verify=crc32c --verify_fatal=1 --rate_iops=500
sleep 2
check "port 1 removed under I/O" del_port 1
check "host controller leaves live (reconnecting)" wait_not_live 10
sleep 2
check "port 1 back" add_port 1 198.18.0.1
check "host reconnected (live)" wait_state live 30
fio_bg_ok "fio across the port's loss completed and verified" p 8192 8192
disconnect "shca0 after the reconnect"

# --- shca0 to shca1.
connect shca0-shca1 198.18.0.2 198.18.0.1 shca1
verify_set shca0-shca1 "$ns"
disconnect shca0-shca1

# --- rdma_rxe: rxe0 on veth1 in place of shca1 (one RDMA device per
# address, so rdma_cm's choice is unambiguous), target and host on it.
check "port 2 removed" del_port 2
check "shca1 deleted, rxe0 on veth1" eval '
	{ [ "$added_shca1" = 0 ] || rdma link del shca1; } && added_shca1=0 &&
	rdma link add rxe0 type rxe netdev veth1'
sleep 1
check "target port 3 on 198.18.0.2:4420 (rxe0)" add_port 3 198.18.0.2
connect rxe0 198.18.0.2 198.18.0.2 rxe0
verify_set rxe0 "$ns"
disconnect rxe0
check "port 3 removed, rxe0 deleted" eval 'del_port 3 && rdma link del rxe0'

check "rmmod nvme-rdma" rmmod nvme-rdma
check "port 1 removed" del_port 1
check "rmmod nvmet-rdma" rmmod nvmet-rdma
echo "1..$n"
exit $failed
