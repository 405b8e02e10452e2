# shellcheck shell=bash
# The wire's test bed (Documentation/wire.md "Test beds"), for the TAP
# suites that source it: netns "far" with veth0 (198.18.0.1) and shca9;
# rxe0 on veth1 (198.18.0.2) in the initial namespace; or netns "near"
# with veth1 and shca8. wire_bed_restore puts everything back: veth0 and
# veth1 home with their addresses, shca0 again if the caller set had_shca0.
# Sets g9 / gx / g8: the RoCE v2 GID index of each device's IPv4 address.
# shellcheck disable=SC2034 # g9, gx, g8 are the suites'

far() { ip netns exec far "$@"; }
near() { ip netns exec near "$@"; }

# wire_stat DEV COUNTER [NS]: one port counter of DEV.
wire_stat() {
	${3:+ip netns exec "$3"} rdma statistic show link "$1/1" |
		awk -v c="$2" '{ for (i = 1; i < NF; i++) if ($i == c) print $(i + 1) }'
}

# wire_bed_ns NS VETH IP DEV: VETH into NS with IP, softhca DEV made on it
# there; prints DEV's GID index of IP once ib_core has it.
wire_bed_ns() {
	ip netns add "$1" && ip link set "$2" netns "$1" &&
		ip -n "$1" addr add "$3/24" dev "$2" &&
		ip -n "$1" link set lo up && ip -n "$1" link set "$2" up &&
		ip netns exec "$1" rdma link add "$4" type softhca netdev "$2" || return 1
	for _ in $(seq 200); do
		gid_index "$4" "$3" && return 0
		sleep 0.05
	done
	return 1
}

wire_bed_far() { g9=$(wire_bed_ns far veth0 198.18.0.1 shca9); }

wire_bed_rxe() {
	rdma link add rxe0 type rxe netdev veth1 || return 1
	for _ in $(seq 200); do
		gx=$(gid_index rxe0 198.18.0.2) &&
			[ "$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/"$gx" 2>/dev/null)" = "RoCE v2" ] &&
			return 0
		sleep 0.05
	done
	return 1
}

# veth1 into "near" with shca8 (rxe0 goes first if it is there).
wire_bed_near() {
	rdma link del rxe0 2>/dev/null
	g8=$(wire_bed_ns near veth1 198.18.0.2 shca8)
}

wire_bed_restore() {
	jobs -p | xargs -r kill -9 2>/dev/null
	wait 2>/dev/null
	echo 0 >/sys/module/softhca/parameters/force_wire
	echo 1024 >/sys/module/softhca/parameters/wire_rx_queue_len
	rdma link del rxe0 2>/dev/null
	far rdma link del shca9 2>/dev/null
	near rdma link del shca8 2>/dev/null
	ip -n far link set veth0 netns $$ 2>/dev/null
	ip -n near link set veth1 netns $$ 2>/dev/null
	ip netns del far 2>/dev/null
	ip netns del near 2>/dev/null
	ip addr replace 198.18.0.1/24 dev veth0 && ip link set veth0 up
	ip addr replace 198.18.0.2/24 dev veth1 && ip link set veth1 up
	ip link set veth0 mtu 1500 && ip link set veth1 mtu 1500
	if [ "${had_shca0:-0}" = 1 ] && ! rdma dev show shca0 >/dev/null 2>&1; then
		rdma link add shca0 type softhca netdev veth0
	fi
}

# wire_suite NAME PAIR BINARY [MIN]: a kselftest binary of $bin with
# SOFTHCA_RC_CROSS=PAIR, one TAP row; shca9 must send more than MIN (100)
# wire packets. The
# caller sets bin (build/selftests) and out (a scratch directory).
# shellcheck disable=SC2154
wire_suite() {
	local name=$1 pair=$2 b=$3 min=${4:-100} res tot tx0 tx1
	tx0=$(wire_stat shca9 wire_tx_packets far)
	SOFTHCA_RC_CROSS="$pair" timeout -k 5 900 "$bin/$b" >"$out/suite" 2>&1
	res=$?
	tx1=$(wire_stat shca9 wire_tx_packets far)
	tot=$(grep -E '^# Totals:' "$out/suite" | tail -n 1)
	if [ "$res" = 0 ] && grep -q 'fail:0 ' <<<"$tot" && [ $((tx1 - tx0)) -gt "$min" ]; then
		ok "$name # ${tot#\# }; shca9 sent $((tx1 - tx0)) wire packets"
	else
		echo "# exit $res, shca9 sent $((tx1 - tx0)) wire packets"
		grep -E '^not ok|FAIL|Expected|status=' "$out/suite" | head -n 30 | sed 's/^/# /'
		nok "$name # ${tot#\# }"
	fi
}

# wait_port PORT NS: a TCP listener on PORT in NS ("-": initial).
wait_port() {
	local pre=()
	[ "$2" = - ] || pre=(ip netns exec "$2")
	for _ in $(seq 200); do
		"${pre[@]}" ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	return 1
}

