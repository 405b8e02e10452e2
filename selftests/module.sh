#!/bin/bash
# TAP: module unload/reload with devices present and absent, and with a user
# holding the device open (disassociated; selftests/unload.c has the rest).
# Runs in the VM as root with shca0 on veth0; leaves that state behind.
set -u
ko=${SOFTHCA_KO:-./softhca.ko}
# shellcheck source=selftests/lib/tools.sh
. "$(dirname "$0")/lib/tools.sh"
loaded() { grep -q '^softhca ' /proc/modules; }
no_dev() { ! compgen -G '/sys/class/infiniband/shca*' >/dev/null; }

echo "TAP version 13"
echo "1..19"
check "unload with shca0 and shca1 present" sh -c \
	"rdma link add shca1 type softhca netdev veth1 && rmmod softhca"
check "module gone" sh -c "! grep -q '^softhca ' /proc/modules"
check "devices gone" no_dev
check "reload" insmod "$ko"
check "no device after reload" no_dev
check "add after reload" rdma link add shca0 type softhca netdev veth0
check "unload without devices" sh -c "rdma link del shca0 && rmmod softhca && ! grep -q '^softhca ' /proc/modules"
# The engine's counters are read-only parameters (some summed over CPUs).
check "a counter given at load is refused" sh -c \
	"! insmod $ko engine_wakeups=5 && ! grep -q '^softhca ' /proc/modules"
check "load and add again" sh -c \
	"insmod $ko && rdma link add shca0 type softhca netdev veth0"
# softhca.ko links against softhca_wakefd.ko (the wake fd's fops).
check "softhca_wakefd stays while softhca is loaded" sh -c \
	"! rmmod softhca_wakefd 2>/dev/null && grep -q '^softhca_wakefd ' /proc/modules"
check "the counters read as numbers" sh -c \
	"for c in engine_wakeups engine_wakeups_backoff engine_backoffs; do grep -qxE '[0-9]+' /sys/module/softhca/parameters/\$c || exit 1; done"

# A sleeping engine thread runs at engine_sleep_nice, set as it goes to
# sleep: after a short ping-pong (which wakes it; up to five tries) the
# threads at rest show the new value.
engine_nices() { ps -eo comm=,ni= | awk '$1 ~ /^softhca_engine/ { print $2 }' | sort -u; }
engine_at() { # want: the parameter and every engine thread, within 2 s
	local i
	for i in $(seq 40); do
		[ "$(engine_nices)" = "$1" ] && break
		sleep 0.05
	done
	echo "engine_sleep_nice $(cat /sys/module/softhca/parameters/engine_sleep_nice), threads '$(engine_nices)'"
	[ "$(cat /sys/module/softhca/parameters/engine_sleep_nice)" = "$1" ] && [ "$(engine_nices)" = "$1" ]
}
nice_after_traffic() { # want
	local g i p
	g=$(for f in /sys/class/infiniband/shca0/ports/1/gids/*; do
		[ "$(cat "$f")" = 0000:0000:0000:0000:0000:ffff:c612:0001 ] && echo "${f##*/}"; done | head -n 1)
	for i in 1 2 3 4 5; do
		p=$((18600 + i))
		timeout 20 ibv_rc_pingpong -d shca0 -g "$g" -n 200 -p "$p" >/dev/null 2>&1 &
		sleep 0.3
		timeout 20 ibv_rc_pingpong -d shca0 -g "$g" -n 200 -p "$p" 127.0.0.1 >/dev/null 2>&1
		wait
		engine_at "$1" >/dev/null && break
	done
	engine_at "$1"
}
check "engine threads at rest run at engine_sleep_nice (-20)" engine_at -20
echo 5 >/sys/module/softhca/parameters/engine_sleep_nice
check "engine_sleep_nice 5: taken by the threads' next sleep" nice_after_traffic 5
echo -20 >/sys/module/softhca/parameters/engine_sleep_nice
check "engine_sleep_nice -20 again" nice_after_traffic -20

# A process holding the device open: unload disassociates it, never waits
# for it (selftests/unload.c does this with traffic, wake fds and kills).
/usr/bin/python3 - <<'PY' &
import time
from pyverbs.device import Context
from pyverbs.pd import PD
ctx = Context(name='shca0')
pd = PD(ctx)
open('/tmp/holder.ready', 'w').close()
time.sleep(30)
PY
holder=$!
for _ in $(seq 100); do [ -e /tmp/holder.ready ] && break; sleep 0.1; done
check "holder opened shca0" test -e /tmp/holder.ready
check "unload with a user succeeds" rmmod softhca
check "unload with a user: device gone" no_dev
kill -9 $holder; wait $holder 2>/dev/null
check "unload with a user: reload" insmod "$ko"
check "re-add shca0" rdma link add shca0 type softhca netdev veth0
rm -f /tmp/holder.ready
exit $failed
