#!/usr/bin/env python3
# An NBD server that lies, for tests/test-member-nbd: it negotiates like
# any fixed newstyle server (NBD_OPT_GO with NBD_INFO_EXPORT, simple
# replies only), serves one connection from memory, and answers the Nth
# request (--lie-at N, from 1) with a reply whose cookie belongs to no
# request it was sent.  Usage: nbd-liar.py SOCKET PIDFILE SIZE N
import os
import socket
import struct
import sys

sock_path, pid_path, size, lie_at = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
data = bytearray(size)


def recv_all(c, n):
    b = b""
    while len(b) < n:
        x = c.recv(n - len(b))
        if not x:
            raise EOFError
        b += x
    return b


def negotiate(c):
    c.sendall(b"NBDMAGIC" + b"IHAVEOPT" + struct.pack(">H", 3))
    recv_all(c, 4)                                       # client flags
    while True:
        magic, opt, length = struct.unpack(">QII", recv_all(c, 16))
        recv_all(c, length)
        if opt == 7:                                     # NBD_OPT_GO
            info = struct.pack(">HQH", 0, size, 1 | 4 | 8)   # HAS_FLAGS|SEND_FLUSH|SEND_FUA
            c.sendall(struct.pack(">QIII", 0x3e889045565a9, opt, 3, len(info)) + info)
            c.sendall(struct.pack(">QIII", 0x3e889045565a9, opt, 1, 0))
            return
        if opt == 2:                                     # NBD_OPT_ABORT
            raise EOFError
        c.sendall(struct.pack(">QIII", 0x3e889045565a9, opt, 0x80000001, 0))   # unsupported


def serve(c):
    n = 0
    while True:
        magic, flags, typ, cookie, off, length = struct.unpack(">IHHQQI", recv_all(c, 28))
        n += 1
        if typ == 2:                                     # NBD_CMD_DISC
            return
        if n == lie_at:
            cookie ^= 0x5a5a5a5a5a5a5a5a                 # never sent
        if typ == 1:                                     # write
            payload = recv_all(c, length)
            data[off:off + length] = payload
            c.sendall(struct.pack(">IIQ", 0x67446698, 0, cookie))
        elif typ == 0:                                   # read
            c.sendall(struct.pack(">IIQ", 0x67446698, 0, cookie) + bytes(data[off:off + length]))
        else:                                            # flush
            c.sendall(struct.pack(">IIQ", 0x67446698, 0, cookie))


s = socket.socket(socket.AF_UNIX)
s.bind(sock_path)
s.listen(1)
with open(pid_path + ".tmp", "w") as f:
    f.write("%d\n" % os.getpid())
os.rename(pid_path + ".tmp", pid_path)
while True:
    c, _ = s.accept()
    try:
        negotiate(c)
        serve(c)
    except (EOFError, ConnectionError):
        pass
    c.close()
