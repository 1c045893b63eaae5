#!/usr/bin/env python3
# Description: stand-ins for systemd's listening ends, for
# tests/test-raidd-service.sh.  Each binds a Unix datagram socket at PATH, prints
# "listening" once bound, then one line per field it receives, until
# killed:
#   notify PATH    sd_notify(3) messages ("READY=1", "STATUS=...")
#   journal PATH   journald's native protocol (sd_journal_sendv(3)): each
#                  field as KEY=VALUE, a line "--" after each entry
import os
import socket
import struct
import sys


def journal_fields(data):
    """Fields of one native journal datagram: KEY=VALUE\\n, or KEY\\n then
    a little-endian 64-bit length, the value and \\n (binary-safe)."""
    out = []
    i = 0
    while i < len(data):
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if b"=" in line:
            out.append(line.decode(errors="replace"))
            i = nl + 1
        else:
            (n,) = struct.unpack("<Q", data[nl + 1:nl + 9])
            value = data[nl + 9:nl + 9 + n]
            out.append(line.decode() + "=" + value.decode(errors="replace"))
            i = nl + 9 + n + 1
    return out


def main():
    kind, path = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    print("listening", flush=True)
    while True:
        data, anc, _, _ = s.recvmsg(1 << 20, socket.CMSG_SPACE(4 * 16))
        if kind == "journal" and not data:
            # A large entry comes as a memfd passed with SCM_RIGHTS.
            for level, typ, payload in anc:
                if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                    fd = struct.unpack("i", payload[:4])[0]
                    data = os.pread(fd, 1 << 20, 0)
                    os.close(fd)
        if kind == "journal":
            for f in journal_fields(data):
                print(f, flush=True)
            print("--", flush=True)
        else:
            for f in data.decode(errors="replace").split("\n"):
                if f:
                    print(f, flush=True)


main()
