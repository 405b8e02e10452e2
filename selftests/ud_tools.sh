#!/bin/bash
# TAP: stock UD traffic through our provider, judged by tools nobody here
# wrote (design.md §8): ibv_ud_pingpong with --chk (which checks every
# received buffer after its 40-byte GRH area) at 1 B .. the path MTU, and
# perftest's ib_send_lat and ib_send_bw over UD (-c UD), each between two
# processes on shca0 and between shca0 and shca1 (created on veth1 here,
# deleted at the end). Server and client meet over TCP on 127.0.0.1.
# The veths' MTU of 1500 makes the RoCE path MTU 1024: the largest
# datagram.
#
# Iterations: ibv_ud_pingpong -n SOFTHCA_PINGPONG_N (default 2000),
# perftest -n SOFTHCA_PERFTEST_N (default 1000).
set -u
here=$(dirname "$0")
pp_n=${SOFTHCA_PINGPONG_N:-2000}
pt_n=${SOFTHCA_PERFTEST_N:-1000}
tmo=${SOFTHCA_PINGPONG_TIMEOUT:-300}
out=$(mktemp -d)
port=19500
added_shca1=0
# shellcheck source=selftests/lib/tools.sh
. "$here/lib/tools.sh"

# SOFTHCA_RC_LINK_TYPE=rxe: the same over rdma_rxe, to check the script.
tools_two_dev_begin || exit 1

pp_sizes=(1 64 512 1000 1024)
pt_runs=("ib_send_lat 2" "ib_send_lat 1024" "ib_send_bw 1024" "ib_send_bw 64")
echo "1..$(( 2 * ${#pp_sizes[@]} + 2 * ${#pt_runs[@]} ))"

tp_rows UD ibv_ud_pingpong
exit $failed
