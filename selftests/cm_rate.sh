#!/bin/bash
# TAP: the bench's rdma_cm connection-rate tool (tools/cm_rate.c, the cm
# section of `make bench`) on shca0, so it cannot rot silently: 20 whole
# connections one at a time and 20 with 4 at a time, each carrying one
# SEND the server checks; both sides exit 0, the client reports 20
# connections and no error, the server 20 accepted, established (or,
# their message received, disconnected by a DREQ ib_cm took before the
# RTU) and verified; a client towards a port nobody listens on counts every
# attempt as an error and exits 1; afterwards no cm_id is left.
set -u
here=$(dirname "$0")
tool=$here/../build/tools/cm_rate
tmo=${SOFTHCA_CM_TIMEOUT:-120}
addr=198.18.0.1
port=19900
out=$(mktemp -d)
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"
trap 'jobs -p | xargs -r kill -9 2>/dev/null; rm -rf "$out"' EXIT

# wait_ready FILE PID: the server printed that it listens (10 s at most)
wait_ready() {
	for _ in $(seq 200); do
		grep -q '^cm_rate server listening' "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# pair NAME COUNT PARALLEL: server and client on shca0, both checked
pair() {
	local name=$1 cnt=$2 par=$3 spid c s want
	port=$((port + 1))
	timeout -k 5 "$tmo" "$tool" server -a "$addr" -p "$port" -n "$cnt" -S \
		>"$out/srv" 2>&1 &
	spid=$!
	wait_ready "$out/srv" "$spid" || echo "# $name: server not ready"
	timeout -k 5 "$tmo" "$tool" client -a "$addr" -b "$addr" -p "$port" \
		-n "$cnt" -c "$par" -S >"$out/cli" 2>&1
	c=$?
	wait "$spid"
	s=$?
	# the server's exit status says established + dreq_first = cnt
	want="connections=$cnt accepted=$cnt established=[0-9]* dreq_first=[0-9]* verified=$cnt errors=0"
	if [ "$c" = 0 ] && [ "$s" = 0 ] &&
	   grep -q "^cm_rate connections=$cnt errors=0 parallel=$par .* rate_per_s=[0-9.]* " "$out/cli" &&
	   grep -q "^cm_rate server $want\$" "$out/srv"; then
		ok "$name # $(grep -o 'rate_per_s=[^ ]* setup_median_us=[^ ]*' "$out/cli")"
	else
		echo "# $name: client exit $c, server exit $s (124: timed out)"
		sed 's/^/# client: /' "$out/cli" | tail -n 10
		sed 's/^/# server: /' "$out/srv" | tail -n 10
		nok "$name"
	fi
}

echo "TAP version 13"
echo "1..4"
if [ ! -x "$tool" ]; then
	nok "build/tools/cm_rate built (make tools)"
	exit 1
fi
pair "cm_rate shca0: 20 connections, one at a time, a checked SEND each" 20 1
pair "cm_rate shca0: 20 connections, 4 at a time, a checked SEND each" 20 4

# Nobody listens: every attempt is rejected (or unreachable) and counted.
port=$((port + 1))
timeout -k 5 "$tmo" "$tool" client -a "$addr" -b "$addr" -p "$port" -n 3 -t 5 \
	>"$out/cli" 2>&1
c=$?
if [ "$c" = 1 ] && grep -q '^cm_rate connections=0 errors=3 ' "$out/cli"; then
	ok "cm_rate towards no listener: 3 errors, exit 1 # $(grep '^cm_rate errors:' "$out/cli")"
else
	echo "# client exit $c"
	sed 's/^/# client: /' "$out/cli" | tail -n 10
	nok "cm_rate towards no listener: 3 errors, exit 1"
fi

left=""
for _ in $(seq 200); do
	left=$(rdma res show cm_id 2>&1)
	[ -z "$left" ] && break
	sleep 0.05
done
if [ -z "$left" ]; then
	ok "no cm_id left"
else
	sed 's/^/# /' <<<"$left"
	nok "no cm_id left"
fi
exit $failed
