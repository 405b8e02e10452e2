# shellcheck shell=bash
# iSCSI Extensions for RDMA helpers of selftests/iser.sh and
# selftests/bedb/iser.sh: the target is the kernel's LIO (iscsi_target_mod
# with ib_isert) set up through configfs, exporting an rd_mcp RAM disk;
# the initiator is open-iscsi's iscsid and iscsiadm driving ib_iser.
# TAP rows use tools.sh's ok, nok and check; the fio rows are lib/fio.sh's.
# The caller sets out (a scratch directory), iqn (the target's name),
# initiator (the initiator's name) and disk_bytes (the RAM disk's size, a
# multiple of 4 KiB); iser_login sets
# sess (the iSCSI session's sysfs name) and disk (its block device).
# shellcheck disable=SC2154 # out, iqn, initiator, disk_bytes: the caller's

# shellcheck source=selftests/lib/fio.sh
. "$(dirname "${BASH_SOURCE[0]}")/fio.sh"

lio=/sys/kernel/config/target
tpg() { echo "$lio/iscsi/$iqn/tpgt_1"; }

# lio_target_up: the RAM disk, the target $iqn with it as LUN 0, any
# initiator allowed without authentication; no portal yet.
lio_target_up() {
	local t
	modprobe -a target_core_mod iscsi_target_mod ib_isert || return 1
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	mkdir -p "$lio/core/rd_mcp_0/disk0" &&
		echo "rd_pages=$((disk_bytes / 4096))" >"$lio/core/rd_mcp_0/disk0/control" &&
		echo 1 >"$lio/core/rd_mcp_0/disk0/enable" || return 1
	t=$(tpg)
	mkdir -p "$t/lun/lun_0" &&
		ln -s "$lio/core/rd_mcp_0/disk0" "$t/lun/lun_0/disk0" &&
		echo 0 >"$t/attrib/authentication" &&
		echo 1 >"$t/attrib/generate_node_acls" &&
		echo 0 >"$t/attrib/demo_mode_write_protect" &&
		echo 1 >"$t/enable"
}

# lio_portal_add ADDR: a network portal on ADDR:3260 that speaks iSER
# (ib_isert listens through rdma_cm); lio_portal_del ADDR takes it away.
lio_portal_add() {
	local np
	np="$(tpg)/np/$1:3260"
	mkdir "$np" && echo 1 >"$np/iser" && test "$(cat "$np/iser")" = 1
}
lio_portal_del() { rmdir "$(tpg)/np/$1:3260"; }

