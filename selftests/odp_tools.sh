#!/bin/bash
# TAP: stock tools on on-demand paging MRs, judged by tools nobody here
# wrote (design.md §8), each on shca0 alone and from shca0 to shca1
# (created on veth1 here, deleted at the end); server and client meet over
# TCP on 127.0.0.1. Every row also needs the HCA's ODP counters
# (hw_counters, selftests/odp.c) to prove ODP was used:
#
# - ibv_rc_pingpong -c (it checks every received buffer) with -o (an
#   explicit ODP MR over its buffer), -O (implicit ODP: one MR over the
#   whole address space, ibv_reg_mr(NULL, SIZE_MAX)), and each with -P
#   (ibv_advise_mr(PREFETCH_WRITE, FLUSH) of its whole buffer right after
#   registering), at 1 B and 64 KiB. rdma-core 44's ibv_rc_pingpong checks
#   IBV_ODP_SUPPORT and rc_odp_caps SEND | RECV (-O also
#   IBV_ODP_SUPPORT_IMPLICIT), and only prints "Couldn't prefetch MR" and
#   goes on when ibv_advise_mr fails: that line fails the row here. Without
#   -P: requester faults grew on the client's device, responder faults on
#   the server's, pages were mapped on both. With -P the prefetch mapped
#   each buffer before the first message, so neither device faults at all
#   and each buffer's pages were mapped.
# - perftest --odp: ib_send_lat, ib_write_lat, ib_read_lat (8 KiB: two
#   pages), ib_send_bw, ib_write_bw, ib_read_bw (64 KiB), checked as
#   rc_pingpong.sh checks them, and faults as above. What perftest's --odp
#   is (4.5-0.17, Debian 12; src/perftest_resources.c): check_odp_support()
#   reads only odp_caps.per_transport_caps.rc_odp_caps and wants
#   IBV_ODP_SUPPORT_SEND and IBV_ODP_SUPPORT_RECV (not general_caps, not
#   WRITE/READ/ATOMIC); create_single_mr() then registers an explicit
#   IBV_ACCESS_ON_DEMAND MR over its own memalign()ed buffer (filled by the
#   CPU first; no contiguous pages, no implicit ODP, no ibv_advise_mr).
#   perftest_parameters.c refuses --odp with UC ("ODP does not support
#   UC") and with atomics ("ODP does not support ATOMICS for now", exit 1
#   before it opens a device): ib_atomic_bw --odp is tried first, and its
#   rows are skips saying so while perftest refuses it.
# - last, ib_write_bw --odp shca0 -> shca1 SIGKILLed (both processes) 5
#   times at 0.3 to 1.7 s into its run: afterwards only ib_mad's objects
#   are left on either device.
#
# Iterations: ibv_rc_pingpong -n SOFTHCA_PINGPONG_N (default 2000),
# perftest -n SOFTHCA_PERFTEST_N (default 1000).
set -u
here=$(dirname "$0")
pp_n=${SOFTHCA_PINGPONG_N:-2000}
pt_n=${SOFTHCA_PERFTEST_N:-1000}
tmo=${SOFTHCA_PINGPONG_TIMEOUT:-300}
out=$(mktemp -d)
port=20100
added_shca1=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"

tools_two_dev_begin || exit 1

# odp_ctr DEV NAME: a counter of DEV's port 1, -1 if it has none.
odp_ctr() {
	cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2" 2>/dev/null || echo -1
}

# odp_snap DEV: "REQ RESP MAPPED", its odp_faults_req, odp_faults_resp and
# odp_pages_mapped (ib_core caches them 10 ms: read after a pause).
odp_snap() {
	sleep 0.05
	echo "$(odp_ctr "$1" odp_faults_req) $(odp_ctr "$1" odp_faults_resp)" \
		"$(odp_ctr "$1" odp_pages_mapped)"
}

