# shellcheck shell=bash
# Helpers for the TAP scripts that run stock tools (ibv_rc_pingpong,
# perftest, the rdma_cm tools) between two processes, and the TAP rows
# (ok, nok, check) of every shell suite: sourced, not run. The callers of
# its runs set $out (a scratch directory), $tmo (seconds per run) and
# $port (the last TCP port used); no caller defines these names again.
n=0 failed=0

ok() { n=$((n + 1)); echo "ok $n $*"; }
nok() { n=$((n + 1)); failed=1; echo "not ok $n $*"; }
# check NAME CMD...: one row, ok when CMD succeeds; else the first 30
# lines of CMD's output as diagnostics.
check() {
	local name=$1 log
	shift
	log=$(mktemp)
	if "$@" >"$log" 2>&1; then ok "$name"; else
		sed 's/^/# /' "$log" | head -n 30
		nok "$name"
	fi
	rm -f "$log"
}

# gid_index DEV IPV4: index of the RoCE v2 GID ::ffff:IPV4 on port 1.
gid_index() {
	local dev=$1 ip=$2 a b c d want f i
	IFS=. read -r a b c d <<<"$ip"
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d")
	for f in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
		i=${f##*/}
		if [ "$(cat "$f" 2>/dev/null)" = "$want" ] &&
		   [ "$(cat /sys/class/infiniband/"$dev"/ports/1/gid_attrs/types/"$i" 2>/dev/null)" = "RoCE v2" ]; then
			echo "$i"
			return 0
		fi
	done
	return 1
}

# shca1_gids: shca1 on veth1 unless it exists (then added_shca1=1, for
# the caller's cleanup), and g0 / g1 the RoCE v2 GIDs of 198.18.0.1 on
# shca0 and 198.18.0.2 on shca1; if they do not appear, a failing plan.
shca1_gids() {
	if ! rdma dev show shca1 >/dev/null 2>&1; then
		rdma link add shca1 type "${SOFTHCA_RC_LINK_TYPE:-softhca}" \
			netdev veth1 && added_shca1=1
	fi
	g0='' g1=''
	for _ in $(seq 100); do
		g0=$(gid_index shca0 198.18.0.1) &&
			g1=$(gid_index shca1 198.18.0.2) && return 0
		sleep 0.05
	done
	echo "1..1"
	nok "RoCE v2 GIDs of 198.18.0.1 on shca0 and 198.18.0.2 on shca1 (got '$g0' '$g1')"
	return 1
}

# tools_two_dev_begin: the start the two-device tool suites share: an EXIT
# trap (tools_cleanup: what runs is killed, shca1 deleted if the suite
# added it, $out removed), the TAP header, accept_local checked (veth0 and
# veth1 share a namespace: without it the ARP reply between their
# addresses comes from a local address and is dropped, so ib_core cannot
# resolve shca0 <-> shca1; scripts/vm-run turns it on), then shca1_gids.
# 1, having said why, if the bed is not there.
tools_two_dev_begin() {
	trap tools_cleanup EXIT
	echo "TAP version 13"
	if [ "$(cat /proc/sys/net/ipv4/conf/all/accept_local)" != 1 ]; then
		echo "Bail out! net.ipv4.conf.all.accept_local is not 1 (scripts/vm-run sets it)"
		return 1
	fi
	shca1_gids
}
# shellcheck disable=SC2317 # the EXIT trap's
tools_cleanup() {
	jobs -p | xargs -r kill -9 2>/dev/null
	[ "$added_shca1" = 1 ] && rdma link del shca1
	rm -rf "$out"
}

# tp_rows TP PINGPONG: the rows of a transport's stock tools, on shca0
# alone and from shca0 to shca1: PINGPONG -c (it checks every buffer) at
# each size of pp_sizes x pp_n, then perftest's "TEST SIZE" of pt_runs
# with -c TP x pt_n (the caller sets pp_sizes, pt_runs, pp_n and pt_n,
# and g0 / g1 through tools_two_dev_begin). 2 x (both lists) rows.
tp_rows() {
	local tp=$1 pp=$2 t label sd sg cd cg s r p chk
	local topos=("shca0 shca0 $g0 shca0 $g0" "shca0-shca1 shca1 $g1 shca0 $g0")

	for t in "${topos[@]}"; do
		read -r label sd sg cd cg <<<"$t"
		for s in "${pp_sizes[@]}"; do
			run "$pp $label size $s x $pp_n" "check_pingpong $s $pp_n" \
				"$pp" -d "$sd" -g "$sg" -s "$s" -n "$pp_n" -c -- \
				"$pp" -d "$cd" -g "$cg" -s "$s" -n "$pp_n" -c
		done
	done
	for t in "${topos[@]}"; do
		read -r label sd sg cd cg <<<"$t"
		for r in "${pt_runs[@]}"; do
			read -r p s <<<"$r"
			chk=check_bw
			case $p in *_lat) chk=check_lat ;; esac
			run "$p -c $tp $label size $s -n $pt_n" "$chk $s $pt_n" \
				"$p" -c "$tp" -d "$sd" -x "$sg" -s "$s" -n "$pt_n" -F -- \
				"$p" -c "$tp" -d "$cd" -x "$cg" -s "$s" -n "$pt_n" -F
		done
	done
}

