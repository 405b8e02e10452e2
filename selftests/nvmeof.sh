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
	pkill_fio
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
fio_pid=
pkill_fio() { [ -n "$fio_pid" ] && kill -9 "$fio_pid" 2>/dev/null; fio_pid=; }
trap cleanup EXIT

check() { # check "name" cmd...
	local name=$1; shift
	if "$@" >"$out/log" 2>&1; then ok "$name"; else
		sed 's/^/# /' "$out/log"; nok "$name"; fi
}

# fio_ok JSON MIN_READ_KIB MIN_WRITE_KIB: every job ended with error 0,
# no verify error was reported, and at least this much was read and
# written. fio's JSON has a "error" per job and io_kbytes per direction.
fio_ok() {
	/usr/bin/python3 - "$@" <<'PY'
import json, sys
path, rmin, wmin = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
text = open(path).read()
doc = json.loads(text[text.index("{"):])
r = w = 0
for j in doc["jobs"]:
    if j["error"] != 0:
        sys.exit("job %s: error %d" % (j["jobname"], j["error"]))
    r += j["read"]["io_kbytes"]
    w += j["write"]["io_kbytes"]
print("read %d KiB, wrote %d KiB" % (r, w))
if r < rmin or w < wmin:
    sys.exit("expected at least %d KiB read and %d KiB written" % (rmin, wmin))
PY
}

# run_fio LABEL DEV MIN_R MIN_W FIO-ARGS...: fio in $out (its verify state
# file needs a writable directory), JSON output checked by fio_ok.
run_fio() {
	local label=$1 dev=$2 rmin=$3 wmin=$4 rc=0; shift 4
	rm -f "$out/fio.sum"
	(cd "$out" && timeout 60 fio --name=j --filename="$dev" --direct=1 \
		--ioengine=libaio --output-format=json --output="$out/fio.json" \
		"$@") >"$out/fio.err" 2>&1 || rc=$?
	if [ "$rc" = 0 ] && fio_ok "$out/fio.json" "$rmin" "$wmin" >"$out/fio.sum" 2>&1; then
		ok "$label ($(cat "$out/fio.sum"))"
	else
		sed 's/^/# /' "$out/fio.err" "$out/fio.sum" 2>/dev/null | head -20
		nok "$label (fio exit $rc)"
	fi
}

# The verified I/O every path gets: write then read back each block.
verify_set() { # LABEL DEV
	local l=$1 d=$2 v=(--verify=crc32c --do_verify=1 --verify_fatal=1)
	run_fio "$l: random 4 KiB write + verify, iodepth 16" "$d" 4096 4096 \
		--rw=randwrite --bs=4k --iodepth=16 --size=4m "${v[@]}"
	run_fio "$l: sequential 128 KiB write + verify, iodepth 4" "$d" 16384 16384 \
		--rw=write --bs=128k --iodepth=4 --size=16m "${v[@]}"
	run_fio "$l: random 4 KiB read/write mix + verify" "$d" 1 1 \
		--rw=randrw --bs=4k --iodepth=8 --size=4m "${v[@]}"
	run_fio "$l: sequential 128 KiB read, iodepth 8" "$d" 16384 0 \
		--rw=read --bs=128k --iodepth=8 --size=16m
	run_fio "$l: random 4 KiB read, iodepth 32" "$d" 4096 0 \
		--rw=randread --bs=4k --iodepth=32 --size=4m
}

# add_port N ADDR: a target port on ADDR:4420 exporting the subsystem.
add_port() {
	mkdir "$cfs/ports/$1" &&
	echo rdma >"$cfs/ports/$1/addr_trtype" &&
	echo ipv4 >"$cfs/ports/$1/addr_adrfam" &&
	echo "$2" >"$cfs/ports/$1/addr_traddr" &&
	echo 4420 >"$cfs/ports/$1/addr_trsvcid" &&
	ln -s "$cfs/subsystems/$nqn" "$cfs/ports/$1/subsystems/$nqn"
}
del_port() { rm "$cfs/ports/$1/subsystems/$nqn" && rmdir "$cfs/ports/$1"; }

