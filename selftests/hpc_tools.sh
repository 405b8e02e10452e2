#!/bin/bash
# TAP: UCX, Open MPI and libfabric on softhca, run as their users run them
# (design.md §8: judged by tools nobody here wrote). UCX takes softhca as any verbs
# device: its rc_verbs and ud_verbs transports (the mlx5 ones need
# mlx5dv). Only those and "self" are allowed (UCX_TLS), so nothing goes
# over shared memory or TCP: every row also checks that softhca's port
# counters moved as much as the run needs.
# - ucx_info lists both transports on shca0:1 and shca1:1;
# - ucx_perftest's UCT tests (the client sends its parameters, so both
#   processes use shca1): rc_verbs active messages, puts, gets and
#   atomics, ud_verbs active messages;
# - its UCP tests between a server on shca0 and a client on shca1: tag
#   matching (eager and rendezvous), put, get, stream, active messages and
#   atomics over RC (with UD for UCX's wire-up), then over UD alone;
# - Open MPI (pml ucx, osc ucx) runs selftests/lib/mpi_check.py with rank
#   0 on shca0 and rank 1 on shca1: 1 B to 4 MiB each way with every byte
#   checked, an allreduce, a one-sided Put and Get; over RC, then UD;
# - libfabric's verbs provider (as Intel MPI, MPICH's ch4:ofi and
#   fabtests take it): fi_pingpong -c (it checks every buffer) over its
#   MSG endpoints (rdma_cm, RC), RDM (ofi_rxm over RC, messages and
#   tagged) and DGRAM (UD), both processes on shca0 (the client reaches
#   198.18.0.1, which rdma_cm resolves to shca0).
# ucx_perftest checks no data; mpi_check.py and fi_pingpong -c do.
set -u
here=$(dirname "$0")
tmo=${SOFTHCA_PINGPONG_TIMEOUT:-300}
out=$(mktemp -d)
port=20300
added_shca1=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"

tools_two_dev_begin || exit 1

tls_rc=rc_verbs,ud_verbs,self
tls_ud=ud_verbs,self
uct_tests=("rc_verbs am_lat 8 2000" "rc_verbs put_lat 8 2000"
	"rc_verbs add_lat 8 2000" "rc_verbs fadd 8 2000" "rc_verbs cswap 8 2000"
	"rc_verbs get 65536 200 -D zcopy" "rc_verbs am_bw 4096 1000 -D bcopy"
	"rc_verbs put_bw 65536 200 -D zcopy" "rc_verbs add_mr 8 2000"
	"ud_verbs am_lat 8 2000" "ud_verbs am_bw 512 1000 -D bcopy")
ucp_tests=("$tls_rc tag_lat 8 2000" "$tls_rc tag_bw 1048576 50"
	"$tls_rc ucp_put_bw 65536 200" "$tls_rc ucp_get 65536 200"
	"$tls_rc stream_bw 4096 1000" "$tls_rc ucp_am_bw 8192 500"
	"$tls_rc ucp_fadd 8 2000" "$tls_rc ucp_cswap 8 2000"
	"$tls_ud tag_lat 8 2000" "$tls_ud tag_bw 65536 200"
	"$tls_ud ucp_put_bw 65536 200" "$tls_ud ucp_get 65536 200")
fab_tests=("4096 -p verbs;ofi_rxm -e rdm" "65536 -p verbs;ofi_rxm -e rdm"
	"4096 -p verbs;ofi_rxm -e rdm -m tagged" "16384 -p verbs -e msg"
	"1000 -p verbs -e dgram")
echo "1..$(( 1 + ${#uct_tests[@]} + ${#ucp_tests[@]} + 2 + ${#fab_tests[@]} ))"

# The two ports' sum of COUNTER.
ports_sum() {
	echo $(( $(port_bytes shca0 "$1") + $(port_bytes shca1 "$1") ))
}

# shellcheck disable=SC2317 # run() calls it
# check_ucx ITERS BYTES FILE: check_ucx_final's verdict on the run, and
# since the row began softhca sent ITERS requests and BYTES bytes or more.
check_ucx() {
	local iters=$1 bytes=$2 f=$3 sum r req sent
	sum=$(check_ucx_final "$iters" "$f")
	r=$?
	req=$(( $(ports_sum tx_requests) - req0 ))
	sent=$(( $(ports_sum tx_bytes) - sent0 ))
	echo "$sum; softhca: $req requests, $sent B"
	[ "$r" = 0 ] && [ "$req" -ge "$iters" ] && [ "$sent" -ge "$bytes" ]
}

# bytes_of TEST SIZE ITERS: what a run must at least move (atomics: their
# 8 B operands; a get's data comes back as READ responses).
bytes_of() {
	case $1 in
	*add* | *swap*) echo $(( 8 * $3 )) ;;
	*) echo $(( $2 * $3 )) ;;
	esac
}

row_start() { req0=$(ports_sum tx_requests) sent0=$(ports_sum tx_bytes); }