# only_ib_mad_left: within 10 s shca0 and shca1 (both must exist) each
# hold only ib_mad's PD, CQ and GSI QP, and no cm_id exists; else 1, with
# `rdma res` printed.
only_ib_mad_left() {
	local res
	for _ in $(seq 200); do
		res=$(rdma res show)
		if [ -z "$(rdma res show cm_id 2>&1)" ] && ib_mad_only shca0 &&
		   ib_mad_only shca1; then
			return 0
		fi
		sleep 0.05
	done
	sed 's/^/# /' <<<"$res"
	rdma res show cq 2>&1 | sed 's/^/# /'
	rdma res show cm_id 2>&1 | sed 's/^/# /'
	return 1
}
# ib_mad_only DEV: in $res (rdma res show), DEV holds one PD, one QP and
# one CQ, no MR, ctx or SRQ, beside the idle CQs of ib_core's CQ pool: a
# kernel user's ib_cq_pool_get() (ib_isert, nvmet-rdma) leaves them
# cached, ib_core's and used by no QP, until the device goes.
ib_mad_only() {
	local f pool
	read -r -a f <<<"$(grep -E "^[0-9]+: $1:" <<<"$res")"
	[ "${#f[@]}" -ge 14 ] || return 1
	pool=$(rdma res show cq dev "$1" | grep -c 'users 0 .*comm \[ib_core\]')
	[ "${f[3]}" = 1 ] && [ $((f[5] - pool)) = 1 ] && [ "${f[7]}" = 1 ] &&
		[ "${f[9]}" = 0 ] && [ "${f[11]}" = 0 ] && [ "${f[13]}" = 0 ]
}

# port_bytes DEV COUNTER: COUNTER (tx_bytes, rx_bytes) of DEV's port.
port_bytes() {
	rdma statistic show link "$1/1" |
		awk -v c="$2" '{ for (i = 1; i < NF; i++) if ($i == c) print $(i + 1) }'
}

wait_listen() { # port
	for _ in $(seq 200); do
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		sleep 0.05
	done
	return 1
}

# Checks of a client's output: check_* ARGS... FILE prints a summary (the
# reason, for a skip) and returns 0 (good), 2 (complete but no
# measurement: skip) or 1 (bad).

# check_pingpong SIZE ITERS FILE: ibv_rc_pingpong's two result lines,
# "B bytes in S seconds = R Mbit/sec" with B = 2 * SIZE * ITERS, and
# "ITERS iters in S seconds = U usec/iter".
check_pingpong() {
	local size=$1 iters=$2 f=$3 b i
	b=$(sed -n 's/^\([0-9]*\) bytes in .* seconds = .*Mbit\/sec$/\1/p' "$f" | tail -n 1)
	i=$(sed -n 's/^\([0-9]*\) iters in .* seconds = .*usec\/iter$/\1/p' "$f" | tail -n 1)
	grep -E 'iters in' "$f" | tail -n 1
	[ "$b" = $((2 * size * iters)) ] && [ "$i" = "$iters" ] || return 1
}

# check_xsrq FILE: ibv_xsrq_pingpong's last line is "success" only if every
# completion of every test was IBV_WC_SUCCESS and went to a QP it knows.
check_xsrq() {
	tail -n 1 "$1"
	[ "$(tail -n 1 "$1")" = success ]
}

# check_pingpong_ts SIZE ITERS FILE: check_pingpong, and ibv_rc_pingpong
# -t's receive completion deltas (device clock, 1 GHz: ns) sane: all
# three printed, 0 < min <= average <= max < 10 s.
check_pingpong_ts() {
	local f=$3 max min avg
	check_pingpong "$@" || return 1
	max=$(sed -n 's/^Max receive completion clock cycles = \([0-9]*\)$/\1/p' "$f")
	min=$(sed -n 's/^Min receive completion clock cycles = \([0-9]*\)$/\1/p' "$f")
	avg=$(sed -n 's/^Average receive completion clock cycles = \([0-9.]*\)$/\1/p' "$f")
	echo "receive completion deltas min $min avg $avg max $max ns"
	[ -n "$max" ] && [ -n "$min" ] && [ -n "$avg" ] || return 1
	awk -v a="$min" -v b="$avg" -v c="$max" \
		'BEGIN { exit !(a > 0 && a <= b && b <= c && c < 1e10) }'
}

