#!/bin/bash
# TAP: the SCSI RDMA Protocol on softhca, the kernel's own target and
# initiator unmodified (Documentation/srp.md). LIO with ib_srpt exports a
# 32 MiB rd_mcp RAM disk, set up through configfs, and listens on rdma_cm
# port 5555; the kernel's ib_srp logs in through its sysfs add_target to
# 198.18.0.1 (shca0, veth0). The SRP remote port must be running, its
# channels shca0's RC QPs, its LUN the RAM disk's size; fio then writes and
# reads back with crc32c verification (lib/fio.sh's verify_set), checked
# from its JSON, and shca0's port must have carried what fio moved.
# Failure cases: fio killed with SIGKILL mid-I/O, then the remote port
# deleted and every channel gone on both ends; the target port disabled
# under I/O, which closes the channels (the remote port leaves running),
# and enabled again: ib_srp reconnects and the I/O completes verified. The
# same verified I/O then runs over rdma_rxe (rxe0 on veth1) as the
# comparison point. Last, the target taken down, ib_srp and ib_srpt
# unloaded, and no RC QP left on shca0; vm-run fails the run on any kernel
# warning.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
port=0 tmo=60
disk_bytes=$((32 * 1024 * 1024))
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"
# shellcheck source=selftests/lib/srp.sh
. "$here/lib/srp.sh"

# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
	[ -n "$fio_pid" ] && kill -9 "$fio_pid" 2>/dev/null
	for r in /sys/class/srp_remote_ports/*; do
		[ -e "$r/delete" ] && echo 1 >"$r/delete"
	done
	srpt_down 2>/dev/null
	rdma link del rxe0 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT

echo "TAP version 13"
check "modprobe ib_srp, LIO with ib_srpt on rdma_cm port $srp_cm_port, a RAM disk" eval \
	'modprobe -a ib_srp sd_mod && srpt_up'
guid=$(cat /sys/module/ib_srpt/parameters/srpt_service_guid 2>/dev/null)
check "target port of shca0 ($(srpt_port_name shca0)) with LUN 0 for 198.18.0.1" \
	srpt_port_add shca0 198.18.0.1

# --- shca0 to itself, with the failure cases.
tx0=$(port_bytes shca0 tx_bytes)
srp_login shca0 shca0 198.18.0.1 "$guid" 2
verify_set shca0 "$disk"
tx1=$(port_bytes shca0 tx_bytes)
# verify_set writes 22 MiB and reads 44 MiB: every byte crosses shca0's
# port once (ib_srpt's RDMA READ of the initiator's writes, RDMA WRITE of
# its reads), besides the SRP information units.
check "shca0: its port sent what fio moved (>= 66 MiB)" eval \
	"echo \$(($tx1 - $tx0)) bytes; [ \$(($tx1 - $tx0)) -ge $((66 << 20)) ]"

fio_kill_mid shca0 "$disk"
srp_logout "shca0 after kill -9 of fio" shca0

# The target port disabled under I/O: ib_srpt closes its channels, the
# remote port leaves running and ib_srp tries to log in again every
# second; the SCSI commands wait (fast_io_fail_tmo 60 s is not reached)
# and complete once the port is enabled. (ib_srpt's SRQ mode is left out:
# Debian's 6.1 ib_srpt warns on every channel release in it, on rxe as
# well; Documentation/srp.md.)
srp_login "shca0 again" shca0 198.18.0.1 "$guid" 2
fio_bg p "$disk" --rw=randwrite --bs=4k --iodepth=8 --size=8m --verify=crc32c \
	--verify_fatal=1 --rate_iops=500
sleep 2
check "target port disabled under I/O" eval "echo 0 >$(srpt_tpg shca0)/enable"
check "the remote port leaves running" rport_leaves running 20
sleep 2
check "target port enabled again" eval "echo 1 >$(srpt_tpg shca0)/enable"
check "ib_srp reconnected (running)" rport_state running 30
fio_bg_ok "fio across the channels' loss completed and verified" p 8192 8192
srp_logout "shca0 after the reconnect" shca0


# --- rdma_rxe: rxe0 on veth1, target and initiator on it.
check "rxe0 on veth1, its target port with LUN 0 for 198.18.0.2" eval \
	'rdma link add rxe0 type rxe netdev veth1 && sleep 1 && srpt_port_add rxe0 198.18.0.2'
srp_login rxe0 rxe0 198.18.0.2 "$guid" 2
verify_set rxe0 "$disk"
srp_logout rxe0 rxe0
check "rxe0's target port removed, rxe0 deleted" eval \
	'srpt_port_del rxe0 && rdma link del rxe0'

check "target taken down" srpt_down
check "rmmod ib_srp ib_srpt" rmmod ib_srp ib_srpt
check "no RC QP left on shca0" eval '[ "$(rc_qps shca0)" = 0 ]'
echo "1..$n"
exit $failed
