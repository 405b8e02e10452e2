#!/bin/bash
# TAP: stock UC traffic through our provider, judged by tools nobody here
# wrote (design.md §8): ibv_uc_pingpong with --chk (which checks every
# received buffer) at 1 B .. 64 KiB, and perftest's ib_send_lat,
# ib_write_lat, ib_send_bw and ib_write_bw over UC (-c UC), each between
# two processes on shca0 and between shca0 and shca1 (created on veth1
# here, deleted at the end). Server and client meet over TCP on
# 127.0.0.1. UC drops a message its receiver cannot take; a run that
# lost one would hang (the pingpong waits for every message) and fail.
#
# Iterations: ibv_uc_pingpong -n SOFTHCA_PINGPONG_N (default 2000),
# perftest -n SOFTHCA_PERFTEST_N (default 1000).
set -u
here=$(dirname "$0")
pp_n=${SOFTHCA_PINGPONG_N:-2000}
pt_n=${SOFTHCA_PERFTEST_N:-1000}
tmo=${SOFTHCA_PINGPONG_TIMEOUT:-300}
out=$(mktemp -d)
port=19700
added_shca1=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"

# SOFTHCA_RC_LINK_TYPE=rxe: the same over rdma_rxe, to check the script.
tools_two_dev_begin || exit 1

pp_sizes=(1 4096 65536)
pt_runs=("ib_send_lat 2" "ib_write_lat 64" "ib_send_bw 4096" "ib_write_bw 65536")
echo "1..$(( 2 * ${#pp_sizes[@]} + 2 * ${#pt_runs[@]} ))"

tp_rows UC ibv_uc_pingpong
exit $failed