# lio_target_down: everything lio_target_up and lio_portal_add made.
lio_target_down() {
	local t np
	t=$(tpg)
	[ -d "$t" ] || return 0
	echo 0 >"$t/enable" 2>/dev/null
	for np in "$t"/np/*; do [ -d "$np" ] && rmdir "$np"; done
	rm -f "$t/lun/lun_0/disk0"
	rmdir "$t/lun/lun_0" "$t" "$lio/iscsi/$iqn"
	rmdir "$lio/core/rd_mcp_0/disk0" "$lio/core/rd_mcp_0"
}

# lio_sessions: the initiators the target has a session with.
lio_sessions() { cat "$(tpg)/dynamic_sessions" 2>/dev/null; }
# lio_has_session YES|NO: the target here lists our initiator, or not,
# within 10 s (it ends a session after the logout's answer); true if the
# target is not on this host.
lio_has_session() {
	[ -d "$(tpg)" ] || return 0
	for _ in $(seq 200); do
		if lio_sessions | grep -qx "$initiator"; then
			[ "$1" = YES ] && return 0
		elif [ "$1" = NO ]; then
			return 0
		fi
		sleep 0.05
	done
	echo "target sessions: $(lio_sessions | tr '\n' ' '), wanted $1 $initiator"
	return 1
}

# iscsid_up NAME: iscsid running in the background as initiator NAME.
# Its node database lives in /etc/iscsi, which a guest has read-only (the
# host's): a tmpfs over it, holding a copy, for as long as the suite runs.
iscsid_up() {
	mkdir -p /run/lock/iscsi "$out/etc-iscsi" &&
		cp -a /etc/iscsi/. "$out/etc-iscsi/" &&
		mount -t tmpfs softhca-iscsi /etc/iscsi &&
		cp -a "$out/etc-iscsi/." /etc/iscsi/ &&
		echo "InitiatorName=$1" >/etc/iscsi/initiatorname.iscsi || return 1
	# Its own session: on SIGTERM iscsid signals its whole process group.
	setsid iscsid -f >"$out/iscsid.log" 2>&1 &
	iscsid_pid=$!
	for _ in $(seq 100); do
		iscsiadm -m session >/dev/null 2>&1
		# 21: no session (iscsid answered); 20: iscsid not there yet.
		[ $? = 21 ] && return 0
		sleep 0.05
	done
	cat "$out/iscsid.log"
	return 1
}
iscsid_pid=
iscsid_down() {
	iscsiadm -m node -u >/dev/null 2>&1
	[ -n "$iscsid_pid" ] && kill "$iscsid_pid" 2>/dev/null && wait "$iscsid_pid"
	iscsid_pid=
	mountpoint -q /etc/iscsi && umount /etc/iscsi
	return 0
}

# The block device of session $sess's LUN 0 (sdX), or nothing yet.
sess_disk() {
	local b
	for b in /sys/class/iscsi_session/"$sess"/device/target*/*:0/block/*; do
		[ -e "$b" ] && { echo "${b##*/}"; return 0; }
	done
	return 1
}
# sess_state STATE SECONDS: session $sess reaches STATE (LOGGED_IN, FAILED).
sess_state() {
	for _ in $(seq $(($2 * 20))); do
		[ "$(cat /sys/class/iscsi_session/"$sess"/state 2>/dev/null)" = "$1" ] && return 0
		sleep 0.05
	done
	echo "session $sess state: $(cat /sys/class/iscsi_session/"$sess"/state 2>&1), wanted $1"
	return 1
}
# sess_of ADDR: the session to $iqn over iSER at ADDR, from iscsiadm's
# list ("iser: [N] ADDR:3260,1 IQN (non-flash)"), as sessionN.
sess_of() {
	local s
	s=$(iscsiadm -m session 2>/dev/null |
		awk -v a="$1:3260,1" -v q="$iqn" '$1 == "iser:" && $3 == a && $4 == q { gsub(/[][]/, "", $2); print $2 }')
	[ -n "$s" ] && echo "session$s"
}
# qps_on DEV MIN: DEV holds at least MIN RC QPs (besides GSI).
qps_on() {
	local q
	q=$(rdma res show qp | grep "link $1/" | grep -c "type RC")
	echo "$q RC QPs on $1"
	[ "$q" -ge "$2" ]
}

# iser_login LABEL ADDR DEV QPS: discovery and login over iSER to the
# portal ADDR; the session is an iser one, the target has it, DEV holds
# QPS RC QPs, and its LUN is $disk with the RAM disk's size.
sess='' disk=''
iser_login() {
	# shellcheck disable=SC2034 # eval'd by check: bash's scope is dynamic
	local addr=$2
	sess='' disk=''
	check "$1: discovery at $2 through the iser interface" eval \
		"iscsiadm -m discovery -t st -p $2 -I iser | grep -qx '$2:3260,1 $iqn'"
	check "$1: login over iSER" eval "
		iscsiadm -m node -T $iqn -p $2 -I iser -o update \
			-n node.session.timeo.replacement_timeout -v 60 &&
		iscsiadm -m node -T $iqn -p $2 -I iser --login"
	check "$1: an iser session, logged in, and the target's" eval \
		'sess=$(sess_of "$addr") && echo "$sess" && sess_state LOGGED_IN 10 &&
		 lio_has_session YES'
	check "$1: the connection is $3's QPs" qps_on "$3" "$4"
	for _ in $(seq 200); do
		disk=$(sess_disk) && [ -b "/dev/$disk" ] && break
		sleep 0.05
	done
	disk=/dev/$disk
	check "$1: $disk has the RAM disk's size ($disk_bytes B)" \
		test "$(blockdev --getsize64 "$disk" 2>&1)" = "$disk_bytes"
}
iser_logout() { # LABEL ADDR
	# shellcheck disable=SC2034 # as in iser_login
	local addr=$2
	check "$1: logout" iscsiadm -m node -T "$iqn" -p "$2" -I iser --logout
	check "$1: no session left, on either side" eval \
		'! sess_of "$addr" && lio_has_session NO'
}
