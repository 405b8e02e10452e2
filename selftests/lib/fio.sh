# shellcheck shell=bash
# fio helpers of the block-storage suites (NVMe-oF, iSER and their bed (b)
# versions): TAP rows (tools.sh's ok and nok) for fio runs checked from
# their JSON, and fio in the background for the failure cases (fio_pid,
# which the caller's EXIT trap kills). The caller sets out (a scratch
# directory).
# shellcheck disable=SC2154 # out: the caller's

# fio_ok JSON MIN_READ_KIB MIN_WRITE_KIB: every job ended with error 0,
# no verify error was reported, and at least this much was read and
# written. fio's JSON has a "error" per job and io_kbytes per direction.
fio_ok() {
	/usr/bin/python3 - "$@" <<'PY'
import json, sys
path, rmin, wmin = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
text = open(path).read()
doc = json.loads(text[text.index("{"):])
r = w = 0
for j in doc["jobs"]:
    if j["error"] != 0:
        sys.exit("job %s: error %d" % (j["jobname"], j["error"]))
    r += j["read"]["io_kbytes"]
    w += j["write"]["io_kbytes"]
print("read %d KiB, wrote %d KiB" % (r, w))
if r < rmin or w < wmin:
    sys.exit("expected at least %d KiB read and %d KiB written" % (rmin, wmin))
PY
}

# run_fio LABEL DEV MIN_R MIN_W FIO-ARGS...: fio in $out (its verify state
# file needs a writable directory), JSON output checked by fio_ok.
run_fio() {
	local label=$1 dev=$2 rmin=$3 wmin=$4 rc=0; shift 4
	rm -f "$out/fio.sum"
	(cd "$out" && timeout 60 fio --name=j --filename="$dev" --direct=1 \
		--ioengine=libaio --output-format=json --output="$out/fio.json" \
		"$@") >"$out/fio.err" 2>&1 || rc=$?
	if [ "$rc" = 0 ] && fio_ok "$out/fio.json" "$rmin" "$wmin" >"$out/fio.sum" 2>&1; then
		ok "$label ($(cat "$out/fio.sum"))"
	else
		sed 's/^/# /' "$out/fio.err" "$out/fio.sum" 2>/dev/null | head -20
		nok "$label (fio exit $rc)"
	fi
}

# The verified I/O every path gets: write then read back each block.
verify_set() { # LABEL DEV
	local l=$1 d=$2 v=(--verify=crc32c --do_verify=1 --verify_fatal=1)
	run_fio "$l: random 4 KiB write + verify, iodepth 16" "$d" 4096 4096 \
		--rw=randwrite --bs=4k --iodepth=16 --size=4m "${v[@]}"
	run_fio "$l: sequential 128 KiB write + verify, iodepth 4" "$d" 16384 16384 \
		--rw=write --bs=128k --iodepth=4 --size=16m "${v[@]}"
	run_fio "$l: random 4 KiB read/write mix + verify" "$d" 1 1 \
		--rw=randrw --bs=4k --iodepth=8 --size=4m "${v[@]}"
	run_fio "$l: sequential 128 KiB read, iodepth 8" "$d" 16384 0 \
		--rw=read --bs=128k --iodepth=8 --size=16m
	run_fio "$l: random 4 KiB read, iodepth 32" "$d" 4096 0 \
		--rw=randread --bs=4k --iodepth=32 --size=4m
}

# fio_bg NAME DEV ARGS...: fio in the background on DEV (fio_pid), its
# JSON in $out/NAME.json, stderr in $out/NAME.err.
fio_pid=
fio_bg() {
	local name=$1 dev=$2
	shift 2
	(cd "$out" && exec timeout 120 fio --name="$name" --filename="$dev" \
		--direct=1 --ioengine=libaio --output-format=json \
		--output="$out/$name.json" "$@") >"$out/$name.err" 2>&1 &
	fio_pid=$!
}

# fio_bg_ok LABEL NAME MIN_R MIN_W: the fio_bg run NAME ended, exit 0, and
# its JSON passes fio_ok.
fio_bg_ok() {
	local rc=0
	wait "$fio_pid" || rc=$?
	fio_pid=
	if [ $rc = 0 ] && fio_ok "$out/$2.json" "$3" "$4" >"$out/fio.sum" 2>&1; then
		ok "$1 ($(cat "$out/fio.sum"))"
	else
		sed 's/^/# /' "$out/$2.err" "$out/fio.sum" 2>/dev/null | head -20
		nok "$1 (exit $rc)"
	fi
}

# fio_kill_mid LABEL DEV: random 4 KiB I/O at iodepth 32 on DEV, alive
# after 3 s (a row), then killed with SIGKILL mid-I/O.
fio_kill_mid() {
	fio_bg k "$2" --rw=randrw --bs=4k --iodepth=32 --time_based --runtime=30
	sleep 3
	check "$1: fio alive mid-I/O" kill -0 "$fio_pid"
	kill -9 "$fio_pid"
	{ wait "$fio_pid"; } 2>/dev/null	# bash's "Killed" line is no TAP
	fio_pid=
}
