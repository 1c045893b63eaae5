#!/usr/bin/env python3
"""Raw-socket NBD protocol misuse against raidd (run by tests/test-raidd-nbd-misuse.sh).

Expects three exports: md0 (192 MiB, read-write), md1 and ro (read-only).
Every malformed or out-of-range request must get the reply the NBD spec
asks for, or a clean close of that connection only, and the server must
keep serving everyone else."""
import socket, struct, sys, time, os
SOCK = sys.argv[1]
IHAVEOPT = 0x49484156454F5054
REQ = 0x25609513
SIMPLE = 0x67446698
STRUCT = 0x668e33ef
fails = 0
def check(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    if not cond: fails += 1

def recvn(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c: raise EOFError("eof after %d of %d" % (len(b), n))
        b += c
    return b

def connect(cflags=3):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(SOCK)
    hello = recvn(s, 18)
    magic, ver, hf = struct.unpack(">QQH", hello)
    assert magic == 0x4e42444d41474943 and ver == IHAVEOPT, hello
    s.sendall(struct.pack(">I", cflags))
    return s, hf

def opt(s, o, data=b""):
    s.sendall(struct.pack(">QII", IHAVEOPT, o, len(data)) + data)

def rep(s):
    magic, o, r, ln = struct.unpack(">QIII", recvn(s, 20))
    assert magic == 0x3e889045565a9
    return o, r, recvn(s, ln)

def go(s, name, o=7, infos=()):
    d = struct.pack(">I", len(name)) + name.encode() + struct.pack(">H", len(infos)) + b"".join(struct.pack(">H", i) for i in infos)
    opt(s, o, d)
    out = []
    while True:
        oo, r, data = rep(s)
        out.append((r, data))
        if r != 3: return out

def is_closed(s):
    try:
        s.settimeout(5)
        d = s.recv(1)
        return d == b""
    except (ConnectionResetError, BrokenPipeError): return True
    except socket.timeout: return False

def session(name="md0", structured=True):
    s, hf = connect()
    if structured:
        opt(s, 8); o, r, d = rep(s); assert r == 1
    out = go(s, name)
    assert out[-1][0] == 1, out
    size = None
    for r, d in out:
        if r == 3 and struct.unpack(">H", d[:2])[0] == 0:
            size = struct.unpack(">QH", d[2:12])[0]
    return s, size

def req(s, typ, off, ln, cookie, flags=0, payload=b""):
    s.sendall(struct.pack(">IHHQQI", REQ, flags, typ, cookie, off, ln) + payload)

def reply(s, readlen=None):
    """returns (cookie, error, data) for simple or structured(one chunk done)."""
    magic = struct.unpack(">I", recvn(s, 4))[0]
    if magic == SIMPLE:
        err, cookie = struct.unpack(">IQ", recvn(s, 12))
        data = recvn(s, readlen) if (readlen and err == 0) else b""
        return cookie, err, data
    assert magic == STRUCT, hex(magic)
    flags, typ, cookie, ln = struct.unpack(">HHQI", recvn(s, 16))
    body = recvn(s, ln)
    assert flags & 1, "not DONE"
    if typ == 0: return cookie, 0, b""
    if typ == 1: return cookie, 0, body[8:]
    if typ == 0x8001:
        err, ml = struct.unpack(">IH", body[:6])
        return cookie, err, body[6:6+ml]
    raise AssertionError("type %d" % typ)

# --- handshake ---
s, hf = connect()
check(hf == 3, "handshake flags FIXED_NEWSTYLE|NO_ZEROES (%d)" % hf)
opt(s, 99, b"junk"); o, r, d = rep(s)
check(r == 0x80000001, "unknown option 99 -> NBD_REP_ERR_UNSUP (%#x, %r)" % (r, d))
opt(s, 10, b"\0"*8); o, r, d = rep(s)
check(r == 0x80000001, "SET_META_CONTEXT -> ERR_UNSUP")
out = go(s, "nosuch")
check(out[-1][0] == 0x80000006, "GO unknown export -> ERR_UNKNOWN (%r)" % (out[-1],))
out = go(s, "")
check(out[-1][0] == 0x80000006, "GO default export with 3 exports -> ERR_UNKNOWN (%r)" % (out[-1],))
opt(s, 6, b"\0\0\0\x10ab")  # INFO with namelen beyond data
o, r, d = rep(s)
check(r == 0x80000003, "INFO malformed -> ERR_INVALID (%r)" % d)
out = go(s, "md1", o=6, infos=(1, 2, 3))
types = [struct.unpack(">H", d[:2])[0] for r, d in out if r == 3]
check(out[-1][0] == 1 and sorted(types) == [0, 1, 2, 3], "INFO md1 with NAME/DESCRIPTION/BLOCK_SIZE: info types %r" % types)
opt(s, 3); names = []
while True:
    o, r, d = rep(s)
    if r != 2: break
    names.append(d[4:4+struct.unpack(">I", d[:4])[0]].decode())
check(r == 1 and sorted(names) == ["md0", "md1", "ro"], "LIST -> %r" % names)
opt(s, 2); o, r, d = rep(s)
check(r == 1 and is_closed(s), "ABORT -> ACK and close")

s, hf = connect()
opt(s, 1, b"nosuch")
check(is_closed(s), "EXPORT_NAME unknown -> connection closed")

s, hf = connect()
s.sendall(struct.pack(">QII", IHAVEOPT, 6, 1 << 20))
check(is_closed(s), "option of 1 MiB -> connection closed")

s, hf = connect()
s.sendall(struct.pack(">QII", 0x1234, 6, 0))
check(is_closed(s), "bad option magic -> connection closed")

s, hf = connect()
try:
    for i in range(300):
        opt(s, 99)
        rep(s)
    closed = False
except (EOFError, ConnectionResetError, BrokenPipeError):
    closed = True
check(closed, "300 options -> connection closed")

s, hf = connect(cflags=0x80000003)
check(is_closed(s), "unknown client flags -> connection closed")

# EXPORT_NAME happy path with NO_ZEROES
s, hf = connect()
opt(s, 1, b"md0")
size, tf = struct.unpack(">QH", recvn(s, 10))
check(size == 192 << 20 and tf & 1 and tf & (1 << 8), "EXPORT_NAME md0: size %d flags %#x" % (size, tf))
req(s, 0, 0, 4096, 77); c, e, d = reply(s, 4096)
check(c == 77 and e == 0 and len(d) == 4096, "simple READ after EXPORT_NAME")
req(s, 0, size, 512, 78); c, e, d = reply(s, 512)
check(c == 78 and e == 22, "simple READ beyond end -> EINVAL (%d)" % e)
req(s, 2, 0, 0, 0)
check(is_closed(s), "DISC closes")

# --- transmission misuse, structured ---
s, size = session("md0")
s2, _ = session("md0", structured=False)   # a bystander
req(s, 0, size - 512, 1024, 1); c, e, d = reply(s)
check(c == 1 and e == 22, "READ crossing the end -> EINVAL (%d %r)" % (e, d))
req(s, 0, 100, 512, 2); c, e, d = reply(s)
check(e == 22, "READ misaligned offset -> EINVAL (%r)" % d)
req(s, 0, 0, 100, 3); c, e, d = reply(s)
check(e == 22, "READ misaligned length -> EINVAL")
req(s, 1, size, 4096, 4, payload=b"x" * 4096); c, e, d = reply(s)
check(e == 28, "WRITE past the end -> ENOSPC (%d %r)" % (e, d))
req(s, 1, 1000, 512, 5, payload=b"y" * 512); c, e, d = reply(s)
check(e == 22, "WRITE misaligned -> EINVAL, payload skipped")
req(s, 42, 0, 0, 6); c, e, d = reply(s)
check(c == 6 and e == 22, "unknown command 42 -> EINVAL")
req(s, 6, 0, 4096, 7, flags=1 << 4); c, e, d = reply(s)
check(e == 22, "WRITE_ZEROES with FAST_ZERO (not advertised) -> EINVAL")
req(s, 0, 0, 4096, 8, flags=1 << 3); c, e, d = reply(s)
check(e == 22, "READ with REQ_ONE flag -> EINVAL")
req(s, 0, 0, 64 << 20, 9); c, e, d = reply(s)
check(e in (22, 75), "READ of 64 MiB -> EOVERFLOW/EINVAL (%d), connection kept" % e)
req(s, 7, 0, 4096, 10); c, e, d = reply(s)
check(e == 22, "BLOCK_STATUS without meta context -> EINVAL")
req(s, 0, 0, 0, 11); c, e, d = reply(s)
check(e == 22, "READ of 0 bytes -> EINVAL")
req(s, 1, 8192, 4096, 12, flags=1, payload=bytes(range(256)) * 16); c, e, d = reply(s)
check(e == 0, "WRITE FUA ok")
req(s, 0, 8192, 4096, 13); c, e, d = reply(s)
check(e == 0 and d == bytes(range(256)) * 16, "READ back ok")
req(s, 5, 0, 4096, 14); c, e, d = reply(s)
check(e == 0, "CACHE ok")
req(s, 4, 8192, 4096, 15, flags=1); c, e, d = reply(s)
check(e == 22, "TRIM on RAID 5 (not advertised) -> EINVAL")
req(s, 6, 8192, 4096, 15, flags=1); c, e, d = reply(s)
req(s, 0, 8192, 4096, 16); c2, e2, d2 = reply(s)
check(e == 0 and d2 == b"\0" * 4096, "WRITE_ZEROES FUA then read zeroes")
# pipelined, out of order allowed: 100 reads/writes, collect by cookie
for i in range(100):
    if i % 2: req(s, 0, i * 65536, 65536, 1000 + i)
    else: req(s, 1, i * 65536, 65536, 1000 + i, payload=bytes([i]) * 65536)
got = {}
for i in range(100):
    c, e, d = reply(s); got[c] = (e, d)
check(sorted(got) == list(range(1000, 1100)) and all(v[0] == 0 for v in got.values()), "100 pipelined requests all answered")
req(s, 1, 0, 64 << 20, 17)
check(is_closed(s), "WRITE of 64 MiB payload -> connection closed")
req(s2, 0, 0, 4096, 5); c, e, d = reply(s2, 4096)
check(c == 5 and e == 0, "bystander connection unaffected")
s2.sendall(b"\xde\xad\xbe\xef" + b"\0" * 24)
check(is_closed(s2), "bad request magic -> connection closed")

s, _ = session("ro")
req(s, 1, 0, 512, 1, payload=b"z" * 512); c, e, d = reply(s)
check(e == 1, "WRITE on read-only export -> EPERM (%d %r)" % (e, d))
req(s, 4, 0, 512, 2); c, e, d = reply(s)
check(e == 1, "TRIM on read-only -> EPERM")

# DISC with requests in flight: all replies then EOF
s, _ = session("md0")
for i in range(20): req(s, 1, i * 1048576, 1048576, 500 + i, payload=b"q" * 1048576)
req(s, 2, 0, 0, 0)
n = 0
try:
    while True:
        c, e, d = reply(s); n += 1
except EOFError: pass
check(n == 20, "DISC after 20 writes: %d replies then EOF" % n)

# slow client in handshake does not block others
slow = socket.socket(socket.AF_UNIX); slow.connect(SOCK)
t = time.time(); s, _ = session("md0"); req(s, 0, 0, 512, 1); reply(s)
check(time.time() - t < 1, "a silent client in the handshake does not block a new one")
# half request then close
s, _ = session("md0"); s.sendall(struct.pack(">IHHQQI", REQ, 0, 1, 1, 0, 4096) + b"a" * 100); s.close()
s, _ = session("md0"); req(s, 0, 0, 512, 1); c, e, d = reply(s)
check(e == 0, "server fine after a client died mid-payload")
print("FAILURES:", fails)
sys.exit(1 if fails else 0)