# xrun_watch SECONDS PORT: after SECONDS, what the processes of the run
# on PORT wait in (state, wait channel, kernel stack) and the QPs of both
# devices: printed only if the run is still there.
xrun_watch() {
	local p
	sleep "$1"
	for p in $(pgrep -f -- "-p $2"); do
		[ "$(cat "/proc/$p/comm")" = timeout ] && continue
		echo "pid $p $(cut -d' ' -f3 "/proc/$p/stat") $(cat "/proc/$p/wchan"): $(tr '\0' ' ' <"/proc/$p/cmdline")"
		head -n 8 "/proc/$p/stack"
	done
	rdma res show qp | grep -E 'shca9|rxe0|shca8'
}

# xrun NAME CHECK SRV_NS CLI_NS ADDR SERVER_CMD... -- CLIENT_CMD...: both
# get "-p PORT", the client ADDR last; CHECK a check_* command line
# (selftests/lib/tools.sh); shca9's wire counters must grow. The caller
# sets tmo (seconds per run), port (the last TCP port used) and out.
# shellcheck disable=SC2154
xrun() {
	local name=$1 check=$2 sns=$3 cns=$4 addr=$5; shift 5
	local srv=() cli=() spre=() cpre=() spid c s sum='' r tx0 tx1 wd
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	[ "$sns" = - ] || spre=(ip netns exec "$sns")
	[ "$cns" = - ] || cpre=(ip netns exec "$cns")
	port=$((port + 1))
	tx0=$(wire_stat shca9 wire_tx_packets far)
	timeout -k 5 "$tmo" "${spre[@]}" "${srv[@]}" -p "$port" >"$out/srv" 2>&1 &
	spid=$!
	wait_port "$port" "$sns" || sleep 1
	# Killed at the timeout, a run cannot say where it stopped: look first.
	rm -f "$out/stuck"
	xrun_watch "$((tmo - 5))" "$port" >"$out/stuck" 2>&1 &
	wd=$!
	timeout -k 5 "$tmo" "${cpre[@]}" "${cli[@]}" -p "$port" "$addr" >"$out/cli" 2>&1
	c=$?
	pkill -P "$wd" 2>/dev/null
	kill "$wd" 2>/dev/null
	wait "$spid"
	s=$?
	tx1=$(wire_stat shca9 wire_tx_packets far)
	r=1
	if [ "$c" = 0 ] && [ "$s" = 0 ]; then
		# shellcheck disable=SC2086 # CHECK is a command line
		sum=$($check "$out/cli")
		r=$?
		[ $((tx1 - tx0)) -gt 0 ] || { sum="shca9 sent no wire packet"; r=1; }
	fi
	case $r in
	0) ok "$name # $sum; shca9 sent $((tx1 - tx0)) packets" ;;
	2) ok "$name # SKIP $sum" ;;
	*)
		echo "# $name: client exit $c, server exit $s; $sum"
		sed 's/^/# client: /' "$out/cli" | tail -n 8
		sed 's/^/# server: /' "$out/srv" | tail -n 8
		[ -s "$out/stuck" ] && sed 's/^/# stuck: /' "$out/stuck" | head -n 60
		nok "$name" ;;
	esac
}

# rping_row LABEL SRV_NS CLI_NS SRV_ADDR: rdma_cm's handshake, then 50 pings
# of 1000 bytes rping verifies (-V); NS "-" is the initial one. The caller sets
# port (the last TCP port used) and out.
# shellcheck disable=SC2154
rping_row() {
	local spre=() cpre=() rsp c s
	[ "$2" = - ] || spre=(ip netns exec "$2")
	[ "$3" = - ] || cpre=(ip netns exec "$3")
	port=$((port + 1))
	timeout -k 5 120 "${spre[@]}" rping -s -a "$4" -p "$port" -C 50 -v -V -S 1000 >"$out/rs" 2>&1 &
	rsp=$!
	for _ in $(seq 200); do rdma res show cm_id 2>/dev/null | grep -q LISTEN && break; sleep 0.05; done
	timeout -k 5 120 "${cpre[@]}" rping -c -a "$4" -p "$port" -C 50 -v -V -S 1000 >"$out/rc" 2>&1
	c=$?
	wait "$rsp"
	s=$?
	if [ "$c" = 0 ] && [ "$s" = 0 ] && [ "$(grep -c 'ping data:' "$out/rc")" = 50 ]; then
		ok "$1 # 50 pings of 1000 bytes verified"
	else
		sed 's/^/# client: /' "$out/rc" | tail -n 5
		sed 's/^/# server: /' "$out/rs" | tail -n 5
		nok "$1"
	fi
}

# xpp NAME TOOL SIZE ITERS SRV_NS CLI_NS ADDR SRV_DEV SRV_GID CLI_DEV CLI_GID:
# a stock pingpong (ibv_rc_pingpong, ibv_ud_pingpong: -c, every byte
# checked) of ITERS x SIZE through xrun, its result line checked.
xpp() {
	local name=$1 tool=$2 s=$3 it=$4
	xrun "$name" "check_pingpong $s $it" "$5" "$6" "$7" \
		"$tool" -d "$8" -g "$9" -s "$s" -n "$it" -c -- \
		"$tool" -d "${10}" -g "${11}" -s "$s" -n "$it" -c
}
