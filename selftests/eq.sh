#!/bin/bash
# TAP: event queues and their interrupt vectors (Documentation/events.md),
# driven through the debugfs inject file (GEN_EQE) before any data path:
# named vectors in /proc/interrupts, counts that move, smp_affinity honoured,
# the MSI-X mask, unknown CQNs and types counted, EQ overflow reported and
# recovered, async events (build/selftests/async_events), injection storms
# during `rmmod softhca`. Runs in the VM as root with shca0 on veth0; leaves
# that state behind.
set -u
ko=${SOFTHCA_KO:-./softhca.ko}
dev=shca0
dbg=/sys/kernel/debug/softhca/$dev
# shellcheck source=selftests/lib/tools.sh
. "$(dirname "$0")/lib/tools.sh"
skip() { n=$((n + 1)); echo "ok $n $* # SKIP"; }

# eqfield EQN KEY: a key=value of the EQ's line in the eqs file.
eqfield() {
	awk -v eqn="eqn=$1" -v key="$2" '$1 == eqn {
		for (i = 1; i <= NF; i++)
			if (index($i, key "=") == 1)
				print substr($i, length(key) + 2) }' "$dbg/eqs"
}
# irqcount IRQ [CPU]: /proc/interrupts count of IRQ, on CPU or summed.
irqcount() {
	awk -v irq="$1:" -v cpu="${2:--1}" -v ncpu="$(nproc)" '
		$1 == irq { s = 0
			for (i = 2; i < 2 + ncpu; i++)
				if (cpu < 0 || i - 2 == cpu) s += $i
			print s }' /proc/interrupts
}
inject() { echo "$*" > "$dbg/inject"; }
# wait_for CMD...: up to 5 s.
wait_for() {
	for _ in $(seq 100); do "$@" && return 0; sleep 0.05; done
	"$@"
}
eq_drained() { [ "$(eqfield "$1" ci)" = "$(eqfield "$1" pi)" ]; }

# A failed test before may have left a link down.
ip link set veth0 up && ip link set veth1 up
ncomp=$(sed -n 's/^num_comp_vectors //p' "$dbg/caps")
ncpu=$(nproc)
echo "TAP version 13"
echo "1..16"

# --- 1. named vectors ----------------------------------------------------
names_ok() {
	local i
	for ((i = 0; i < ncomp; i++)); do
		grep -q " softhca-$dev-comp$i\$" /proc/interrupts || return 1
	done
	grep -q " softhca-$dev-async\$" /proc/interrupts
}
check "/proc/interrupts names softhca-$dev-comp0..$((ncomp - 1)) and -async" names_ok
check "$((ncomp + 1)) EQs, one per vector" \
	test "$(grep -c '^eqn=' "$dbg/eqs")" = $((ncomp + 1))
irqs_match() {
	local eqn irq name
	for eqn in $(sed -n 's/^eqn=\([0-9]*\) .*/\1/p' "$dbg/eqs"); do
		irq=$(eqfield "$eqn" irq)
		name=$(eqfield "$eqn" name)
		grep -q "^ *$irq:.* softhca-$dev-$name\$" /proc/interrupts ||
			return 1
	done
}
check "the eqs file's irq numbers are the named vectors" irqs_match
async=$(sed -n 's/^eqn=\([0-9]*\) name=async .*/\1/p' "$dbg/eqs")
comp0=$(sed -n 's/^eqn=\([0-9]*\) name=comp0 .*/\1/p' "$dbg/eqs")

# --- 2. counts move --------------------------------------------------------
counts_rise() {
	local eqn irq before b_eqes b_test
	for eqn in $(sed -n 's/^eqn=\([0-9]*\) .*/\1/p' "$dbg/eqs"); do
		irq=$(eqfield "$eqn" irq)
		before=$(irqcount "$irq")
		b_eqes=$(eqfield "$eqn" eqes)
		b_test=$(eqfield "$eqn" test_comps)
		for _ in 1 2 3 4 5; do inject "$eqn 0 0"; done
		wait_for eq_drained "$eqn" || return 1
		[ "$(irqcount "$irq")" -gt "$before" ] || { echo "eqn $eqn: irq count did not move"; return 1; }
		[ "$(eqfield "$eqn" eqes)" = $((b_eqes + 5)) ] || { echo "eqn $eqn: eqes"; return 1; }
		# The test CQ's tasklet ran (coalesced: at least once).
		wait_for test "$(eqfield "$eqn" test_comps)" -gt "$b_test" ||
			return 1
	done
}
check "injected EQEs raise the vector, are consumed and reach the tasklet" counts_rise

