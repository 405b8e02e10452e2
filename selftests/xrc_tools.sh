#!/bin/bash
# TAP: stock XRC traffic through our provider, judged by tools nobody here
# wrote (design.md §8); rdma_rxe has no XRC, so these run softhca only.
# ibv_xsrq_pingpong (XRC domains shared through a file, XRC SRQs, one
# XRC_SEND and one XRC_RECV QP per client; it fails on any bad completion)
# with one client, with two client processes served by one server (a
# message for one client may arrive through the other's target QP: the
# domain, not the QP, decides where it lands), and sleeping on CQ events;
# then perftest's -c XRC latency and bandwidth tests (it drives the
# extended post-send API with ibv_wr_set_xrc_srqn), also over 4 QPs. Each
# on shca0 alone and from shca0 to shca1 (created on veth1 here, deleted
# at the end). Server and client meet over TCP on 127.0.0.1. Last, XRC
# processes SIGKILLed mid-run must leave nothing behind.
#
# Iterations: ibv_xsrq_pingpong -n SOFTHCA_PINGPONG_N / 10 (default 200)
# per client, perftest -n SOFTHCA_PERFTEST_N (default 1000).
set -u
here=$(dirname "$0")
pp_n=$(( ${SOFTHCA_PINGPONG_N:-2000} / 10 ))
pt_n=${SOFTHCA_PERFTEST_N:-1000}
tmo=${SOFTHCA_PINGPONG_TIMEOUT:-300}
out=$(mktemp -d)
port=19800
added_shca1=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"

tools_two_dev_begin || exit 1

# xsrq_two LABEL SDEV SGID CDEV CGID: a server with -c 2 and two clients.
xsrq_two() {
	local label=$1 sd=$2 sg=$3 cd=$4 cg=$5 spid c1 c2 s
	port=$((port + 1))
	timeout -k 5 "$tmo" ibv_xsrq_pingpong -d "$sd" -g "$sg" -c 2 \
		-n "$pp_n" -p "$port" >"$out/srv" 2>&1 &
	spid=$!
	wait_listen "$port" || sleep 1
	timeout -k 5 "$tmo" ibv_xsrq_pingpong -d "$cd" -g "$cg" -n "$pp_n" \
		-p "$port" 127.0.0.1 >"$out/cli1" 2>&1 &
	c1=$!
	timeout -k 5 "$tmo" ibv_xsrq_pingpong -d "$cd" -g "$cg" -n "$pp_n" \
		-p "$port" 127.0.0.1 >"$out/cli2" 2>&1
	c2=$?
	wait "$c1"; c1=$?
	wait "$spid"; s=$?
	if [ "$s$c1$c2" = 000 ] && check_xsrq "$out/srv" >/dev/null &&
	   check_xsrq "$out/cli1" >/dev/null && check_xsrq "$out/cli2" >/dev/null; then
		ok "ibv_xsrq_pingpong $label two clients x $pp_n"
	else
		nok "ibv_xsrq_pingpong $label two clients x $pp_n # exits $s $c1 $c2"
		for f in srv cli1 cli2; do sed "s/^/# $f: /" "$out/$f" | tail -n 10; done
	fi
}

topos=("shca0 shca0 $g0 shca0 $g0" "shca0-shca1 shca1 $g1 shca0 $g0")
pt_runs=("ib_send_lat 2" "ib_write_lat 64" "ib_read_lat 64" "ib_send_bw 4096"
	 "ib_write_bw 65536" "ib_read_bw 65536")
echo "1..$(( ${#topos[@]} * (4 + ${#pt_runs[@]} + 1) + 1 ))"

for t in "${topos[@]}"; do
	read -r label sd sg cd cg <<<"$t"
	for s in 1 65536; do
		run "ibv_xsrq_pingpong $label size $s x $pp_n" check_xsrq \
			ibv_xsrq_pingpong -d "$sd" -g "$sg" -s "$s" -n "$pp_n" -- \
			ibv_xsrq_pingpong -d "$cd" -g "$cg" -s "$s" -n "$pp_n"
	done
	run "ibv_xsrq_pingpong $label events x $pp_n" check_xsrq \
		ibv_xsrq_pingpong -d "$sd" -g "$sg" -e -n "$pp_n" -- \
		ibv_xsrq_pingpong -d "$cd" -g "$cg" -e -n "$pp_n"
	xsrq_two "$label" "$sd" "$sg" "$cd" "$cg"
done
# perftest -c XRC on both topologies (tp_rows: no pingpong rows here).
pp_sizes=()
tp_rows XRC -
for t in "${topos[@]}"; do
	read -r label sd sg cd cg <<<"$t"
	# perftest counts the iterations of every QP: 4 x pt_n.
	run "ib_send_bw -c XRC $label -q 4 size 4096 -n $pt_n" \
		"check_bw 4096 $((4 * pt_n))" \
		ib_send_bw -c XRC -q 4 -d "$sd" -x "$sg" -s 4096 -n "$pt_n" -F -- \
		ib_send_bw -c XRC -q 4 -d "$cd" -x "$cg" -s 4096 -n "$pt_n" -F
done

# Processes killed mid-run, 8 times, at 0.3 to 1.7 s: shca0 -> shca1 XRC
# traffic with the domain shared by file, SRQs, initiators and targets
# open on both devices; afterwards only ib_mad's objects are left.
killed=0
for k in $(seq 8); do
	port=$((port + 1))
	ib_send_bw -c XRC -q 2 -d shca1 -x "$g1" -s 4096 -D 10 -F -p "$port" \
		>"$out/ksrv" 2>&1 &
	spid=$!
	wait_listen "$port" || sleep 1
	ib_send_bw -c XRC -q 2 -d shca0 -x "$g0" -s 4096 -D 10 -F -p "$port" \
		127.0.0.1 >"$out/kcli" 2>&1 &
	cpid=$!
	sleep "$(awk -v k="$k" 'BEGIN { srand(k); printf "%.1f", 0.3 + 1.4 * rand() }')"
	kill -9 "$spid" "$cpid" 2>/dev/null && killed=$((killed + 1))
	wait "$spid" "$cpid" 2>/dev/null
done
if only_ib_mad_left; then
	ok "XRC processes SIGKILLed mid-run 8 times ($killed kills sent): only ib_mad's objects left"
else
	nok "XRC processes SIGKILLed mid-run 8 times: objects left behind"
fi
exit $failed
