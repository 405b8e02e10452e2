#!/bin/bash
# TAP: NFS over RDMA between two hosts on bed (b) (Documentation/
# nfsrdma.md, "Across two hosts"): the kernel's nfsd on guest b exports a
# tmpfs directory on RDMA port 20049, the kernel's NFS client on guest a
# mounts it with -o rdma over RoCEv2 across the segment (NFSv4.2). Both in
# the initial namespace, as on hosts (SOFTHCA_BEDB_INIT_NET=1, set here).
#  - round 1: client on rxe0 (a), server on shca1 (b);
#  - round 2: client on shca0 (a): softhca on both hosts;
#  - round 3: server on rxe0 (b), client on shca0 (a).
# Each round: the mount, its transport rdma on 20049 and its QP on a's
# device; a tree of awkward files (selftests/lib/nfs.sh) copied in, the
# server's copy the same (names, types, sizes, modes, links and each
# file's checksum, listed by b); unmounted, mounted again, read back the
# same; a file the server wrote read back; rm -r of the tree; and both
# devices sent and took packets on the wire in the round. Guest a prints
# the rows.
# Functions run through setup and check command lines.
# shellcheck disable=SC2317
set -u
here=$(dirname "$0")
export SOFTHCA_BEDB_INIT_NET=1
# shellcheck source=selftests/bedb/lib.sh
. "$here/lib.sh"
# shellcheck source=selftests/lib/nfs.sh
. "$here/../lib/nfs.sh"
exp=$out/exp mnt=$out/mnt src=$out/src
nport=20049
nfs_clients=198.19.0.0/24
hello="from the server on guest b"

cleanup() {
	if [ "$role" = a ]; then
		mountpoint -q "$mnt" && umount -f -l "$mnt"
	else
		server_stop >/dev/null 2>&1
	fi
	jobs -p | xargs -r kill -9 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT

# manifest DIR: each entry's name, type, size, mode and link target, and
# each file's checksum; sorted.
manifest() {
	(cd "$1" && find . -printf '%p %y %s %m %l\n' | sort &&
		find . -type f -print0 | sort -z | xargs -0 -r md5sum)
}

# server_up: nfsd with the export and a file of its own (b).
server_up() {
	modprobe -a nfsd rpcrdma && server_start &&
		echo "$hello" >"$exp/hello"
}

# server_to_rxe: shca1 gives way to rxe0; nfsd listens on every address (b).
server_to_rxe() {
	rdma link del shca1 && make_rxe
}

# ulp_b R: b lists the server's copy when a has copied the tree.
ulp_b() {
	wait_file "$D/a.round$1.copied" 900 || bail "no copy from guest a in round $1"
	manifest "$exp/tree$1" >"$D/b.round$1.manifest.tmp" &&
		mv "$D/b.round$1.manifest.tmp" "$D/b.round$1.manifest"
}

# ulp_a R LABEL: the rows of one round (a).
ulp_a() {
	local r=$1 l=$2 t=$mnt/tree$1
	check "$l: mount -o rdma,port=$nport,vers=4.2 $peer:/" mount_nfs - "$peer" 4.2
	check "$l: the transport is rdma, port $nport" xprt_is_rdma
	check "$l: the connection's QP is on $dev" rc_qp_on "$dev"
	check "$l: the tree copied in (cp -a)" cp -a "$src" "$t"
	put "round$r.copied" 0
	manifest "$src" >"$out/manifest"
	check "$l: the server's copy is the tree" eval \
		"wait_file '$D/b.round$r.manifest' 120 && diff '$out/manifest' '$D/b.round$r.manifest'"
	check "$l: umount" umount "$mnt"
	check "$l: mounted again" mount_nfs - "$peer" 4.2
	check "$l: read back over NFS, the tree" same_tree "$src" "$t"
	check "$l: the file the server wrote, read back" \
		test "$(cat "$mnt/hello" 2>&1)" = "$hello"
	check "$l: rm -r of the tree" eval "rm -r '$t' && test ! -e '$t'"
	check "$l: umount again" umount "$mnt"
}

[ "$role" = a ] && mkdir -p "$mnt"
# shellcheck disable=SC2016 # eval expands it
ulp_rounds client server 'modprobe -a rpcrdma nfsv4 && make_tree "$src" >/dev/null && make_rxe' \
	'make_softhca shca1 && server_up' server_to_rxe
exit "$failed"