# --- 3. affinity -----------------------------------------------------------
affinity_to() { # affinity_to EQN CPU: the CPU column of its IRQ rises
	local eqn=$1 cpu=$2 irq other before b_other i
	irq=$(eqfield "$eqn" irq)
	printf '%x\n' $((1 << cpu)) > "/proc/irq/$irq/smp_affinity" || return 1
	[ "$(cat "/proc/irq/$irq/effective_affinity_list")" = "$cpu" ] || {
		echo "effective affinity $(cat "/proc/irq/$irq/effective_affinity_list")"; return 1; }
	[ "$(eqfield "$eqn" cpu)" = "$cpu" ] || return 1
	other=$(( (cpu + 1) % ncpu ))
	before=$(irqcount "$irq" "$cpu")
	b_other=$(irqcount "$irq" "$other")
	for i in $(seq 20); do inject "$eqn 0 0"; done
	wait_for eq_drained "$eqn" || return 1
	[ "$(irqcount "$irq" "$cpu")" -ge $((before + 1)) ] || { echo "CPU$cpu did not rise"; return 1; }
	[ "$(irqcount "$irq" "$other")" = "$b_other" ] || { echo "CPU$other rose"; return 1; }
}
if [ "$ncpu" -ge 2 ]; then
	check "smp_affinity CPU1: comp0's CPU1 column rises, CPU0's does not" affinity_to "$comp0" 1
	check "smp_affinity CPU0: comp0's CPU0 column rises, CPU1's does not" affinity_to "$comp0" 0
	check "smp_affinity CPU1 for the async vector" affinity_to "$async" 1
	check "smp_affinity CPU0 for the async vector" affinity_to "$async" 0
else
	for _ in 1 2 3 4; do skip "affinity needs 2 CPUs"; done
fi

# --- 4. mask ----------------------------------------------------------------
mask_holds() {
	local irq before
	irq=$(eqfield "$comp0" irq)
	inject "disable $comp0"
	before=$(irqcount "$irq")
	inject "$comp0 0 0"
	inject "$comp0 0 0"
	sleep 0.2
	[ "$(irqcount "$irq")" = "$before" ] || { inject "enable $comp0"; echo "handler ran while disabled"; return 1; }
	eq_drained "$comp0" && { inject "enable $comp0"; echo "consumed while disabled"; return 1; }
	inject "enable $comp0"
	wait_for eq_drained "$comp0"
}
check "a disabled vector holds the message until enabled" mask_holds

# --- 5. unknown CQN, unknown type ------------------------------------------
unknown_counted() {
	local u
	u=$(eqfield "$comp0" unknown)
	inject "$comp0 0 0x123456"
	inject "$comp0 0x77 0x42"
	wait_for eq_drained "$comp0" &&
	[ "$(eqfield "$comp0" unknown)" = $((u + 2)) ]
}
check "an unknown CQN and an unknown type are counted" unknown_counted

# --- 6. overflow ------------------------------------------------------------
overflow() {
	local size e o
	size=$(eqfield "$comp0" size)
	e=$(eqfield "$comp0" eqes)
	o=$(eqfield "$comp0" hca_overflows)
	inject "disable $comp0"
	inject "$comp0 0 0 $((size + 100))"
	[ "$(eqfield "$comp0" pi)" -ge "$size" ] || { inject "enable $comp0"; return 1; }
	inject "enable $comp0"
	wait_for eq_drained "$comp0" || return 1
	# size - 1 EQEs and the report were written, 101 dropped.
	[ "$(eqfield "$comp0" hca_overflows)" = $((o + 1)) ] || { echo "hca_overflows"; return 1; }
	[ "$(eqfield "$comp0" overflows)" = "$(eqfield "$comp0" hca_overflows)" ] || { echo "overflows"; return 1; }
	[ "$(eqfield "$comp0" eqes)" = $((e + size)) ] || { echo "eqes $(eqfield "$comp0" eqes)"; return 1; }
	[ "$(eqfield "$comp0" hca_dropped)" -ge 101 ] || { echo "dropped"; return 1; }
	# And it works again.
	e=$(eqfield "$comp0" eqes)
	inject "$comp0 0 0"
	wait_for eq_drained "$comp0" && [ "$(eqfield "$comp0" eqes)" = $((e + 1)) ]
}
check "a full EQ reports EQ_OVERFLOW, drops (counted), never overwrites, recovers" overflow
check "the overflow was reported in dmesg" sh -c "dmesg | grep -q 'completion EQ $comp0 overflowed'"

