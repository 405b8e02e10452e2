# shellcheck shell=bash
# What the scripts of bed (b) share (selftests/bedb/set.sh, nvmeof.sh,
# nfsrdma.sh):
# sourced with the guest's role (a or b) as $1 and $here set. The guests
# meet through files in $SOFTHCA_BEDB_DIR (under build/vm/out, which both
# see read-write): meet NAME waits for the other guest's ROLE.NAME, put
# writes one whole. Each guest makes its one device on eth0 (make_softhca,
# make_rxe: in namespace "h", or with SOFTHCA_BEDB_INIT_NET=1 in the
# initial one), and setup runs a step on both whose one TAP row guest a
# prints. Sets dev, kind, gid and pre (the device's namespace prefix).
# ulp_rounds runs the three rounds of a kernel RDMA user (NVMe-oF, NFS)
# with one end on each guest.
# shellcheck disable=SC2034,SC2154 # the sourcing scripts use and set these
role=${1:-}
case $role in
a) other=b me=198.19.0.1 peer=198.19.0.2 ;;
b) other=a me=198.19.0.2 peer=198.19.0.1 ;;
*) echo "usage: ${0##*/} a|b (in a guest of scripts/vm-pair)" >&2; exit 2 ;;
esac
D=${SOFTHCA_BEDB_DIR:-}
[ -d "$D" ] || { echo "${0##*/}: SOFTHCA_BEDB_DIR is not a directory" >&2; exit 2; }
tmo=${SOFTHCA_PINGPONG_TIMEOUT:-300}
meet_tmo=$((tmo + 120))
out=$(mktemp -d)
port=0
# shellcheck source=selftests/lib/tools.sh
. "$here/../lib/tools.sh"
# shellcheck source=selftests/lib/wire_bed.sh
. "$here/../lib/wire_bed.sh"
trap 'jobs -p | xargs -r kill -9 2>/dev/null; rm -rf "$out"' EXIT

# This guest's device: name, kind (softhca|rxe), GID index, and the
# command prefix of its namespace.
dev='' kind='' gid='' pre=()

say() { [ "$role" = a ] && echo "# $*"; return 0; }

# wait_file FILE SECONDS: FILE exists (the other guest wrote it).
wait_file() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# put NAME TEXT: $D/ROLE.NAME, whole or not at all for the other guest.
put() {
	echo "$2" >"$D/$role.$1.tmp" && mv -f "$D/$role.$1.tmp" "$D/$role.$1"
}

bail() {
	[ "$role" = a ] && echo "Bail out! $*"
	echo "${0##*/} ($role): $*" >&2
	exit 1
}

# meet NAME: both guests got here.
meet() {
	: >"$D/$role.$1"
	wait_file "$D/$other.$1" "$meet_tmo" || bail "guest $other never reached $1"
}

# counts: "tx rx" packets of this guest's device on the wire; all its
# port counters stay in $out/stat.
counts() {
	local tx=wire_tx_packets rx=wire_rx_packets
	[ "$kind" = softhca ] || tx=sent_pkts rx=rcvd_pkts
	"${pre[@]}" rdma statistic show link "$dev/1" >"$out/stat"
	awk -v t=$tx -v r=$rx '{ for (i = 1; i < NF; i++) { if ($i == t) a = $(i + 1); if ($i == r) b = $(i + 1) } }
		END { print a + 0, b + 0 }' "$out/stat"
}

# make_softhca NAME / make_rxe: this guest's device on eth0; 0 once its
# RoCE v2 GID of our address is there.
make_softhca() {
	dev=$1 kind=softhca pre=(ip netns exec h)
	[ "${SOFTHCA_BEDB_INIT_NET:-0}" = 1 ] || {
		gid=$(wire_bed_ns h eth0 "$me" "$dev")
		return
	}
	pre=()
	# UDP 4791 of the initial namespace: ours, so rdma_rxe goes.
	{ ! grep -q '^rdma_rxe ' /proc/modules || rmmod rdma_rxe; } &&
		echo 1 >/sys/module/softhca/parameters/wire_init_net &&
		rdma link add "$dev" type softhca netdev eth0 || return 1
	for _ in $(seq 200); do
		gid=$(gid_index "$dev" "$me") && return 0
		sleep 0.05
	done
	return 1
}

