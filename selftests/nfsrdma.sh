#!/bin/bash
# TAP: NFS over RDMA with the kernel's own server (nfsd + svcrdma) and
# client (nfs + xprtrdma), unmodified, on softhca (Documentation/nfsrdma.md).
# nfsd listens on RDMA port 20049 and exports a tmpfs directory; the
# client mounts it with -o rdma,port=20049 over three paths:
#   shca0      client and server on shca0 (198.18.0.1), NFSv4.2 and NFSv3;
#   shca1      the client in netns "near" on veth1 (198.18.0.2) with shca1,
#              the server on shca0: two softhca devices, NFSv4.2;
#   wire       the client in netns "far" on veth0 with shca9, the server on
#              rdma_rxe (rxe0 on veth1): RoCEv2 packets, NFSv4.2; then the
#              other way, the server in "far" on shca9, the client on rxe0.
# On each path a tree of files (empty to 8 MiB, nested directories, a
# symlink, modes) is copied in, compared on the server's side, unmounted,
# mounted again (the client's cache is gone) and compared once more; the
# transport must be rdma on port 20049 and the connection's QP on the
# expected device, whose byte counters must grow by the tree's size. On
# shca0 also: fio with crc32c verify through O_DIRECT; a writer killed
# with SIGKILL mid-file, then a clean unmount; the server restarted under
# I/O (NFSv3), after which the client reconnects and the I/O completes and
# verifies. Last, the server stops and nfsd, nfs and rpcrdma unload;
# vm-run fails the run on any kernel warning.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
exp=$out/exp mnt=$out/mnt src=$out/src
nport=20049
had_shca0=0 added_shca1=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"
# shellcheck source=selftests/lib/wire_bed.sh
. "$here/lib/wire_bed.sh"

# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
	jobs -p | xargs -r kill -9 2>/dev/null
	wait 2>/dev/null
	mountpoint -q "$mnt" && umount -f -l "$mnt"
	server_stop >/dev/null 2>&1
	near rdma link del shca1 2>/dev/null
	wire_bed_restore
	[ "$added_shca1" = 1 ] && rdma link del shca1 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT

# shellcheck source=selftests/lib/nfs.sh
. "$here/lib/nfs.sh"

# path_rows LABEL NS SERVER VERS DEV [DEV_NS]: the tree over one path, the
# client in network namespace NS. DEV, the softhca device at one end (in
# DEV_NS), holds the connection's QP; its tx_bytes and rx_bytes must each
# grow by at least the tree's bytes (the writes cross as SENDs or as the
# server's RDMA READs, the reads as its RDMA WRITEs).
path_rows() {
	local l=$1 ns=$2 server=$3 v=$4 dev=$5 dns=${6:-} t=tree-$1-v$4
	local tx0 rx0 tx1 rx1
	tx0=$(wire_stat "$dev" tx_bytes "$dns") rx0=$(wire_stat "$dev" rx_bytes "$dns")
	check "$l: mount -o rdma,port=$nport,vers=$v $server" mount_nfs "$ns" "$server" "$v"
	check "$l: the transport is rdma, port $nport" xprt_is_rdma
	check "$l: the connection's QP is on $dev" rc_qp_on "$dev" "$dns"
	check "$l: the tree copied in (cp -a)" cp -a "$src" "$mnt/$t"
	check "$l: the server's copy is the tree" same_tree "$src" "$exp/$t"
	check "$l: umount" umount "$mnt"
	check "$l: mounted again" mount_nfs "$ns" "$server" "$v"
	check "$l: read back over NFS, the tree" same_tree "$src" "$mnt/$t"
	check "$l: files written on the server read back" \
		cmp "$exp/hello" "$mnt/hello"
	check "$l: rm -r of the tree, gone on the server" eval \
		"rm -r '$mnt/$t' && test ! -e '$exp/$t'"
	check "$l: umount again" umount "$mnt"
	tx1=$(wire_stat "$dev" tx_bytes "$dns") rx1=$(wire_stat "$dev" rx_bytes "$dns")
	check "$l: $dev moved the tree ($((tx1 - tx0)) B out, $((rx1 - rx0)) B in, tree $tree_bytes B)" \
		test $((tx1 - tx0)) -ge "$tree_bytes" -a $((rx1 - rx0)) -ge "$tree_bytes"
}

