#!/usr/bin/env python3
# Description: a misbehaving client of raidd's control socket, for
# tests/test-raidd-control.sh.
#
#   control-misuse.py stall SOCKET [PARTIAL]
#       connect, send PARTIAL (nothing by default) and no newline, print
#       "connected" and hold the connection until killed or the server
#       closes it (then print what it sent, and "closed").
#   control-misuse.py request SOCKET TEXT
#       send TEXT and a newline as they are (any JSON, valid or not) and
#       print the reply line.
#   control-misuse.py oversize SOCKET BYTES
#       send a request of BYTES bytes (a JSON object with one long string,
#       no newline) and print the reply line.
#   control-misuse.py hold SOCKET N
#       open N connections that send nothing, print "holding N" and keep
#       them until killed: the server cuts each held one off after its
#       time-out, and then it is opened again at once ("reopened"), so
#       that the server stays at its limit (if another client took the
#       place meanwhile, it is tried again every 0.1 s: "retried"); one
#       the server refuses at first (closed with a "busy" reply) stays
#       closed ("refused").
import selectors
import socket
import sys
import threading
import time


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(path)
    return s


def read_reply(s):
    data = b""
    try:
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except (ConnectionResetError, socket.timeout) as e:
        if not data:
            return "(no reply: %s)" % e
    return data.decode("utf-8", "replace").strip()


def hold(path, n):
    sel = selectors.DefaultSelector()

    # Each connection's data: what the server sent, and whether it
    # replaces one the server held.
    def open_one(replacing):
        # Blocking: a connect to a full backlog waits instead of failing.
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, (bytearray(), replacing))

    for _ in range(n):
        open_one(False)
    print("holding %d" % n, flush=True)
    while True:
        for key, _ in sel.select():
            s, (got, replacing) = key.fileobj, key.data
            try:
                chunk = s.recv(65536)
            except BlockingIOError:
                continue
            except ConnectionResetError:
                chunk = b""
            if chunk:
                got += chunk
                continue
            sel.unregister(s)
            s.close()
            if b"busy" in got and not replacing:
                print("refused", flush=True)
            elif b"busy" in got:
                # Another client took the freed place meanwhile: try
                # again until it is ours.
                time.sleep(0.1)
                open_one(True)
                print("retried", flush=True)
            else:
                open_one(True)
                print("reopened", flush=True)


def main():
    verb, path = sys.argv[1], sys.argv[2]
    if verb == "stall":
        s = connect(path)
        if len(sys.argv) > 3:
            s.sendall(sys.argv[3].encode())
        print("connected", flush=True)
        s.settimeout(None)
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            sys.stdout.write(chunk.decode("utf-8", "replace"))
        print("closed", flush=True)
    elif verb == "request":
        s = connect(path)
        s.sendall(sys.argv[3].encode() + b"\n")
        print(read_reply(s))
    elif verb == "oversize":
        n = int(sys.argv[3])
        head = b'{"verb": "status", "x": "'
        body = head + b"a" * (n - len(head))
        s = connect(path)

        # The server stops reading at its limit and answers: send from
        # another thread, so that a send blocked on a full socket does not
        # keep us from reading the reply.
        def send():
            try:
                s.sendall(body)
            except OSError:
                pass
        t = threading.Thread(target=send, daemon=True)
        t.start()
        print(read_reply(s))
    elif verb == "hold":
        hold(path, int(sys.argv[3]))
    else:
        sys.exit("unknown verb " + verb)


main()
