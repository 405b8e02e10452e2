#!/usr/bin/python3
"""RDS over RDMA (the kernel's rds_rdma), driven through AF_RDS sockets.

Used by selftests/rds.sh and selftests/bedb/rds.sh. Two modes:

  rds_check.py server BIND_IP PORT
  rds_check.py client BIND_IP PORT PEER_IP PEER_PORT

Both sockets ask for the IB transport (SO_RDS_TRANSPORT), so a missing
RDMA device is an error, not a quiet fall-back to TCP. The server answers
the client's requests; the client runs the checks and prints one line per
check, "ok NAME" or "FAIL NAME: why", and exits 1 if any failed:

  echo      messages of 1 B to 1 MiB, each sent back and compared;
  burst     256 messages sent before any answer, answers in order;
  ib_conn   RDS lists an IB connection between the two addresses;
  write     RDMA WRITE into the server's MR: the server maps it with its
            answer (RDS_CMSG_RDMA_MAP: RDS_GET_MR has no connection to map
            on with FRWR) and the client takes the cookie from
            RDS_CMSG_RDMA_DEST; the server then finds the client's bytes
            there, and the client's notification is SUCCESS;
  read      RDMA READ of the server's MR into the client's buffer;
  stale_key an RDMA WRITE with the cookie of an MR the server has freed
            with RDS_RDMA_INVALIDATE (a LOCAL_INV on its QP): the
            responder must refuse it (a remote access error), the
            client's notification is REMOTE_ERROR and no byte of the
            server's buffer changed;
  recover   after that error, RDS reconnects and messages flow again.

The error case needs an MR the server no longer holds: RDS does not
finish taking a connection down while an MR registered on it is in use,
so an RDMA error into a held MR stalls the connection until its owner
frees it.

RDS's atomics are not checked: RDS posts only masked atomics, which
softhca (like rdma_rxe) does not offer (masked_atomic_cap is NONE), and
RDS then retries the refused post for ever (Documentation/rds.md).
"""
import ctypes
import os
import socket
import struct
import sys
import zlib

AF_RDS, SOL_RDS = 21, 276                 # linux/socket.h
SO_RDS_TRANSPORT, RDS_TRANS_IB = 8, 0     # linux/rds.h from here on
RDS_FREE_MR = 3
RDS_CMSG_RDMA_ARGS, RDS_CMSG_RDMA_DEST, RDS_CMSG_RDMA_MAP = 1, 2, 3
RDS_CMSG_RDMA_STATUS = 4
RDS_RDMA_READWRITE, RDS_RDMA_INVALIDATE, RDS_RDMA_NOTIFY_ME = 0x1, 0x4, 0x20
RDS_RDMA_SUCCESS, RDS_RDMA_REMOTE_ERROR = 0, 1
RDS_INFO_IB_CONNECTIONS = 10008
SO_SNDBUFFORCE, SO_RCVBUFFORCE = 32, 33   # asm-generic/socket.h
IB_CONN_INFO = struct.Struct("=4s4s16s16s5IBB2xI")   # rds_info_rdma_connection
MAX_MSG = 1 << 20
TIMEOUT = 60


def rds_socket(ip, port):
    s = socket.socket(AF_RDS, socket.SOCK_SEQPACKET)
    # RDS refuses a message larger than half the send buffer, and a
    # receiver whose buffer is full is congested: room for a 1 MiB burst.
    s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 8 * MAX_MSG)
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 8 * MAX_MSG)
    s.setsockopt(SOL_RDS, SO_RDS_TRANSPORT, RDS_TRANS_IB)
    s.bind((ip, port))
    s.settimeout(TIMEOUT)
    return s


