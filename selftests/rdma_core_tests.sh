#!/bin/bash
# TAP: rdma-core's own test suite, the pyverbs unittests its maintainers
# run against every provider (tests/run_tests.py upstream; Debian ships
# them in /usr/share/doc/rdma-core/tests, some files gzipped), unmodified,
# on shca0: PDs, MRs (rereg, windows of both types, ODP), CQs and extended
# CQs, completion events, QPs and extended QPs (RC, UC, UD, XRC, SRQ),
# atomics, rdma_cm, parent domains, fork. The suite skips what the device
# lacks (mlx5 and EFA direct verbs, device memory, flow steering, tag
# matching, ...); selftests/lib/rdma_core_tap.py prints a line per test
# that ran, the skip reasons as comments, and a last line that at least
# 100 tests ran. Afterwards shca0 holds only ib_mad's objects.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=/usr/share/doc/rdma-core/tests
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"

if [ ! -f "$src/run_tests.py" ] || ! /usr/bin/python3 -c 'import pyverbs' 2>/dev/null; then
	echo "1..0 # SKIP rdma-core's tests or pyverbs are not installed (scripts/deps)"
	exit 0
fi
# The package is loaded by its directory's name, "tests".
cp -r "$src" "$out/tests" && gunzip -f "$out"/tests/*.gz || {
	echo "Bail out! cannot copy rdma-core's tests from $src"
	exit 1
}
PYTHONDONTWRITEBYTECODE=1 timeout -k 10 900 \
	/usr/bin/python3 "$here/lib/rdma_core_tap.py" "$out/tests" shca0 100 >"$out/tap" 2>"$out/err"
rc=$?
# The suite's TAP lines, then ours after them.
grep -v '^1\.\.' "$out/tap"
n=$(grep -cE '^(not )?ok ' "$out/tap")
failed=0
[ "$rc" = 0 ] || failed=1
[ "$rc" = 0 ] || sed 's/^/# stderr: /' "$out/err" | tail -n 20
# shca0 alone here (only_ib_mad_left wants shca1 too).
shca0_only_ib_mad() {
	for _ in $(seq 200); do
		res=$(rdma res show)
		[ -z "$(rdma res show cm_id 2>&1)" ] && ib_mad_only shca0 && return 0
		sleep 0.05
	done
	sed 's/^/# /' <<<"$res"
	return 1
}
if shca0_only_ib_mad; then
	ok "after the suite: shca0 holds only ib_mad's PD, CQ and GSI QP"
else
	nok "after the suite: shca0 holds only ib_mad's PD, CQ and GSI QP"
fi
echo "1..$n"
exit $failed
