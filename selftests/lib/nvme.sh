# shellcheck shell=bash
# NVMe over Fabrics helpers of selftests/nvmeof.sh and
# selftests/bedb/nvmeof.sh: TAP rows (tools.sh's ok, nok and check) for
# the kernel target's configfs ports and the host's controller; the fio
# rows are lib/fio.sh's. The caller sets out (a scratch
# directory), cfs (nvmet's configfs), nqn, hostnqn and disk_bytes (the
# namespace's size); connect sets ctrl (nvmeN) and ns (its block device).
# shellcheck disable=SC2154 # out, cfs, nqn, hostnqn, disk_bytes: the caller's

# shellcheck source=selftests/lib/fio.sh
. "$(dirname "${BASH_SOURCE[0]}")/fio.sh"

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
