#!/bin/bash
# TAP: iSCSI Extensions for RDMA on softhca, the kernel's own target and
# initiator unmodified (Documentation/iser.md). LIO (iscsi_target_mod with
# ib_isert) exports a 32 MiB rd_mcp RAM disk, set up through configfs, on
# an iSER portal at 198.18.0.1:3260 (shca0, veth0); open-iscsi's iscsid
# and iscsiadm log in over ib_iser. The session must be an iser one that
# the target lists too, its connection shca0's RC QPs, its LUN the RAM
# disk's size; fio then writes and reads back with crc32c verification
# (lib/fio.sh's verify_set: random 4 KiB, sequential 128 KiB, a mix, and
# reads), checked from its JSON, and shca0's port must have carried what
# fio moved. Failure cases: fio killed with SIGKILL mid-I/O, then a clean
# logout; the target portal group disabled under I/O, which drops the
# session, and enabled again: iscsid logs back in and the I/O completes
# verified. The same verified I/O then runs over rdma_rxe (rxe0 on veth1)
# as the comparison point. Last, logout, the target taken down, ib_iser
# and ib_isert unloaded, and no RC QP left on shca0; vm-run fails the run
# on any kernel warning.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
port=0 tmo=60
iqn=iqn.2026-12.io.softhca:iser
initiator=iqn.2026-12.io.softhca:initiator
disk_bytes=$((32 * 1024 * 1024))
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"
# shellcheck source=selftests/lib/iser.sh
. "$here/lib/iser.sh"

# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
	[ -n "$fio_pid" ] && kill -9 "$fio_pid" 2>/dev/null
	iscsid_down
	lio_target_down 2>/dev/null
	rdma link del rxe0 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT

echo "TAP version 13"
check "modprobe ib_iser, LIO with ib_isert, target $iqn on a RAM disk" eval \
	'modprobe -a ib_iser sd_mod && lio_target_up'
check "iSER portal 198.18.0.1:3260 (shca0)" lio_portal_add 198.18.0.1
check "iscsid up as $initiator" iscsid_up "$initiator"

# --- shca0 to itself, with the failure cases.
tx0=$(port_bytes shca0 tx_bytes)
iser_login shca0 198.18.0.1 shca0 2
verify_set shca0 "$disk"
tx1=$(port_bytes shca0 tx_bytes)
# verify_set writes 22 MiB and reads 44 MiB: every byte crosses shca0's
# port once (ib_isert's RDMA READ of the initiator's writes, RDMA WRITE
# of its reads), besides the iSCSI PDUs.
check "shca0: its port sent what fio moved (>= 66 MiB)" eval \
	"echo \$(($tx1 - $tx0)) bytes; [ \$(($tx1 - $tx0)) -ge $((66 << 20)) ]"

fio_kill_mid shca0 "$disk"
iser_logout "shca0 after kill -9 of fio" 198.18.0.1

# The target portal group disabled under I/O: LIO ends the session, the
# initiator's connection fails and iscsid keeps logging in again; the
# SCSI commands wait (replacement_timeout 60 s is not reached) and
# complete once the group is enabled.
iser_login "shca0 again" 198.18.0.1 shca0 2
fio_bg p "$disk" --rw=randwrite --bs=4k --iodepth=8 --size=8m --verify=crc32c \
	--verify_fatal=1 --rate_iops=500
sleep 2
check "target portal group disabled under I/O" eval "echo 0 >$(tpg)/enable"
check "the initiator's session fails" sess_state FAILED 20
sleep 2
check "target portal group enabled again" eval "echo 1 >$(tpg)/enable"
check "iscsid logged back in" sess_state LOGGED_IN 30
fio_bg_ok "fio across the session's loss completed and verified" p 8192 8192
iser_logout "shca0 after the recovery" 198.18.0.1

# --- rdma_rxe: rxe0 on veth1, target and initiator on it.
check "rxe0 on veth1, iSER portal 198.18.0.2:3260" eval \
	'rdma link add rxe0 type rxe netdev veth1 && sleep 1 && lio_portal_add 198.18.0.2'
iser_login rxe0 198.18.0.2 rxe0 2
verify_set rxe0 "$disk"
iser_logout rxe0 198.18.0.2
check "portal 198.18.0.2 removed, rxe0 deleted" eval \
	'lio_portal_del 198.18.0.2 && rdma link del rxe0'

check "iscsid stopped, target taken down" eval 'iscsid_down && lio_target_down'
check "rmmod ib_iser ib_isert" rmmod ib_iser ib_isert
check "no RC QP left on shca0" eval '! qps_on shca0 1'
echo "1..$n"
exit $failed
