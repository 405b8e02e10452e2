# shellcheck shell=bash
# SCSI RDMA Protocol helpers of selftests/srp.sh and selftests/bedb/srp.sh:
# the target is the kernel's LIO with ib_srpt, set up through configfs and
# listening on rdma_cm port 5555 (the way SRP reaches a RoCE port); the
# initiator is the kernel's ib_srp, driven through its sysfs add_target
# (no srp_daemon: RoCE has no subnet manager to ask). TAP rows use
# tools.sh's ok, nok and check; the fio rows are lib/fio.sh's. The caller
# sets out (a scratch directory) and disk_bytes (the RAM disk's size, a
# multiple of 4 KiB); srp_login sets rport (the SRP remote port's sysfs
# name) and disk (its LUN's block device).
# shellcheck disable=SC2154 # out, disk_bytes: the caller's

# shellcheck source=selftests/lib/fio.sh
. "$(dirname "${BASH_SOURCE[0]}")/fio.sh"

lio=/sys/kernel/config/target
srpt=$lio/srpt
srp_cm_port=5555

# srpt_port_name DEV: ib_srpt's name of DEV's port 1: the interface ID of
# its GID 0, as four groups of hex digits.
srpt_port_name() {
	cut -d: -f5-8 "/sys/class/infiniband/$1/ports/1/gids/0"
}

# srpt_up: ib_srpt listening on rdma_cm port 5555 of every address, and
# the RAM disk as a backstore.
srpt_up() {
	modprobe -a target_core_mod ib_srpt || return 1
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	mkdir -p "$srpt" &&
		echo "$srp_cm_port" >"$srpt/discovery_auth/rdma_cm_port" &&
		test "$(cat "$srpt/discovery_auth/rdma_cm_port")" = "$srp_cm_port" &&
		mkdir -p "$lio/core/rd_mcp_0/disk0" &&
		echo "rd_pages=$((disk_bytes / 4096))" >"$lio/core/rd_mcp_0/disk0/control" &&
		echo 1 >"$lio/core/rd_mcp_0/disk0/enable"
}

# srpt_tpg DEV: the target portal group of DEV's port.
srpt_tpg() { local p; p=$(srpt_port_name "$1") && echo "$srpt/$p/$p"; }

# srpt_port_add DEV ADDR: DEV's port as a target with the disk as LUN 0,
# for the session ib_srpt names ADDR. Linux 6.1's ib_srpt names an
# rdma_cm login after the address it came in on, the target's own, so
# ADDR is the target's address; the ACL maps LUN 0.
srpt_port_add() {
	local g a
	g=$(srpt_tpg "$1") || return 1
	a="$g/acls/$2"
	mkdir -p "$g/lun/lun_0" &&
		ln -s "$lio/core/rd_mcp_0/disk0" "$g/lun/lun_0/disk0" &&
		mkdir -p "$a/lun_0" && ln -s "$g/lun/lun_0" "$a/lun_0/lun" &&
		echo 1 >"$g/enable"
}

# srpt_port_del DEV: what srpt_port_add made, for whichever ACL it was.
srpt_port_del() {
	local g
	g=$(srpt_tpg "$1") || return 1
	[ -d "$g" ] || return 0
	srpt_tpg_del "$g"
}