# check_lat SIZE ITERS FILE: perftest latency result line "bytes iterations
# t_min t_max t_typical t_avg ...": SIZE and ITERS as asked, t_min > 0,
# t_min <= t_typical, t_avg <= t_max. A complete run without a measurement
# is a skip: all zero (perftest's clock saw nothing), or inf (its CPU
# frequency estimate came out 0 on a loaded host, which it divides by).
check_lat() {
	local size=$1 iters=$2 f=$3 line
	line=$(grep -E '^ *[0-9]+ +[0-9]+ +([0-9]+\.[0-9]+|inf)' "$f" | tail -n 1)
	[ -n "$line" ] || return 1
	echo "$line" | awk -v s="$size" -v n="$iters" '{ exit !($1 == s && $2 == n) }' || {
		echo "$line" | tr -s ' \t' ' ' | sed 's/^ //'
		return 1
	}
	if echo "$line" | grep -Eq '(^|[[:space:]])-?(inf|nan)([[:space:]]|$)'; then
		echo "perftest printed inf: its CPU frequency estimate failed (host too loaded)"
		return 2
	fi
	if echo "$line" | awk '{ exit !($3 == 0 && $4 == 0) }'; then
		echo "result 0.00: too slow to measure on this host"
		return 2
	fi
	echo "$line" | tr -s ' \t' ' ' | sed 's/^ //'
	echo "$line" | awk -v s="$size" -v n="$iters" '{
		exit !($1 == s && $2 == n && $3 > 0 && $3 <= $4 &&
		       $5 >= $3 && $5 <= $4 && $6 >= $3 && $6 <= $4) }'
}

# check_bw SIZE ITERS FILE: perftest bandwidth result line "bytes
# iterations BW_peak BW_average MsgRate": SIZE and ITERS as asked,
# 0 < BW_average <= BW_peak, a rate > 0. inf or 0.00: a skip, as above.
check_bw() {
	local size=$1 iters=$2 f=$3 line
	line=$(grep -E '^ *[0-9]+ +[0-9]+ +([0-9]+\.[0-9]+|inf)' "$f" | tail -n 1)
	[ -n "$line" ] || return 1
	echo "$line" | tr -s ' \t' ' ' | sed 's/^ //'
	echo "$line" | awk -v s="$size" -v n="$iters" '{ exit !($1 == s && $2 == n) }' ||
		return 1
	if echo "$line" | grep -Eq '(^|[[:space:]])-?(inf|nan)([[:space:]]|$)'; then
		echo "perftest printed inf: its CPU frequency estimate failed (host too loaded)"
		return 2
	fi
	if echo "$line" | awk '{ exit !($3 == 0 || $4 == 0) }'; then
		echo "result 0.00: too slow to measure on this host"
		return 2
	fi
	echo "$line" | awk '{ exit !($4 > 0 && $4 <= $3 * 1.0001 && $5 > 0) }'
}

# check_ucx_final ITERS FILE: ucx_perftest's "Final:" line (iterations,
# latency or overhead at the median, average and overall, bandwidth and
# message rate, each average and overall): ITERS iterations, an average
# time and a message rate above 0. ucx_perftest checks no data.
check_ucx_final() {
	local line
	line=$(grep '^Final:' "$2" | tail -n 1)
	[ -n "$line" ] || return 1
	tr -s ' ' <<<"$line" | cut -d' ' -f2-
	awk -v n="$1" '{ exit !($2 == n && $4 > 0 && $9 > 0) }' <<<"$line"
}

# run NAME CHECK SERVER_CMD... -- CLIENT_CMD...
# Both commands get "-p PORT"; the client also gets 127.0.0.1 at the end.
# CHECK is a check_* command line; the client's output file is appended.
run() {
	local name=$1 check=$2; shift 2
	local srv=() cli=() s c spid t0 t sum r
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	port=$((port + 1))
	timeout -k 5 "$tmo" "${srv[@]}" -p "$port" >"$out/srv" 2>&1 &
	spid=$!
	if ! wait_listen "$port"; then
		sleep 1
	fi
	t0=$(date +%s.%N)
	timeout -k 5 "$tmo" "${cli[@]}" -p "$port" 127.0.0.1 >"$out/cli" 2>&1
	c=$?
	wait "$spid"
	s=$?
	t=$(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)")
	r=1
	if [ "$c" = 0 ] && [ "$s" = 0 ]; then
		# shellcheck disable=SC2086 # CHECK is a command line
		sum=$($check "$out/cli")
		r=$?
	fi
	case $r in
	0) ok "$name # ${t}s: $sum" ;;
	2) ok "$name # SKIP after ${t}s: $sum" ;;
	*)
		echo "# $name: client exit $c, server exit $s (124: timed out after ${tmo}s)"
		[ "$c" = 0 ] && [ "$s" = 0 ] && echo "# result not as expected: $sum"
		sed 's/^/# client: /' "$out/cli" | tail -n 25
		sed 's/^/# server: /' "$out/srv" | tail -n 25
		nok "$name"
		;;
	esac
}
