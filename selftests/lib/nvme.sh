# shellcheck shell=bash
# NVMe over Fabrics helpers of selftests/nvmeof.sh and
# selftests/bedb/nvmeof.sh: TAP rows (tools.sh's ok, nok and check) for
# fio runs checked from their JSON, for the kernel target's configfs
# ports and the host's controller. The caller sets out (a scratch
# directory), cfs (nvmet's configfs), nqn, hostnqn and disk_bytes (the
# namespace's size); connect sets ctrl (nvmeN) and ns (its block device).
# shellcheck disable=SC2154 # out, cfs, nqn, hostnqn, disk_bytes: the caller's

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

# nvmet_subsystem: the subsystem $nqn, any host allowed, /dev/ram0 its
# namespace 1 (configfs mounted if it was not).
nvmet_subsystem() {
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	mkdir "$cfs/subsystems/$nqn" &&
		echo 1 >"$cfs/subsystems/$nqn/attr_allow_any_host" &&
		mkdir "$cfs/subsystems/$nqn/namespaces/1" &&
		echo /dev/ram0 >"$cfs/subsystems/$nqn/namespaces/1/device_path" &&
		echo 1 >"$cfs/subsystems/$nqn/namespaces/1/enable"
}