# srpt_down: every port of srpt_port_add, the listener and the backstore.
srpt_down() {
	local p
	[ -d "$srpt" ] || return 0
	for p in "$srpt"/*/; do
		p=${p%/}
		[ -d "$p/${p##*/}" ] || continue
		srpt_tpg_del "$p/${p##*/}"
	done
	echo 0 >"$srpt/discovery_auth/rdma_cm_port"
	rmdir "$srpt"
	rmdir "$lio/core/rd_mcp_0/disk0" "$lio/core/rd_mcp_0"
}
srpt_tpg_del() { # TPG_DIR
	local a
	echo 0 >"$1/enable"
	for a in "$1"/acls/*; do
		[ -d "$a" ] || continue
		rm -f "$a/lun_0/lun"
		rmdir "$a/lun_0" "$a"
	done
	rm -f "$1/lun/lun_0/disk0"
	rmdir "$1/lun/lun_0" "$1" "${1%/*}"
}

# rport_of DEV: the SRP remote port the initiator holds on DEV's port.
rport_of() {
	local r
	for r in /sys/class/srp_remote_ports/*; do
		[ -e "$r" ] || continue
		# port-H:1 belongs to SCSI host H, whose srp sysfs names the port.
		[ "$(cat "/sys/class/scsi_host/host$(echo "${r##*/port-}" | cut -d: -f1)/local_ib_device" 2>/dev/null)" = "$1" ] &&
			{ echo "${r##*/}"; return 0; }
	done
	return 1
}
# rport_state STATE SECONDS: $rport reaches STATE (running, blocked, ...).
rport_state() {
	for _ in $(seq $(($2 * 20))); do
		[ "$(cat /sys/class/srp_remote_ports/"$rport"/state 2>/dev/null)" = "$1" ] && return 0
		sleep 0.05
	done
	echo "$rport state: $(cat /sys/class/srp_remote_ports/"$rport"/state 2>&1), wanted $1"
	return 1
}
# rport_leaves STATE SECONDS: $rport is in another state than STATE.
rport_leaves() {
	for _ in $(seq $(($2 * 20))); do
		[ "$(cat /sys/class/srp_remote_ports/"$rport"/state 2>/dev/null)" != "$1" ] && {
			echo "$rport: $(cat /sys/class/srp_remote_ports/"$rport"/state 2>&1)"
			return 0
		}
		sleep 0.05
	done
	echo "$rport still $1"
	return 1
}
# rport_disk: the block device of $rport's SCSI host's LUN 0.
rport_disk() {
	local h b
	h=$(echo "${rport#port-}" | cut -d: -f1)
	for b in /sys/class/scsi_host/host"$h"/device/target*/*:0/block/*; do
		[ -e "$b" ] && { echo "${b##*/}"; return 0; }
	done
	return 1
}
# rc_qps DEV: how many RC QPs DEV holds.
rc_qps() { rdma res show qp | grep "link $1/" | grep -c "type RC"; }

# srp_login LABEL DEV ADDR GUID QPS: ib_srp logs in from DEV to the target
# at ADDR:5555, whose SRP target port ID is GUID (ib_srpt's service GUID,
# "0x..."); the remote port is running, DEV holds at least QPS RC QPs and
# the LUN is $disk with the RAM disk's size. The remote port then
# reconnects every second and fails I/O only after 60 s without it.
rport='' disk=''
srp_login() {
	local g=${4#0x}
	rport='' disk=''
	check "$1: add_target id_ext=ioc_guid=$g dest=$3:$srp_cm_port" eval \
		"echo id_ext=$g,ioc_guid=$g,dest=$3:$srp_cm_port,max_cmd_per_lun=32 \
			>/sys/class/infiniband_srp/srp-$2-1/add_target"
	# shellcheck disable=SC2034 # dev is eval'd by check below
	local dev=$2
	check "$1: an SRP target port, running, its tmo's set" eval \
		'rport=$(rport_of "$dev") && rport_state running 10 &&
		 echo 60 >/sys/class/srp_remote_ports/$rport/fast_io_fail_tmo &&
		 echo 1 >/sys/class/srp_remote_ports/$rport/reconnect_delay'
	check "$1: the channels are $2's QPs" eval \
		"q=\$(rc_qps $2); echo \"\$q RC QPs on $2\"; [ \$q -ge $5 ]"
	for _ in $(seq 200); do
		disk=$(rport_disk) && [ -b "/dev/$disk" ] && break
		sleep 0.05
	done
	disk=/dev/$disk
	check "$1: $disk has the RAM disk's size ($disk_bytes B)" \
		test "$(blockdev --getsize64 "$disk" 2>&1)" = "$disk_bytes"
}
# srp_logout LABEL DEV: the remote port deleted; within 10 s DEV holds no
# RC QP (both ends' channels gone when the target is on DEV too).
srp_logout() {
	check "$1: remote port deleted" eval "echo 1 >/sys/class/srp_remote_ports/$rport/delete"
	check "$1: no RC QP left on $2 within 10 s" no_rc_qps "$2" 10
}
no_rc_qps() { # DEV SECONDS
	for _ in $(seq $(($2 * 10))); do
		[ "$(rc_qps "$1")" = 0 ] && return 0
		sleep 0.1
	done
	rdma res show qp | grep -v GSI
	return 1
}