make_rxe() {
	dev=rxe0 kind=rxe pre=()
	rdma link add rxe0 type rxe netdev eth0 || return 1
	for _ in $(seq 200); do
		gid=$(gid_index rxe0 "$me") &&
			[ "$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/"$gid" 2>/dev/null)" = "RoCE v2" ] &&
			return 0
		sleep 0.05
	done
	return 1
}

# setup NAME LABEL CMD...: CMD on this guest; guest a prints one row for
# both and tells b whether to go on.
setup() {
	local name=$1 label=$2 st r
	shift 2
	meet "$name"
	"$@"
	st=$?
	put "$name.res" "$st $dev $gid"
	[ "$role" = b ] || {
		wait_file "$D/b.$name.res" "$meet_tmo" || bail "no setup result from guest b"
		read -r r _ <"$D/b.$name.res"
		if [ "$st" = 0 ] && [ "$r" = 0 ]; then
			ok "$label # a: $dev GID $gid; b: $(cut -d' ' -f2- <"$D/b.$name.res" | sed 's/ / GID /')"
			put "$name.go" 0
		else
			nok "$label # a status $st, b status $r"
			put "$name.go" 1
			bail "the bed is not up"
		fi
		return 0
	}
	wait_file "$D/a.$name.go" "$meet_tmo" || bail "no word from guest a"
	[ "$(cat "$D/a.$name.go")" = 0 ] || bail "the bed is not up"
}

# ulp_round R A_DEV B_DEV A_END B_END: round R of a kernel RDMA user with
# one end on each guest (selftests/bedb/nvmeof.sh, nfsrdma.sh). The
# caller's ulp_a R LABEL prints a's rows, its ulp_b R serves b's part;
# b then waits for a. Last, one row: both devices sent and took packets
# on the wire meanwhile.
ulp_round() {
	local r=$1 label="$2@a $4, $3@b $5" c0 c1 pa pb pk
	meet "round$r"
	read -r -a c0 <<<"$(counts)"
	if [ "$role" = a ]; then
		ulp_a "$r" "$label"
		put "round$r.done" 0
	else
		ulp_b "$r"
		wait_file "$D/a.round$r.done" 900 || bail "no end of round $r from guest a"
	fi
	read -r -a c1 <<<"$(counts)"
	pa=$((c1[0] - c0[0])) pb=$((c1[1] - c0[1]))
	put "round$r.pk" "$pa $pb"
	[ "$role" = a ] || return 0
	wait_file "$D/b.round$r.pk" "$meet_tmo" || bail "no packet counts from guest b"
	pk="$2@a sent $pa took $pb, $3@b sent/took $(cat "$D/b.round$r.pk") packets"
	if [ "$pa" -gt 0 ] && [ "$pb" -gt 0 ] &&
		awk '{ exit !($1 > 0 && $2 > 0) }' "$D/b.round$r.pk"; then
		ok "$label: both devices on the wire # $pk"
	else
		nok "$label: both devices on the wire # $pk"
	fi
}

# ulp_rounds A_END B_END A_UP B_UP B_TO_RXE: the three rounds of such a
# user, its A_END ("host", "client") on a and B_END on b, in the initial
# namespace: rxe0 -> shca1, shca0 -> shca1, shca0 -> rxe0. A_UP and B_UP
# (eval'd) make round 1's devices and start the ends, B_TO_RXE moves b's
# end from shca1 to rxe0. Prints the whole TAP stream on a.
ulp_rounds() {
	local ae=$1 be=$2
	[ "$role" = a ] && echo "TAP version 13"
	say "guest $role: $(uname -r), eth0 $me, peer $peer"
	if [ "$role" = a ]; then
		setup setup1 "bed: rxe0 on a's eth0 ($ae), shca1 on b's eth0 ($be), initial netns" \
			eval "$3"
	else
		setup setup1 "" eval "$4"
	fi
	ulp_round 1 rxe0 shca1 "$ae" "$be"
	if [ "$role" = a ]; then
		setup setup2 "bed: rxe0 on a goes, shca0 on a's eth0 (wire_init_net)" \
			eval 'rdma link del rxe0 && make_softhca shca0'
	else
		setup setup2 "" true
	fi
	ulp_round 2 shca0 shca1 "$ae" "$be"
	if [ "$role" = a ]; then
		setup setup3 "bed: shca1 on b goes, the $be on rxe0 on b's eth0" true
	else
		setup setup3 "" eval "$5"
	fi
	ulp_round 3 shca0 rxe0 "$ae" "$be"
	meet finish
	[ "$role" = a ] && echo "1..$n"
}