# odp_mark SDEV CDEV: the counters of the server's and the client's device
# before a row, for check_odp.
odp_mark() {
	sdev=$1 cdev=$2
	s0=$(odp_snap "$sdev")
	c0=$(odp_snap "$cdev")
}

# check_odp WANT CHECK... FILE: CHECK (a check_* of lib/tools.sh) on the
# client's output FILE, then the ODP counters against odp_mark's. WANT
# "faults": the client's device raised requester faults, the server's
# responder faults, and both mapped pages; "resp-faults" the same but
# for the client's requester faults (its sends are inline). WANT "prefetched:BYTES" (each
# process prefetched its BYTES buffer): no fault on either device, and at
# least the buffers' pages mapped (both on one device: twice). Either
# output saying "Couldn't prefetch" fails the row.
# shellcheck disable=SC2317 # called through run's CHECK
check_odp() {
	local want=$1 f=${*: -1} sum r ok=1 pages sq0 sr0 sm0 cq0 cr0 cm0 sq sr sm cq cr cm
	shift
	sum=$("$@")
	r=$?
	sum=${sum//$'\n'/; }
	read -r sq0 sr0 sm0 <<<"$s0"
	read -r cq0 cr0 cm0 <<<"$c0"
	read -r sq sr sm <<<"$(odp_snap "$sdev")"
	read -r cq cr cm <<<"$(odp_snap "$cdev")"
	case $want in
	faults)
		[ "$cq" -gt "$cq0" ] && [ "$sr" -gt "$sr0" ] && [ "$sm" -gt "$sm0" ] &&
			[ "$cm" -gt "$cm0" ] || ok=0
		;;
	resp-faults)
		[ "$sr" -gt "$sr0" ] && [ "$sm" -gt "$sm0" ] && [ "$cm" -gt "$cm0" ] ||
			ok=0
		;;
	prefetched:*)
		pages=$(( (${want#prefetched:} + 4095) / 4096 ))
		[ "$sq" = "$sq0" ] && [ "$sr" = "$sr0" ] && [ "$cq" = "$cq0" ] &&
			[ "$cr" = "$cr0" ] || ok=0
		if [ "$sdev" = "$cdev" ]; then
			[ $((sm - sm0)) -ge $((2 * pages)) ] || ok=0
		else
			[ $((sm - sm0)) -ge "$pages" ] && [ $((cm - cm0)) -ge "$pages" ] || ok=0
		fi
		;;
	esac
	if grep -q "Couldn't prefetch" "$f" "$out/srv"; then
		sum="$sum; ibv_advise_mr failed (Couldn't prefetch MR)"
		ok=0
	fi
	echo "$sum; ODP: $cdev requester faults +$((cq - cq0)) responder +$((cr - cr0))" \
		"mapped +$((cm - cm0)), $sdev requester +$((sq - sq0)) responder" \
		"+$((sr - sr0)) mapped +$((sm - sm0))"
	[ "$ok" = 1 ] || return 1
	return "$r"
}

topos=("shca0 shca0 $g0 shca0 $g0" "shca0-shca1 shca1 $g1 shca0 $g0")
pp_sizes=(1 65536)
pp_modes=("-o" "-O" "-o -P" "-O -P")
pt_runs=("ib_send_lat 8192" "ib_write_lat 8192" "ib_read_lat 8192"
	 "ib_send_bw 65536" "ib_write_bw 65536" "ib_read_bw 65536")
echo "1..$(( ${#topos[@]} * (${#pp_modes[@]} * ${#pp_sizes[@]} + ${#pt_runs[@]} + 1) + 1 ))"

# Does this perftest take --odp for atomics? It refuses before it opens a
# device or a socket; one that takes it is a server waiting for a client.
atomic_refused=$(timeout -k 2 5 ib_atomic_bw --odp -d shca0 -x "$g0" -F \
	-p $((port + 900)) 2>&1 </dev/null | grep -m 1 'ODP does not support')

for t in "${topos[@]}"; do
	read -r label sd sg cd cg <<<"$t"
	for m in "${pp_modes[@]}"; do
		for s in "${pp_sizes[@]}"; do
			want=faults
			# A message that fits max_inline_data goes inline
			# (ibv_rc_pingpong asks for it): no requester fault.
			[ "$s" -le 64 ] && want=resp-faults
			case $m in *-P*) want=prefetched:$s ;; esac
			odp_mark "$sd" "$cd"
			# shellcheck disable=SC2086 # $m is options
			run "ibv_rc_pingpong $m $label size $s x $pp_n" \
				"check_odp $want check_pingpong $s $pp_n" \
				ibv_rc_pingpong -d "$sd" -g "$sg" -s "$s" -n "$pp_n" -c $m -- \
				ibv_rc_pingpong -d "$cd" -g "$cg" -s "$s" -n "$pp_n" -c $m
		done
	done
	for r in "${pt_runs[@]}"; do
		read -r p s <<<"$r"
		chk=check_bw
		case $p in *_lat) chk=check_lat ;; esac
		odp_mark "$sd" "$cd"
		run "$p --odp $label size $s -n $pt_n" "check_odp faults $chk $s $pt_n" \
			"$p" --odp -d "$sd" -x "$sg" -s "$s" -n "$pt_n" -F -- \
			"$p" --odp -d "$cd" -x "$cg" -s "$s" -n "$pt_n" -F
	done
	if [ -n "$atomic_refused" ]; then
		ok "ib_atomic_bw --odp $label # SKIP this perftest refuses it: '${atomic_refused# }'"
	else
		odp_mark "$sd" "$cd"
		run "ib_atomic_bw --odp $label -n $pt_n" "check_odp faults check_bw 8 $pt_n" \
			ib_atomic_bw --odp -d "$sd" -x "$sg" -n "$pt_n" -F -- \
			ib_atomic_bw --odp -d "$cd" -x "$cg" -n "$pt_n" -F
	fi
done

# shca0's and shca1's objects as `rdma res show` counts them, and every
# cm_id. Kernel ULPs run before (nvmeof.sh) may keep pooled CQs a while,
# so the kills are compared with what was there before them.
res_counts() {
	rdma res show | grep -E '^[0-9]+: shca[01]:' | sed 's/^[0-9]*: //' | sort
	rdma res show cm_id 2>&1
}

# Processes killed mid-run on ODP MRs (faults in flight), 5 times.
base=$(res_counts)
killed=0
for k in $(seq 5); do
	port=$((port + 1))
	ib_write_bw --odp -d shca1 -x "$g1" -s 65536 -D 10 -F -p "$port" \
		>"$out/ksrv" 2>&1 &
	spid=$!
	wait_listen "$port" || sleep 1
	ib_write_bw --odp -d shca0 -x "$g0" -s 65536 -D 10 -F -p "$port" \
		127.0.0.1 >"$out/kcli" 2>&1 &
	cpid=$!
	sleep "$(awk -v k="$k" 'BEGIN { srand(k); printf "%.1f", 0.3 + 1.4 * rand() }')"
	kill -9 "$spid" "$cpid" 2>/dev/null && killed=$((killed + 1))
	wait "$spid" "$cpid" 2>/dev/null
done
for _ in $(seq 200); do
	[ "$(res_counts)" = "$base" ] && break
	sleep 0.05
done
now=$(res_counts)
if [ "$now" = "$base" ] && ! grep -q 'ctx [1-9]' <<<"$now"; then
	ok "ODP processes SIGKILLed mid-run 5 times ($killed kills sent): every object of theirs gone, no user context left"
else
	awk '{ print "# before: " $0 }' <<<"$base"
	awk '{ print "# after:  " $0 }' <<<"$now"
	nok "ODP processes SIGKILLed mid-run 5 times: objects left behind"
fi
exit $failed