def pattern(seed, size):
    """size bytes that depend on seed: a repeated CRC-chained block."""
    block = b"".join(struct.pack("<I", zlib.crc32(struct.pack("<II", seed, i)))
                     for i in range(1024))
    return (block * (size // len(block) + 1))[:size]


class Buffer:
    """User memory the kernel pins: its address, for RDS's iovecs."""

    def __init__(self, data):
        self.buf = ctypes.create_string_buffer(bytes(data), len(data))
        self.addr = ctypes.addressof(self.buf)

    def bytes(self):
        return self.buf.raw


# ---- server --------------------------------------------------------------

def map_args(mem, cookie):
    """rds_get_mr_args of MEM; the kernel writes the cookie to COOKIE."""
    return struct.pack("=QQQQ", mem.addr, len(mem.buf.raw),
                       ctypes.addressof(cookie), 0)


def free_mr(s, cookie):
    """RDS_FREE_MR, the rkey invalidated before it returns."""
    s.setsockopt(SOL_RDS, RDS_FREE_MR, struct.pack("=QQ", cookie, RDS_RDMA_INVALIDATE))


def compare(got, want):
    if got == want:
        return b"same"
    return b"differs at %d" % next(i for i in range(len(got)) if got[i] != want[i])


def serve(ip, port):
    s = rds_socket(ip, port)
    s.settimeout(None)
    mrs, freed = {}, {}             # cookie -> Buffer
    print("listening", flush=True)
    while True:
        data, peer = s.recvfrom(MAX_MSG + 64)
        op, body = data[:1], data[1:]
        if op == b"E":              # echo
            reply = data
        elif op == b"M":            # an MR of SIZE bytes holding SEED's pattern
            size, seed = struct.unpack("=QI", body)
            mem, cookie = Buffer(pattern(seed, size)), ctypes.c_uint64()
            # The answer carries the MR: RDS maps it on the connection.
            s.sendmsg([b"m"], [(SOL_RDS, RDS_CMSG_RDMA_MAP, map_args(mem, cookie))],
                      0, peer)
            mrs[cookie.value] = mem
            s.sendto(b"k" + struct.pack("=Q", cookie.value), peer)
            continue
        elif op == b"C":            # does the MR hold SEED's pattern? Then free it.
            cookie, seed = struct.unpack("=QI", body)
            mem = mrs.pop(cookie)
            free_mr(s, cookie)
            reply = b"c" + compare(mem.bytes(), pattern(seed, len(mem.bytes())))
        elif op == b"I":            # free the MR, its rkey invalidated; keep the memory
            cookie, = struct.unpack("=Q", body)
            freed[cookie] = mrs.pop(cookie)
            free_mr(s, cookie)
            reply = b"i"
        elif op == b"V":            # does a freed MR's memory still hold SEED's pattern?
            cookie, seed = struct.unpack("=QI", body)
            mem = freed.pop(cookie)
            reply = b"c" + compare(mem.bytes(), pattern(seed, len(mem.bytes())))
        elif op == b"Q":
            s.sendto(b"q", peer)
            return 0
        else:
            reply = b"?"
        s.sendto(reply, peer)


# ---- client --------------------------------------------------------------

class Client:
    def __init__(self, ip, port, peer):
        self.s = rds_socket(ip, port)
        self.peer = peer
        self.failed = 0
        self.notes = []             # (user_token, status) seen so far
        self.pending = []           # messages taken while looking for them
        self.dests = []             # RDMA_DEST cookies, in arrival order

    def result(self, name, why=None):
        if why:
            self.failed = 1
            print("FAIL %s: %s" % (name, why), flush=True)
        else:
            print("ok %s" % name, flush=True)

    def pump(self):
        """Take one message or notification off the socket."""
        data, anc, _, _ = self.s.recvmsg(MAX_MSG + 64, 256)
        for level, kind, cdata in anc:
            if level == SOL_RDS and kind == RDS_CMSG_RDMA_STATUS:
                self.notes.append(struct.unpack_from("=Qi", cdata))
            if level == SOL_RDS and kind == RDS_CMSG_RDMA_DEST:
                self.dests.append(struct.unpack_from("=Q", cdata)[0])
        if data or not anc:
            self.pending.append(data)

    def recv(self):
        """The next message; notifications met on the way are kept."""
        while not self.pending:
            self.pump()
        return self.pending.pop(0)

    def call(self, msg, anc=()):
        self.s.sendmsg([msg], list(anc), 0, self.peer)
        return self.recv()

    def note(self, token):
        """The status of the notification with user_token TOKEN (10 s)."""
        self.s.settimeout(0.1)
        try:
            for _ in range(100):
                for t, status in self.notes:
                    if t == token:
                        return status
                try:
                    self.pump()
                except socket.timeout:
                    pass
        finally:
            self.s.settimeout(TIMEOUT)
        return None

    def echo(self):
        sizes = [1, 100, 4095, 4096, 4097, 8192, 65536, 262144, 1 << 20]
        moved = 0
        for rnd in range(3):
            for size in sizes:
                msg = b"E" + pattern(size * 3 + rnd, size - 1)
                got = self.call(msg)
                if got != msg:
                    return self.result("echo", "%d B answered with %d B, %s" % (
                        size, len(got), "same length" if len(got) == size else "differs"))
                moved += size
        self.result("echo (%d messages, %d B each way)" % (3 * len(sizes), moved))
        return None

    def burst(self):
        msgs = [b"E" + struct.pack("=I", i) + pattern(i, i * 37 % 4000) for i in range(256)]
        for m in msgs:
            self.s.sendto(m, self.peer)
        for i, m in enumerate(msgs):
            got = self.recv()
            if got != m:
                return self.result("burst", "answer %d is not message %d" % (i, i))
        return self.result("burst (256 messages in flight, answers in order)")

    def ib_conn(self, ip, peer_ip):
        # Python's getsockopt takes at most 1024 B: 15 connections' worth.
        info = self.s.getsockopt(SOL_RDS, RDS_INFO_IB_CONNECTIONS,
                                 1024 // IB_CONN_INFO.size * IB_CONN_INFO.size)
        mine = socket.inet_aton(ip), socket.inet_aton(peer_ip)
        for off in range(0, len(info) - IB_CONN_INFO.size + 1, IB_CONN_INFO.size):
            c = IB_CONN_INFO.unpack_from(info, off)
            if (c[0], c[1]) == mine:
                return self.result("ib_conn (sgid %s, dgid %s)" % (
                    c[2].hex(), c[3].hex()))
        return self.result("ib_conn", "no IB connection %s -> %s among %d B of info" %
                           (ip, peer_ip, len(info)))

    def server_mr(self, size, seed):
        self.dests = []
        got = self.call(b"M" + struct.pack("=QI", size, seed))
        if got != b"m" or len(self.dests) != 1:
            raise RuntimeError("no MR from the server: %r, cookies %r" % (got[:40], self.dests))
        got = self.recv()           # the cookie as the server's kernel gave it
        if got[:1] != b"k" or struct.unpack("=Q", got[1:9])[0] != self.dests[0]:
            raise RuntimeError("RDMA_DEST cookie %#x, the server's %r" % (self.dests[0], got[:9]))
        return self.dests[0]

    def rdma(self, name, write, size=1 << 20, token=0):
        """One RDMA op on a fresh server MR of SIZE bytes; None or why not."""
        cookie = self.server_mr(size, 100 + token)
        local = Buffer(pattern(200 + token, size) if write else bytes(size))
        iov = Buffer(struct.pack("=QQ", local.addr, size))
        args = struct.pack("=QQQQQQQ", cookie, 0, size, iov.addr, 1,
                           RDS_RDMA_NOTIFY_ME | (RDS_RDMA_READWRITE if write else 0),
                           token)
        # The message after the RDMA op: the server answers it.
        got = self.call(b"E" + name.encode(), [(SOL_RDS, RDS_CMSG_RDMA_ARGS, args)])
        if got != b"E" + name.encode():
            return "the message after the op came back as %r" % got[:40]
        status = self.note(token)
        if status != RDS_RDMA_SUCCESS:
            return "notification status %r, not SUCCESS" % status
        check = self.server_check(cookie, 200 + token if write else 100 + token)
        if write and check != "same":
            return "the server's MR %s from what was written" % check
        if not write and local.bytes() != pattern(100 + token, size):
            return "the bytes read are not the server's"
        return None

    def stale_key(self):
        cookie = self.server_mr(4096, 300)
        if self.call(b"I" + struct.pack("=Q", cookie)) != b"i":
            return self.result("stale_key", "the server did not free its MR")
        local = Buffer(pattern(301, 4096))
        iov = Buffer(struct.pack("=QQ", local.addr, 4096))
        args = struct.pack("=QQQQQQQ", cookie, 0, 4096, iov.addr, 1,
                           RDS_RDMA_NOTIFY_ME | RDS_RDMA_READWRITE, 3)
        # The message after a failed op is dropped with it, not answered.
        self.s.sendmsg([b"E-dropped"], [(SOL_RDS, RDS_CMSG_RDMA_ARGS, args)], 0, self.peer)
        status = self.note(3)
        if status != RDS_RDMA_REMOTE_ERROR:
            return self.result("stale_key", "notification status %r, not REMOTE_ERROR" % status)
        check = self.server_verdict(b"V" + struct.pack("=QI", cookie, 300))
        if check != "same":
            return self.result("stale_key", "the server's memory %s from before" % check)
        return self.result("stale_key (a write with an invalidated rkey refused, "
                           "no byte landed)")

    def step(self, name, fn, *args):
        try:
            fn(*args)
        except (OSError, RuntimeError, ValueError) as e:
            self.result(name, "%s: %s" % (type(e).__name__, e))

    def rdma_step(self, name, write, token):
        self.result(name, self.rdma(name.split()[0], write, token=token))

    def server_check(self, cookie, seed):
        return self.server_verdict(b"C" + struct.pack("=QI", cookie, seed))

    def server_verdict(self, msg):
        """The server's verdict on MSG; answers to older messages skipped."""
        self.s.sendto(msg, self.peer)
        for _ in range(8):
            got = self.recv()
            if got[:1] == b"c":
                return got[1:].decode()
        return "no verdict"

    def recover(self):
        msg = b"E" + pattern(9, 4096)
        self.result("recover (messages after the error)",
                    None if self.call(msg) == msg else "no answer")

    def run(self, ip, peer_ip):
        self.step("echo", self.echo)
        self.step("burst", self.burst)
        self.step("ib_conn", self.ib_conn, ip, peer_ip)
        self.step("write", self.rdma_step, "write (1 MiB into the server's MR)", True, 1)
        self.step("read", self.rdma_step, "read (1 MiB of the server's MR)", False, 2)
        self.step("stale_key", self.stale_key)
        self.step("recover", self.recover)
        self.step("quit", self.call, b"Q")
        return self.failed


def main(argv):
    if len(argv) == 4 and argv[1] == "server":
        return serve(argv[2], int(argv[3]))
    if len(argv) == 6 and argv[1] == "client":
        c = Client(argv[2], int(argv[3]), (argv[4], int(argv[5])))
        return c.run(argv[2], argv[4])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