# fio_nfs LABEL FIO-ARGS...: fio in $mnt, direct I/O, exit status and its
# JSON's error fields checked (as nvmeof.sh).
fio_nfs() {
	local l=$1 rc=0; shift
	(cd "$out" && timeout 120 fio --name=n --directory="$mnt" --direct=1 \
		--ioengine=libaio --output-format=json --output="$out/fio.json" \
		--verify=crc32c --do_verify=1 --verify_fatal=1 "$@") \
		>"$out/fio.err" 2>&1 || rc=$?
	if [ "$rc" = 0 ] && python3 - "$out/fio.json" >"$out/fio.sum" 2>&1 <<'PY'
import json, sys
t = open(sys.argv[1]).read()
d = json.loads(t[t.index("{"):])
bad = [j["jobname"] for j in d["jobs"] if j["error"]]
w = sum(j["write"]["io_kbytes"] for j in d["jobs"])
r = sum(j["read"]["io_kbytes"] for j in d["jobs"])
print("wrote %d KiB, read %d KiB" % (w, r))
sys.exit(bool(bad) or w == 0 or r < w)
PY
	then ok "$l ($(cat "$out/fio.sum"))"
	else
		sed 's/^/# /' "$out/fio.err" "$out/fio.sum" 2>/dev/null | head -n 20
		nok "$l (fio exit $rc)"
	fi
}

echo "TAP version 13"
rdma dev show shca0 >/dev/null 2>&1 && had_shca0=1
check "modprobe nfsd rpcrdma nfsv3 nfsv4" modprobe -a nfsd rpcrdma nfsv3 nfsv4
# shellcheck disable=SC2016 # eval expands them
check "the tree made" eval 'make_tree "$src" >"$out/tree_bytes"'
tree_bytes=$(cat "$out/tree_bytes" 2>/dev/null || echo 0)
check "server: exported, nfsd on rdma $nport" server_start
mkdir -p "$mnt"
# shellcheck disable=SC2016 # eval expands it
check "server: a file written on its side" eval 'echo "from the server" >"$exp/hello"'

# rdma_cm's REQ to a port nobody listens on is rejected: mount fails fast.
check "a mount to RDMA port $((nport + 1)), where no nfsd listens, fails" eval "
	! timeout 60 mount -t nfs -o rdma,port=$((nport + 1)),vers=4.2,retry=0 \
		198.18.0.1:/ '$mnt' && ! mountpoint -q '$mnt'"

# --- shca0 to itself.
path_rows shca0 - 198.18.0.1 4.2 shca0
path_rows shca0 - 198.18.0.1 3 shca0

check "shca0: mounted for I/O" mount_nfs - 198.18.0.1 4.2
fio_nfs "shca0: fio random 4 KiB write + verify, O_DIRECT, iodepth 16, 2 jobs" \
	--rw=randwrite --bs=4k --iodepth=16 --size=8m --numjobs=2
fio_nfs "shca0: fio sequential 1 MiB write + verify, O_DIRECT, iodepth 4" \
	--rw=write --bs=1m --iodepth=4 --size=32m

# A writer of 256 MiB at most (on a failed mount that is the guest's tmpfs).
dd if=/dev/zero of="$mnt/killed" bs=64k count=4096 oflag=direct 2>/dev/null &
ddp=$!
sleep 1
check "shca0: a writer alive mid-file" kill -0 "$ddp"
kill -9 "$ddp" 2>/dev/null
{ wait "$ddp"; } 2>/dev/null
check "shca0: it wrote some of the file before it died" test -s "$exp/killed"
check "shca0: rm and umount after the kill" eval "rm -f '$mnt/killed' && umount '$mnt'"

# The server restarted under I/O: NFSv3 keeps no state, so the client
# only has to reconnect (a new QP) and resend what was in flight.
check "shca0: mounted (NFSv3) for the restart" mount_nfs - 198.18.0.1 3
(cd "$out" && exec timeout 120 fio --name=r --directory="$mnt" --direct=1 \
	--ioengine=libaio --rw=write --bs=64k --iodepth=4 --size=16m --rate=2m \
	--verify=crc32c --do_verify=1 --verify_fatal=1 --output-format=json \
	--output="$out/fio-r.json") >"$out/fio-r.err" 2>&1 &