# --- 7. latency (diagnostic) -----------------------------------------------
# raise -> handler and raise -> tasklet of 200 single events on comp0
# (CPU0), each waited for: writer on CPU0 (local irq_work) and on CPU1 (IPI,
# then irq_work).
lat() { # lat CPU
	inject reset
	taskset -c "$1" sh -c "echo 'time $comp0 200' > $dbg/inject"
	echo "# writer on CPU$1: $(grep "^eqn=$comp0 " "$dbg/eqs" | grep -o 'lat_.*')"
}
if [ "$ncpu" -ge 2 ]; then
	echo 1 > "/proc/irq/$(eqfield "$comp0" irq)/smp_affinity"
	lat 0
	lat 1
fi

# --- 8. async events, by a user process -----------------------------------
bin=build/selftests/async_events
if [ -x "$bin" ]; then
	check "async events (PORT_ERR/ACTIVE, DEVICE_FATAL) reach user space" "$bin"
else
	skip "no $bin (make selftests)"
fi

# --- 9. injection storms during rmmod, 20 times ----------------------------
# An inject write in flight pins the module (rmmod says EBUSY), so the
# injectors pause between writes and rmmod retries; what races with the
# unload is everything a write leaves behind: EQEs, IPIs, irq_work, tasklets.
# Every fourth round instead unloads with the vectors disabled and full EQs.
eqns_of() { sed -n 's/^eqn=\([0-9]*\) .*/\1/p' "/sys/kernel/debug/softhca/$1/eqs"; }
storm_round() {
	local round=$1 d eqn pids='' irq tries=0 f stop flap
	grep -q '^softhca ' /proc/modules || insmod "$ko" || return 1
	[ -e /sys/class/infiniband/$dev ] ||
		rdma link add $dev type softhca netdev veth0 || return 1
	[ -e /sys/class/infiniband/shca1 ] ||
		rdma link add shca1 type softhca netdev veth1 || return 1
	if [ $((round % 4)) = 0 ]; then
		for d in $dev shca1; do
			f=/sys/kernel/debug/softhca/$d/inject
			for eqn in $(eqns_of $d); do
				echo "disable $eqn" > $f && echo "$eqn 0 0 300" > $f ||
					return 1
			done
		done
		rmmod softhca || return 1
		return 0
	fi
	for d in $dev shca1; do
		f=/sys/kernel/debug/softhca/$d/inject
		( eqns=$(eqns_of $d)
		  while :; do
			for eqn in $eqns; do
				echo "$eqn 0 0 200" > $f || exit 0
			done
			sleep 0.05
		  done ) 2>/dev/null &
		pids="$pids $!"
	done
	irq=$(eqfield "$comp0" irq)
	( while printf 1 > /proc/irq/$irq/smp_affinity &&
		printf 2 > /proc/irq/$irq/smp_affinity; do sleep 0.05; done ) 2>/dev/null &
	pids="$pids $!"
	# Stopped by a file, not a signal: a killed loop leaves its last
	# "ip link set veth1 down" running, which could land after the
	# "up" below and leave veth0 without carrier for the next suites.
	stop=$(mktemp -u)
	( while [ ! -e "$stop" ] && ip link set veth1 down &&
		ip link set veth1 up; do :; done ) 2>/dev/null &
	flap=$!
	sleep 0.3
	until rmmod softhca 2>/dev/null; do
		tries=$((tries + 1))
		[ $tries -lt 200 ] || { echo "round $round: rmmod kept failing"; break; }
		sleep 0.02
	done
	kill $pids 2>/dev/null
	touch "$stop"
	wait $pids $flap 2>/dev/null
	rm -f "$stop"
	ip link set veth1 up
	[ $tries -lt 200 ] || return 1
	! grep -q '^softhca ' /proc/modules || { echo "round $round: still loaded"; return 1; }
}
storm_rmmod() {
	local round
	for round in $(seq 20); do
		storm_round $round || { echo "round $round failed"; return 1; }
	done
	insmod "$ko" && rdma link add $dev type softhca netdev veth0
}
restore() {
	grep -q '^softhca ' /proc/modules || insmod "$ko"
	[ -e /sys/class/infiniband/$dev ] || rdma link add $dev type softhca netdev veth0
	[ ! -e /sys/class/infiniband/shca1 ] || rdma link del shca1
}
check "injection storms (+ affinity and port flapping) during rmmod, 20 rounds" storm_rmmod
restore
check "$dev is back with its vectors" names_ok
# The suites after this one need the link as they found it.
port_active() {
	local i
	for i in $(seq 100); do
		grep -q ACTIVE /sys/class/infiniband/$dev/ports/1/state && return 0
		sleep 0.05
	done
	cat /sys/class/infiniband/$dev/ports/1/state; ip -br link
	return 1
}
check "veth1 up, $dev's port ACTIVE again" port_active

exit $failed
