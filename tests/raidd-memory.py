#!/usr/bin/env python3
"""Large requests against one raidd export (run by tests/test-raidd-memory.sh).

Usage: raidd-memory.py SOCKET EXPORT LEVEL
Four connections write 32 MiB requests (four in flight on each), read them
back and compare; one connection then writes zeroes over the first GiB in
one request with NO_HOLE and once without, trims it (refused with EINVAL
on RAID 5, which does not advertise TRIM), and reads it back as zeroes."""
import socket, struct, sys, threading
SOCK, NAME, LEVEL = sys.argv[1], sys.argv[2], int(sys.argv[3])
IHAVEOPT, REQ, SIMPLE = 0x49484156454F5054, 0x25609513, 0x67446698
MiB, GiB = 1 << 20, 1 << 30
R, W, TRIM, ZERO = 0, 1, 4, 6
NO_HOLE = 2
fails = []

def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond: fails.append(what)

def recvn(s, n):
    b = bytearray()
    while len(b) < n:
        c = s.recv(min(n - len(b), 4 * MiB))
        if not c: raise EOFError("eof after %d of %d bytes" % (len(b), n))
        b += c
    return bytes(b)

def session():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(120)
    s.connect(SOCK)
    magic, ver, hf = struct.unpack(">QQH", recvn(s, 18))
    assert magic == 0x4e42444d41474943 and ver == IHAVEOPT
    s.sendall(struct.pack(">I", 3))
    name = NAME.encode()
    data = struct.pack(">I", len(name)) + name + struct.pack(">H", 0)
    s.sendall(struct.pack(">QII", IHAVEOPT, 7, len(data)) + data)
    tflags = None
    while True:
        magic, o, r, ln = struct.unpack(">QIII", recvn(s, 20))
        d = recvn(s, ln)
        if r == 3 and struct.unpack(">H", d[:2])[0] == 0:
            tflags = struct.unpack(">QH", d[2:12])[1]
        if r != 3:
            assert r == 1, "NBD_OPT_GO refused: %d %r" % (r, d)
            return s, tflags

def send(s, typ, off, ln, cookie, flags=0, payload=b""):
    s.sendall(struct.pack(">IHHQQI", REQ, flags, typ, cookie, off, ln))
    if payload: s.sendall(payload)

def reply(s, lens):
    magic, err, cookie = struct.unpack(">IIQ", recvn(s, 16))
    assert magic == SIMPLE, hex(magic)
    data = recvn(s, lens.get(cookie, 0)) if err == 0 else b""
    return cookie, err, data

def client(k):
    try:
        s, _ = session()
        offs = [(k * 4 + i) * 32 * MiB for i in range(4)]
        for i, off in enumerate(offs):
            send(s, W, off, 32 * MiB, i, payload=bytes([k * 4 + i + 1]) * (32 * MiB))
        errs = [reply(s, {})[1] for _ in offs]
        check(errs == [0] * 4, "connection %d: four 32 MiB writes" % k)
        for i, off in enumerate(offs):
            send(s, R, off, 32 * MiB, i)
        got = {}
        for _ in offs:
            c, e, d = reply(s, {i: 32 * MiB for i in range(4)})
            got[c] = (e, d)
        check(all(got[i][0] == 0 and got[i][1] == bytes([k * 4 + i + 1]) * (32 * MiB)
                  for i in range(4)), "connection %d: four 32 MiB reads match" % k)
        s.close()
    except Exception as ex:
        check(False, "connection %d: %r" % (k, ex))

threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
for t in threads: t.start()
for t in threads: t.join()

s, tflags = session()
check(tflags & (1 << 6), "WRITE_ZEROES advertised")
check(bool(tflags & (1 << 5)) == (LEVEL != 5),
      "TRIM %s" % ("not advertised (RAID 5)" if LEVEL == 5 else "advertised"))
send(s, ZERO, 0, GiB, 1, flags=NO_HOLE)
check(reply(s, {})[1] == 0, "write zeroes (NO_HOLE) of 1 GiB")
send(s, W, 40 * MiB, 32 * MiB, 2, payload=b"\x5a" * (32 * MiB))
check(reply(s, {})[1] == 0, "32 MiB write into the zeroed range")
send(s, ZERO, 0, GiB, 3)
check(reply(s, {})[1] == 0, "write zeroes (holes allowed) of 1 GiB")
send(s, TRIM, 0, GiB, 4)
e = reply(s, {})[1]
check(e == (22 if LEVEL == 5 else 0), "trim of 1 GiB: error %d" % e)
for i, off in enumerate(range(0, GiB, 96 * MiB)):
    send(s, R, off, 32 * MiB, 10 + i)
    c, e, d = reply(s, {10 + i: 32 * MiB})
    if e or d != bytes(32 * MiB):
        check(False, "zeroes read back at %d MiB (error %d)" % (off // MiB, e))
        break
else:
    check(True, "the zeroed GiB reads back as zeroes")
s.sendall(struct.pack(">IHHQQI", REQ, 0, 2, 0, 0, 0))  # NBD_CMD_DISC
s.close()
sys.exit(1 if fails else 0)