fiop=$!
sleep 2
check "shca0: nfsd stopped under I/O" rpc.nfsd 0
check "shca0: no RC QP left on shca0 with nfsd stopped" no_rc_qp_on shca0
sleep 1
check "shca0: nfsd started again" nfsd_up
rc=0
wait "$fiop" || rc=$?
if [ $rc = 0 ] && grep -q '"error" : 0' "$out/fio-r.json" &&
   ! grep -q '"error" : [1-9]' "$out/fio-r.json"; then
	ok "shca0: the I/O across the restart completed and verified"
else
	sed 's/^/# /' "$out/fio-r.err" | head -n 20
	nok "shca0: the I/O across the restart completed and verified (exit $rc)"
fi
check "shca0: umount after the restart" umount "$mnt"

# --- shca0 to shca1: the client in netns "near" with veth1 and shca1.
check "shca1 on veth1 in netns near" eval 'wire_bed_ns near veth1 198.18.0.2 shca1'
path_rows shca1 near 198.18.0.1 4.2 shca1 near
check "shca1 deleted, veth1 home" eval \
	'near rdma link del shca1 && ip -n near link set veth1 netns $$ &&
	 ip netns del near && ip addr replace 198.18.0.2/24 dev veth1 &&
	 ip link set veth1 up'

# --- Over the wire: the client on shca9 in netns "far", the server on
# rdma_rxe; every byte crosses veth as RoCEv2 packets.
check "wire bed: shca9 on veth0 in far, rxe0 on veth1" eval 'wire_bed_far && wire_bed_rxe'
wt0=$(wire_stat shca9 wire_tx_bytes far) wr0=$(wire_stat shca9 wire_rx_bytes far)
path_rows wire far 198.18.0.2 4.2 shca9 far
wt=$(($(wire_stat shca9 wire_tx_bytes far) - wt0))
wr=$(($(wire_stat shca9 wire_rx_bytes far) - wr0))
check "wire: shca9's RoCEv2 packets carried the tree ($wt B out, $wr B in)" \
	test "$wt" -ge "$tree_bytes" -a "$wr" -ge "$tree_bytes"

# --- The wire the other way: the server in netns "far" on shca9 (nfsd is
# per network namespace: its own nfsd file system, mountd and threads;
# NFSv4 only, which needs no rpcbind), the client on rdma_rxe. Outside the
# initial namespace nfsd has no client tracking (that needs nfsdcld), so
# its grace period cannot be ended early: the first OPENs wait out 10 s.
check "wire: the server on 198.18.0.2 stopped" rpc.nfsd 0
check "wire: a server in far on shca9, NFSv4 on rdma $nport" far sh -c "
	mount -t nfsd nfsd /proc/fs/nfsd && rpc.mountd --no-udp -N 2 -N 3 &&
	echo 10 >/proc/fs/nfsd/nfsv4gracetime &&
	echo 10 >/proc/fs/nfsd/nfsv4leasetime &&
	rpc.nfsd -N 3 --rdma=$nport 4 &&
	grep -qx 'rdma $nport' /proc/fs/nfsd/portlist"
wt0=$(wire_stat shca9 wire_tx_bytes far) wr0=$(wire_stat shca9 wire_rx_bytes far)
path_rows wire-rxe-client - 198.18.0.1 4.2 shca9 far
wt=$(($(wire_stat shca9 wire_tx_bytes far) - wt0))
wr=$(($(wire_stat shca9 wire_rx_bytes far) - wr0))
check "wire-rxe-client: shca9's RoCEv2 packets carried the tree ($wt B out, $wr B in)" \
	test "$wt" -ge "$tree_bytes" -a "$wr" -ge "$tree_bytes"
check "wire: the server in far stopped" far sh -c \
	'mount -t nfsd nfsd /proc/fs/nfsd && rpc.nfsd 0'
wire_bed_restore

# --- Teardown: the server stops, the modules unload.
check "server stopped" server_stop
check "rmmod nfsv4 nfsv3 nfs" rmmod nfsv4 nfsv3 nfs
check "rmmod nfsd" rmmod nfsd
check "rmmod rpcrdma" rmmod rpcrdma
echo "1..$n"
exit $failed