# shellcheck disable=SC2016 # the inner script's own variables
check "ucx_info: rc_verbs and ud_verbs on shca0:1 and shca1:1" sh -c '
	ucx_info -d >"$0/info" 2>&1 || exit 1
	for d in shca0:1 shca1:1; do
		for t in rc_verbs ud_verbs; do
			awk -v t="$t" -v d="$d" "/Transport:/ { tl = \$3 }
				/Device:/ && tl == t && \$3 == d { f = 1 }
				END { exit !f }" "$0/info" || { echo "no $t on $d"; exit 1; }
		done
	done' "$out"

for r in "${uct_tests[@]}"; do
	read -r tl test size iters extra <<<"$r"
	row_start
	# shellcheck disable=SC2086 # extra: the data layout, or nothing
	run "ucx_perftest UCT $tl $test ${size} B x $iters ${extra:-}" \
		"check_ucx $iters $(bytes_of "$test" "$size" "$iters")" \
		ucx_perftest -- \
		ucx_perftest -d shca1:1 -x "$tl" -t "$test" -s "$size" -n "$iters" \
		-w 100 ${extra:-}
done

for r in "${ucp_tests[@]}"; do
	read -r tls test size iters <<<"$r"
	row_start
	run "ucx_perftest UCP $test ${size} B x $iters, UCX_TLS=$tls, shca1 -> shca0" \
		"check_ucx $iters $(bytes_of "$test" "$size" "$iters")" \
		env UCX_TLS="$tls" UCX_NET_DEVICES=shca0:1 ucx_perftest -- \
		env UCX_TLS="$tls" UCX_NET_DEVICES=shca1:1 ucx_perftest \
		-t "$test" -s "$size" -n "$iters" -w 100
done

# shellcheck disable=SC2317,SC2016 # check() calls it; rankdev's variables
# mpi_run TLS: mpi_check.py in two ranks, rank N on shcaN, through UCX with
# TLS only; then each port must have sent what the checks moved one way.
mpi_run() {
	local tls=$1 least=$(( 3 * 5583924 )) s0 s1
	printf '#!/bin/sh\nUCX_NET_DEVICES=shca${OMPI_COMM_WORLD_RANK}:1 exec "$@"\n' \
		>"$out/rankdev"
	chmod +x "$out/rankdev"
	s0=$(port_bytes shca0 tx_bytes) s1=$(port_bytes shca1 tx_bytes)
	timeout -k 5 "$tmo" mpirun --allow-run-as-root --oversubscribe -np 2 \
		--mca pml ucx --mca osc ucx --mca btl self \
		-x UCX_TLS="$tls" -x UCX_WARN_UNUSED_ENV_VARS=n \
		"$out/rankdev" /usr/bin/python3 "$here/lib/mpi_check.py" || return 1
	s0=$(( $(port_bytes shca0 tx_bytes) - s0 ))
	s1=$(( $(port_bytes shca1 tx_bytes) - s1 ))
	echo "shca0 sent $s0 B, shca1 $s1 B (at least $least each)"
	[ "$s0" -ge "$least" ] && [ "$s1" -ge "$least" ]
}

check "Open MPI over UCX ($tls_rc): mpi_check.py, rank 0 on shca0, rank 1 on shca1" \
	mpi_run "$tls_rc"
check "Open MPI over UCX ($tls_ud): mpi_check.py, rank 0 on shca0, rank 1 on shca1" \
	mpi_run "$tls_ud"
# fab_row SIZE ARGS...: fi_pingpong ARGS -S SIZE -c, 200 round trips, a
# server and a client to 198.18.0.1 (their control connection on -B/-P:
# its -p is the provider); the client's row for SIZE must say 200 sent and
# 200 acknowledged, and softhca must have sent both ways' requests and
# bytes.
fab_row() {
	local size=$1 name="fi_pingpong ${*:2} -S $1 -I 200 -c" spid c s line
	shift
	port=$((port + 1))
	row_start
	timeout -k 5 "$tmo" fi_pingpong "$@" -S "$size" -I 200 -c -B "$port" \
		>"$out/srv" 2>&1 &
	spid=$!
	wait_listen "$port" || sleep 1
	timeout -k 5 "$tmo" fi_pingpong "$@" -S "$size" -I 200 -c -P "$port" \
		198.18.0.1 >"$out/cli" 2>&1
	c=$?
	wait "$spid"
	s=$?
	line=$(grep -E '^[0-9.]+[kmg]? +200 +=200 ' "$out/cli" | tail -n 1)
	if [ "$c" = 0 ] && [ "$s" = 0 ] && [ -n "$line" ] &&
	   [ $(( $(ports_sum tx_requests) - req0 )) -ge 400 ] &&
	   [ $(( $(ports_sum tx_bytes) - sent0 )) -ge $(( 400 * size )) ]; then
		ok "$name # $(tr -s ' ' <<<"$line")"
	else
		echo "# $name: client exit $c, server exit $s, result '$line'"
		sed 's/^/# client: /' "$out/cli" | tail -n 15
		sed 's/^/# server: /' "$out/srv" | tail -n 15
		nok "$name"
	fi
}

for r in "${fab_tests[@]}"; do
	# shellcheck disable=SC2086 # the size, then fi_pingpong's words
	fab_row $r
done
exit $failed