# The one controller of our subsystem: its sysfs name (nvmeN).
ctrl=
find_ctrl() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$nqn" ] && { ctrl=${c##*/}; return 0; }
	done
	return 1
}
# wait_state STATE SECONDS: the controller reaches STATE.
wait_state() {
	local i
	for i in $(seq $(($2 * 20))); do
		[ "$(cat /sys/class/nvme/"$ctrl"/state 2>/dev/null)" = "$1" ] && return 0
		sleep 0.05
	done
	echo "controller $ctrl state: $(cat /sys/class/nvme/"$ctrl"/state 2>&1), wanted $1"
	return 1
}
wait_not_live() { # SECONDS
	local i
	for i in $(seq $(($1 * 20))); do
		[ "$(cat /sys/class/nvme/"$ctrl"/state 2>/dev/null)" != live ] && return 0
		sleep 0.05
	done
	echo "controller $ctrl still live"
	return 1
}
# qps_on DEV: DEV holds at least the 3 QPs of one controller besides GSI.
qps_on() {
	local q
	q=$(rdma res show qp | grep "link $1/" | grep -cv "type GSI")
	echo "$q non-GSI QPs on $1"
	[ "$q" -ge 3 ]
}
# connect LABEL TRADDR HOST_TRADDR DEV: nvme connect, the admin and I/O
# queues (3 QPs) on the target's device DEV, then the namespace's
# block device is $ns (its size that of the RAM disk).
ns=
connect() {
	ns=
	check "$1: nvme connect to $2 from $3" nvme connect -t rdma -a "$2" -s 4420 \
		-w "$3" -n "$nqn" --hostnqn="$hostnqn" -i 2 \
		--reconnect-delay=1 --ctrl-loss-tmo=30
	check "$1: controller live" eval 'find_ctrl && wait_state live 10'
	for _ in $(seq 100); do
		[ -b "/dev/${ctrl}n1" ] && break
		sleep 0.05
	done
	ns=/dev/${ctrl}n1
	check "$1: the queues are $4's QPs" qps_on "$4"
	check "$1: $ns has the RAM disk's size ($disk_bytes B)" \
		test "$(blockdev --getsize64 "$ns" 2>&1)" = "$disk_bytes"
}
disconnect() { # LABEL
	check "$1: nvme disconnect" nvme disconnect -n "$nqn"
	check "$1: no controller left" eval '! find_ctrl'
}

echo "TAP version 13"
disk_mib=32 disk_bytes=$((32 * 1024 * 1024))
check "modprobe nvmet nvmet-rdma nvme-rdma brd" eval \
	"modprobe -a nvmet nvmet-rdma nvme-rdma && modprobe brd rd_nr=1 rd_size=$((disk_mib * 1024))"
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
check "subsystem $nqn with /dev/ram0 as namespace 1" eval '
	mkdir "$cfs/subsystems/$nqn" &&
	echo 1 >"$cfs/subsystems/$nqn/attr_allow_any_host" &&
	mkdir "$cfs/subsystems/$nqn/namespaces/1" &&
	echo /dev/ram0 >"$cfs/subsystems/$nqn/namespaces/1/device_path" &&
	echo 1 >"$cfs/subsystems/$nqn/namespaces/1/enable"'
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

(cd "$out" && exec fio --name=k --filename="$ns" --direct=1 --ioengine=libaio \
	--rw=randrw --bs=4k --iodepth=32 --time_based --runtime=30 \
	--output="$out/fio-k.txt") >/dev/null 2>&1 &
fio_pid=$!
sleep 3
check "shca0: fio alive mid-I/O" kill -0 "$fio_pid"
kill -9 "$fio_pid"
{ wait "$fio_pid"; } 2>/dev/null	# bash's "Killed" line is no TAP
fio_pid=
disconnect "shca0 after kill -9 of fio"

# Port taken away under I/O: the host sees the queues drop, retries every
# reconnect_delay (1 s) and, once the port is back, reconnects; fio's I/O
# waits meanwhile and completes (ctrl_loss_tmo 30 s is not reached).
connect "shca0 again" 198.18.0.1 198.18.0.1 shca0
(cd "$out" && exec timeout 60 fio --name=p --filename="$ns" --direct=1 \
	--ioengine=libaio --rw=randwrite --bs=4k --iodepth=8 --size=8m \
	--verify=crc32c --verify_fatal=1 --rate_iops=500 \
	--output-format=json --output="$out/fio-p.json") >"$out/fio-p.err" 2>&1 &
fio_pid=$!
sleep 2
check "port 1 removed under I/O" del_port 1
check "host controller leaves live (reconnecting)" wait_not_live 10
sleep 2
check "port 1 back" add_port 1 198.18.0.1
check "host reconnected (live)" wait_state live 30
rc=0
wait "$fio_pid" || rc=$?
fio_pid=
if [ $rc = 0 ] && fio_ok "$out/fio-p.json" 8192 8192 >"$out/fio.sum" 2>&1; then
	ok "fio across the port's loss completed and verified ($(cat "$out/fio.sum"))"
else
	sed 's/^/# /' "$out/fio-p.err" "$out/fio.sum" | head -20
	nok "fio across the port's loss completed and verified (exit $rc)"
fi
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
