# SPDX-License-Identifier: GPL-2.0
"""Two MPI ranks exchange data through Open MPI (selftests/hpc_tools.sh runs it over
UCX on softhca): blocking sends of 1 B to 4 MiB each way, every byte
checked; an allreduce; a one-sided Put into the peer's window and a Get
back (MPI_Fence epochs). Rank 0 prints one verdict line; the exit status is
1 if any rank saw a difference."""
import sys

from mpi4py import MPI

SIZES = (1, 7, 64, 1000, 4096, 8193, 65536, 262147, 1 << 20, 4 << 20)
ROUNDS = 3
WIN = 1 << 16


def pattern(size, rnd, rank):
    """SIZE bytes that differ per size, round and sending rank."""
    unit = bytes(((i * 31 + size + rnd + 17 * rank) & 0xff)
                 for i in range(min(size, 4096)))
    return (unit * (size // len(unit) + 1))[:size]


def point_to_point(comm, rank, peer):
    bad = 0
    for size in SIZES:
        for rnd in range(ROUNDS):
            out = bytearray(pattern(size, rnd, rank))
            got = bytearray(size)
            if rank == 0:
                comm.Send([out, MPI.BYTE], dest=peer, tag=size)
                comm.Recv([got, MPI.BYTE], source=peer, tag=size)
            else:
                comm.Recv([got, MPI.BYTE], source=peer, tag=size)
                comm.Send([out, MPI.BYTE], dest=peer, tag=size)
            if bytes(got) != pattern(size, rnd, peer):
                print(f"rank {rank}: {size} B, round {rnd}: data differs",
                      flush=True)
                bad += 1
    return bad


def one_sided(comm, rank, peer):
    bad = 0
    exposed = bytearray(WIN)
    win = MPI.Win.Create(exposed, comm=comm)
    mine = bytearray((i * 7 + rank) & 0xff for i in range(WIN))
    win.Fence()
    win.Put([mine, MPI.BYTE], peer)
    win.Fence()
    if bytes(exposed) != bytes((i * 7 + peer) & 0xff for i in range(WIN)):
        print(f"rank {rank}: the window after the peer's Put differs",
              flush=True)
        bad += 1
    back = bytearray(WIN)
    win.Fence()
    win.Get([back, MPI.BYTE], peer)
    win.Fence()
    if back != mine:
        print(f"rank {rank}: Get did not return what was Put", flush=True)
        bad += 1
    win.Free()
    return bad


def main():
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    if comm.Get_size() != 2:
        print("mpi_check: needs 2 ranks")
        return 1
    peer = 1 - rank
    bad = point_to_point(comm, rank, peer)
    total = comm.allreduce(rank + 1, op=MPI.SUM)
    if total != 3:
        print(f"rank {rank}: allreduce gave {total}, not 3", flush=True)
        bad += 1
    bad += one_sided(comm, rank, peer)
    bad = comm.allreduce(bad, op=MPI.SUM)
    if rank == 0:
        moved = 2 * ROUNDS * sum(SIZES)
        print(f"mpi_check: {'ok' if not bad else 'FAILED'}, {bad} "
              f"differences, {moved} bytes checked")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
