#!/usr/bin/python3
"""SMC-R (the kernel's smc module, AF_SMC sockets) for selftests/smc.sh.

  smc_check.py ueid EID           add EID to SMC's user EID table
  smc_check.py server IP PORT N   accept N connections, answer each
  smc_check.py client IP PEER PORT BYTES [N]

SMC-R version 2 (RoCE v2, routable) is proposed only when the host has a
user EID, which smc-tools' `smcr ueid add` sets; Debian 12 has no
smc-tools, so "ueid" sends SMC_NETLINK_ADD_UEID itself (generic netlink).

On each of N connections (at once, one thread each) the client sends
BYTES random bytes and half-closes; the server answers with their SHA-256
and BYTES bytes of its own followed by their SHA-256. The client prints
"sent ok" and "received ok" when every digest matched, and exits 1
otherwise. Python's socket module does not know AF_SMC's
addresses (sockaddr_in), so socket, bind, connect and listen go through
libc and the descriptor is then wrapped in a socket object.
"""
import ctypes
import hashlib
import os
import socket
import struct
import sys
import threading

AF_SMC = 43                                 # linux/socket.h
NETLINK_GENERIC, GENL_ID_CTRL = 16, 0x10    # linux/netlink.h, genetlink.h
CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME = 3, 1, 2
NLM_F_REQUEST, NLM_F_ACK, NLMSG_ERROR = 0x1, 0x4, 0x2
SMC_NETLINK_ADD_UEID, SMC_NLA_EID_TABLE_ENTRY = 10, 1   # linux/smc.h
SMC_MAX_EID_LEN = 32
libc = ctypes.CDLL(None, use_errno=True)


# ---- generic netlink -----------------------------------------------------

def nla(kind, payload):
    a = struct.pack("=HH", 4 + len(payload), kind) + payload
    return a + b"\0" * (-len(a) % 4)


def genl_call(sock, family, cmd, attrs, seq):
    body = struct.pack("=BBH", cmd, 1, 0) + attrs
    msg = struct.pack("=IHHII", 16 + len(body), family,
                      NLM_F_REQUEST | NLM_F_ACK, seq, 0) + body
    sock.send(msg)
    reply = b""
    while True:
        data = sock.recv(65536)
        off = 0
        while off + 16 <= len(data):
            length, kind = struct.unpack_from("=IH", data, off)
            if kind == NLMSG_ERROR:
                err = struct.unpack_from("=i", data, off + 16)[0]
                if err:
                    raise OSError(-err, os.strerror(-err))
                return reply
            reply = data[off + 20:off + length]
            off += (length + 3) & ~3


def genl_family(sock, name):
    attrs = genl_call(sock, GENL_ID_CTRL, CTRL_CMD_GETFAMILY,
                      nla(CTRL_ATTR_FAMILY_NAME, name.encode() + b"\0"), 1)
    off = 0
    while off + 4 <= len(attrs):
        length, kind = struct.unpack_from("=HH", attrs, off)
        if kind == CTRL_ATTR_FAMILY_ID:
            return struct.unpack_from("=H", attrs, off + 4)[0]
        off += (length + 3) & ~3
    raise OSError("no generic netlink family %s" % name)


def add_ueid(eid):
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
    family = genl_family(sock, "SMC_GEN_NETLINK")
    entry = eid.ljust(SMC_MAX_EID_LEN).encode() + b"\0"
    genl_call(sock, family, SMC_NETLINK_ADD_UEID, nla(SMC_NLA_EID_TABLE_ENTRY, entry), 2)
    print("ueid %s added" % eid)
    return 0


# ---- AF_SMC sockets ------------------------------------------------------

def sockaddr_in(ip, port):
    return struct.pack("=HH4s8x", socket.AF_INET, socket.htons(port),
                       socket.inet_aton(ip))


def check(rc, what):
    if rc < 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))


def smc_socket(ip, port):
    fd = libc.socket(AF_SMC, socket.SOCK_STREAM, 0)
    check(fd, "socket(AF_SMC)")
    one = ctypes.c_int(1)
    check(libc.setsockopt(fd, socket.SOL_SOCKET, socket.SO_REUSEADDR,
                          ctypes.byref(one), 4), "SO_REUSEADDR")
    addr = sockaddr_in(ip, port)
    check(libc.bind(fd, addr, len(addr)), "bind")
    return fd


def recv_all(s, digest):
    n = 0
    while True:
        b = s.recv(1 << 20)
        if not b:
            return n
        digest.update(b)
        n += len(b)


def answer(c, sizes):
    h = hashlib.sha256()
    n = recv_all(c, h)
    data = os.urandom(n)
    c.sendall(h.digest() + data + hashlib.sha256(data).digest())
    c.close()
    sizes.append(n)


def serve(ip, port, count):
    fd = smc_socket(ip, port)
    check(libc.listen(fd, count), "listen")
    print("listening", flush=True)
    s, sizes, threads = socket.socket(fileno=fd), [], []
    for _ in range(count):
        c, _ = s.accept()
        t = threading.Thread(target=answer, args=(c, sizes))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    print("server: %d connections, %d B each way" % (len(sizes), sum(sizes)))
    return 0 if len(sizes) == count else 1


def exchange(ip, peer, port, nbytes, verdicts):
    """One connection's round; its verdict: None, or what went wrong."""
    try:
        fd = smc_socket(ip, 0)
        addr = sockaddr_in(peer, port)
        check(libc.connect(fd, addr, len(addr)), "connect")
        s = socket.socket(fileno=fd)
        data = os.urandom(nbytes)
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        got = bytearray()
        while True:
            b = s.recv(1 << 20)
            if not b:
                break
            got += b
        s.close()
    except OSError as e:
        verdicts.append(("sent", str(e)))
        return
    if bytes(got[:32]) != hashlib.sha256(data).digest():
        verdicts.append(("sent", "the server's digest differs"))
    back = bytes(got[32:-32])
    if len(back) != nbytes or hashlib.sha256(back).digest() != bytes(got[-32:]):
        verdicts.append(("received", "%d B, digest differs" % len(back)))


def client(ip, peer, port, nbytes, count):
    verdicts = []
    threads = [threading.Thread(target=exchange, args=(ip, peer, port, nbytes, verdicts))
               for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for way in ("sent", "received"):
        bad = [why for w, why in verdicts if w == way]
        if bad:
            print("%s FAIL: %s" % (way, "; ".join(bad)))
        else:
            print("%s ok: %d connections x %d B" % (way, count, nbytes))
    return 1 if verdicts else 0


def main(argv):
    if len(argv) == 3 and argv[1] == "ueid":
        return add_ueid(argv[2])
    if len(argv) == 5 and argv[1] == "server":
        return serve(argv[2], int(argv[3]), int(argv[4]))
    if len(argv) in (6, 7) and argv[1] == "client":
        return client(argv[2], argv[3], int(argv[4]), int(argv[5]),
                      int(argv[6]) if len(argv) == 7 else 1)
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
