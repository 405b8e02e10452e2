# shellcheck shell=bash
# NFS over RDMA helpers of selftests/nfsrdma.sh and selftests/bedb/nfsrdma.sh:
# the kernel's server (nfsd on RDMA port $nport exporting $exp to
# $nfs_clients, default 198.18.0.0/24), the client's mount on $mnt over
# rdma, and a tree of awkward files to copy and compare. The caller sets
# out (a scratch directory), exp, mnt and nport.
# shellcheck disable=SC2154 # out, exp, mnt, nport: the caller's

# --- The server: rpcbind, the export, mountd and nfsd on RDMA 20049. The
# guest's root is the host's, read-only: nfs-utils' state goes on a tmpfs.
# NFSv4's grace period is cut to its 10 s floor and then ended at once (no
# client has state to reclaim), so that OPENs are not refused with GRACE.
server_start() {
	mkdir -p "$exp" &&
	{ mountpoint -q /var/lib/nfs || mount -t tmpfs nfsstate /var/lib/nfs; } &&
	mkdir -p /var/lib/nfs/v4recovery &&
	touch /var/lib/nfs/etab /var/lib/nfs/rmtab &&
	{ mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd; } &&
	{ pgrep -x rpcbind >/dev/null || rpcbind -w; } &&
	exportfs -o rw,sync,no_root_squash,insecure,no_subtree_check,fsid=0 \
		"${nfs_clients:-198.18.0.0/24}:$exp" &&
	{ pgrep -x rpc.mountd >/dev/null || rpc.mountd --no-udp; } &&
	nfsd_up
}
nfsd_up() {
	{ [ "$(cat /proc/fs/nfsd/threads)" != 0 ] ||
	  { echo 10 >/proc/fs/nfsd/nfsv4gracetime &&
	    echo 10 >/proc/fs/nfsd/nfsv4leasetime; }; } &&
	rpc.nfsd --rdma="$nport" 4 && echo Y >/proc/fs/nfsd/v4_end_grace &&
	grep -qx "rdma $nport" /proc/fs/nfsd/portlist
}
server_stop() {
	rpc.nfsd 0
	exportfs -ua
	pkill -x rpc.mountd
	pkill -x rpcbind
	for _ in $(seq 100); do
		pgrep -x 'rpc.mountd|rpcbind' >/dev/null || break
		sleep 0.05
	done
	umount /proc/fs/nfsd
	umount /var/lib/nfs
}

# --- The client. mount_nfs NS SERVER VERS: mount the export on $mnt with
# the network namespace NS ("-": this one), which the NFS client keeps for
# its transport; the mount itself stays in this mount namespace.
mount_nfs() {
	local pre=() path=/ opts="rdma,port=$nport,vers=$3"
	[ "$1" = - ] || pre=(nsenter --net="/run/netns/$1")
	[ "$3" = 3 ] && path=$exp opts="$opts,nolock"
	mkdir -p "$mnt" && "${pre[@]}" mount -t nfs -o "$opts" "$2:$path" "$mnt"
}
# xprt_is_rdma: the mount's transport, from /proc/self/mountstats, is
# rdma to port 20049 (mount(8) would fall back to nothing else: it fails).
xprt_is_rdma() {
	awk -v m="$mnt" '$1 == "device" && $5 == m { on = 1; next }
		$1 == "device" { on = 0 }
		on && $1 == "xprt:" { print; if ($2 == "rdma") ok = 1 }
		END { exit !ok }' /proc/self/mountstats &&
	grep " $mnt nfs" /proc/mounts | grep "proto=rdma" | grep -q "port=$nport"
}
# rc_qp_on DEV [NS]: an RC QP of rdma_cm's (the kernel's) on DEV.
rc_qp_on() {
	${2:+ip netns exec "$2"} rdma res show qp link "$1/1" | tee "$out/qps" |
		grep -q 'type RC state RTS .*comm \[rdma_cm\]'
}

no_rc_qp_on() { # DEV: within 5 s
	for _ in $(seq 100); do
		rc_qp_on "$1" || return 0
		sleep 0.05
	done
	return 1
}

# make_tree DIR: files of awkward sizes (0, 1, one byte either side of a
# page, 64 KiB + 1, 1 MiB + 3, 8 MiB), directories three deep, a symlink,
# a file of mode 0640 and one of 0755. Prints the bytes it wrote.
make_tree() {
	local d=$1 s i=0 tot=0
	mkdir -p "$d/a/b/c" "$d/empty-dir" || return 1
	for s in 0 1 4095 4096 4097 65537 1048579 8388608; do
		head -c "$s" /dev/urandom >"$d/f$s" || return 1
		head -c "$((s / 3 + i))" /dev/urandom >"$d/a/b/c/g$i" || return 1
		tot=$((tot + s + s / 3 + i)) i=$((i + 1))
	done
	ln -s a/b/c/g3 "$d/link" && chmod 0640 "$d/f1" && chmod 0755 "$d/f4096" &&
		echo "$tot"
}
# same_tree A B: same names, types, sizes, modes, link targets and bytes.
# (No process substitution: the guest's /dev has no /dev/fd.)
same_tree() {
	(cd "$1" && find . -printf '%p %y %s %m %l\n' | sort) >"$out/ta" &&
	(cd "$2" && find . -printf '%p %y %s %m %l\n' | sort) >"$out/tb" &&
		diff "$out/ta" "$out/tb" && diff -r --no-dereference "$1" "$2"
}
