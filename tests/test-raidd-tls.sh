#!/bin/bash
# Description: raidd serves arrays over TCP safely: TLS (X.509 and PSK),
# the --allow access list and their errors.  A CA, server and client
# certificates (certtool) and a PSK file (psktool) are made in a temporary
# directory.  With --tls=require: a plain client is refused (nbdinfo
# fails; a raw client's NBD_OPT_LIST and NBD_OPT_GO get
# NBD_REP_ERR_TLS_REQD, NBD_OPT_EXPORT_NAME is hung up on); nbdinfo over
# nbds:// with the certificates or with the PSK sees the export; data
# written over TLS with nbdcopy reads back identical (checksums), plain
# over the unix socket too; qemu-img and qemu-io over TLS (X.509 and PSK
# credential objects); a wrong PSK key and an unknown user are refused.
# --tls=on serves plain and TLS clients; --tls-verify-peer refuses a client
# without a certificate and takes one with, and outlives clients that drop
# their connections with requests in flight.  --allow: 127.0.0.1 refused
# when only another address is listed (logged with the address, before any
# handshake byte), let in when listed, ::1 likewise when IPv6 works.
# --group: the unix socket becomes group "users" and 0660; nobody gets in
# as a member of that group (primary or supplementary) and is refused by
# raidd's credential check without it, even through a socket opened to
# all by hand.  Every bad option value or missing file stops raidd with
# its own message.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires nbdinfo --version
requires nbdcopy --version
requires qemu-img --version
requires qemu-io --version
requires certtool --version
requires psktool --version
requires python3 --version
nbdinfo --help 2>&1 | grep -q -- --list || skip "nbdinfo has no --list"

mktmpdir test-raidd-tls
raidd_env "$tmpdir"
pki=$d/pki
mkdir -p "$pki/server" "$pki/client" "$pki/anon"

# A free TCP port on the loopback (the kernel picks it).
free_port () {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ---- credentials ---------------------------------------------------------------
certtool --generate-privkey --key-type=ecdsa --outfile "$pki/ca-key.pem" 2>/dev/null
cat > "$pki/ca.info" <<EOF
cn = raidd test CA
ca
cert_signing_key
expiration_days = 2
EOF
certtool --generate-self-signed --load-privkey "$pki/ca-key.pem" \
  --template "$pki/ca.info" --outfile "$pki/server/ca-cert.pem" 2>/dev/null
cp "$pki/server/ca-cert.pem" "$pki/client/ca-cert.pem"
cp "$pki/server/ca-cert.pem" "$pki/anon/ca-cert.pem"
certtool --generate-privkey --key-type=ecdsa --outfile "$pki/server/server-key.pem" 2>/dev/null
cat > "$pki/server.info" <<EOF
organization = raidd test
cn = localhost
dns_name = localhost
ip_address = 127.0.0.1
ip_address = ::1
tls_www_server
encryption_key
signing_key
expiration_days = 2
EOF
certtool --generate-certificate --load-ca-certificate "$pki/server/ca-cert.pem" \
  --load-ca-privkey "$pki/ca-key.pem" --load-privkey "$pki/server/server-key.pem" \
  --template "$pki/server.info" --outfile "$pki/server/server-cert.pem" 2>/dev/null
certtool --generate-privkey --key-type=ecdsa --outfile "$pki/client/client-key.pem" 2>/dev/null
cat > "$pki/client.info" <<EOF
organization = raidd test
cn = client
tls_www_client
encryption_key
signing_key
expiration_days = 2
EOF
certtool --generate-certificate --load-ca-certificate "$pki/server/ca-cert.pem" \
  --load-ca-privkey "$pki/ca-key.pem" --load-privkey "$pki/client/client-key.pem" \
  --template "$pki/client.info" --outfile "$pki/client/client-cert.pem" 2>/dev/null
psktool -u alice -p "$pki/keys.psk" >/dev/null
# A file with alice's name and another key.
psktool -u alice -p "$pki/wrong.psk" >/dev/null
cmp -s "$pki/keys.psk" "$pki/wrong.psk" && fail "psktool made the same key twice"

port=$(free_port)
# Each raidd logs afresh, so that a check sees only its own lines.
start () { : > "$d/raidd.log"; start_raidd --nbd-listen "127.0.0.1:$port" "$@"; }
x509_uri () { echo "nbds://127.0.0.1:$port/$1?tls-certificates=$2"; }
psk_uri () { echo "nbds://${3:-alice}@127.0.0.1:$port/$1?tls-psk-file=$2"; }
asm () { R assemble r1 "$d/m0" "$d/m1" > /dev/null || fail "assemble r1"; }
plain_uri () { echo "nbd://127.0.0.1:$port/$1"; }

# A raw plain client: the reply type to one option (after the greeting),
# or "closed" when the server hangs up.
raw_option () {
  python3 - "$port" "$1" "${2:-}" <<'PY'
import socket, struct, sys
port, opt, name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()
s = socket.create_connection(("127.0.0.1", port), timeout=10)
def recv(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            print("closed"); sys.exit(0)
        b += c
    return b
magic, ihaveopt, hflags = struct.unpack(">QQH", recv(18))
assert magic == 0x4e42444d41474943 and ihaveopt == 0x49484156454F5054, "bad greeting"
s.sendall(struct.pack(">I", 1 | 2))          # FIXED_NEWSTYLE | NO_ZEROES
if opt == 7:                                  # GO: name, no info requests
    data = struct.pack(">I", len(name)) + name + struct.pack(">H", 0)
elif opt == 1:                                # EXPORT_NAME
    data = name
else:
    data = b""
s.sendall(struct.pack(">QII", 0x49484156454F5054, opt, len(data)) + data)
try:
    rmagic, ropt, rtype, rlen = struct.unpack(">QIII", recv(20))
except (ConnectionResetError, socket.timeout):
    print("closed"); sys.exit(0)
print(hex(rtype))
PY
}

# ---- --tls=require with X.509 ------------------------------------------------------
start --tls=require --tls-certificates "$pki/server"
grep -q "nbd: TLS with X.509 certificates from $pki/server" "$d/raidd.log" ||
  fail "no TLS line in the log"
grep -q "anyone who can reach it" "$d/raidd.log" && fail "warned with --tls=require"
truncate -s 40M "$d/m0" "$d/m1"
R create r1 --level 1 --assume-clean "$d/m0" "$d/m1" > /dev/null || fail "create r1"

# Plain clients: refused.
if nbdinfo "$(plain_uri r1)" > "$d/out" 2>&1; then fail "plain nbdinfo read r1 under --tls=require"; fi
if nbdinfo --list "$(plain_uri "")" > "$d/out" 2>&1; then fail "plain nbdinfo --list under --tls=require"; fi
[ "$(raw_option 3)" = 0x80000005 ] || fail "NBD_OPT_LIST in the clear: $(raw_option 3), not NBD_REP_ERR_TLS_REQD"
[ "$(raw_option 7 r1)" = 0x80000005 ] || fail "NBD_OPT_GO in the clear: not NBD_REP_ERR_TLS_REQD"
[ "$(raw_option 1 r1)" = closed ] || fail "NBD_OPT_EXPORT_NAME in the clear was not hung up on"
grep -q "option 3 refused: TLS is required" "$d/raidd.log" || fail "refusal not logged"
grep -q "NBD_OPT_EXPORT_NAME without TLS" "$d/raidd.log" || fail "EXPORT_NAME refusal not logged"
# STARTTLS: accepted (its ACK), and then the TLS handshake is expected.
[ "$(raw_option 5)" = 0x1 ] || fail "NBD_OPT_STARTTLS not acknowledged"

# TLS with the client certificate, and with only the CA (no --tls-verify-peer).
nbdinfo --json "$(x509_uri r1 "$pki/client")" > "$d/info.json" 2>"$d/err" ||
  fail "nbdinfo over TLS (X.509): $(cat "$d/err")"
python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["exports"][0]; assert e["export-name"]=="r1" and e["export-size"]>0, e' \
  "$d/info.json" || fail "nbdinfo over TLS: wrong export"
nbdinfo --size "$(x509_uri r1 "$pki/anon")" > /dev/null 2>"$d/err" ||
  fail "nbdinfo over TLS without a client certificate: $(cat "$d/err")"
nbdinfo --list "$(x509_uri "" "$pki/client")" 2>/dev/null | grep -q 'export="r1"' ||
  fail "nbdinfo --list over TLS does not list r1"
grep -q "127.0.0.1:[0-9]*: TLS (TLS1" "$d/raidd.log" || fail "no TLS session in the log"

# Data over TLS: in with nbdcopy, back over TLS and over the plain unix
# socket... which --tls=require also guards: back with TLS over unix too.
head -c 16M /dev/urandom > "$d/data"
want=$(sha256sum < "$d/data" | cut -d' ' -f1)
nbdcopy "$d/data" "$(x509_uri r1 "$pki/client")" || fail "nbdcopy over TLS into r1"
nbdcopy "$(x509_uri r1 "$pki/client")" "$d/back" || fail "nbdcopy over TLS out of r1"
[ "$(head -c 16M "$d/back" | sha256sum | cut -d' ' -f1)" = "$want" ] || fail "TLS copy differs"
if nbdinfo "nbd+unix:///r1?socket=$sock" >/dev/null 2>&1; then
  fail "plain unix client served under --tls=require"
fi
nbdcopy "nbds+unix:///r1?socket=$sock&tls-certificates=$pki/anon&tls-hostname=localhost" "$d/back2" ||
  fail "nbdcopy over TLS on the unix socket"
cmp -s "$d/back" "$d/back2" || fail "TLS over unix reads other data"

# qemu over TLS with X.509: qemu-img info, qemu-io write + read back.
qobj=(--object "tls-creds-x509,id=tls0,dir=$pki/client,endpoint=client")
qimg () { echo "driver=nbd,host=127.0.0.1,port=$port,export=$1,tls-creds=tls0"; }
qemu-img info "${qobj[@]}" --image-opts "$(qimg r1)" > "$d/qi" 2>&1 || fail "qemu-img info over TLS: $(cat "$d/qi")"
grep -q "virtual size: .*(4[0-9]* bytes)" "$d/qi" || grep -q "virtual size:" "$d/qi" || fail "qemu-img info: $(cat "$d/qi")"
qemu-io "${qobj[@]}" --image-opts "$(qimg r1)" -c 'write -P 0xa5 1M 256K' -c 'read -P 0xa5 1M 256K' \
  > "$d/qio" 2>&1 || fail "qemu-io over TLS: $(cat "$d/qio")"
grep -q "Pattern verification failed" "$d/qio" && fail "qemu-io over TLS: pattern differs"
# What r1 holds now: the random data with qemu-io's pattern over it.
cp "$d/data" "$d/expect"
head -c 256K /dev/zero | tr '\0' '\245' | dd of="$d/expect" bs=1M seek=1 conv=notrunc status=none
nbdcopy "$(x509_uri r1 "$pki/client")" "$d/back" || fail "nbdcopy over TLS after qemu-io"
cmp -n 16M -s "$d/expect" "$d/back" || fail "qemu-io's write over TLS does not read back with nbdcopy"
stop_raidd

# ---- --tls=require with PSK -----------------------------------------------------
start --tls=require --tls-psk "$pki/keys.psk"
grep -q "nbd: TLS with pre-shared keys from" "$d/raidd.log" || fail "no PSK line in the log"
asm
nbdinfo --size "$(psk_uri r1 "$pki/keys.psk")" > "$d/size" 2>"$d/err" || fail "nbdinfo over TLS (PSK): $(cat "$d/err")"
[ "$(cat "$d/size")" -gt 0 ] || fail "PSK: no size"
grep -q 'PSK user "alice"' "$d/raidd.log" || fail "PSK user not logged"
nbdcopy "$(psk_uri r1 "$pki/keys.psk")" "$d/back3" || fail "nbdcopy over TLS (PSK)"
cmp -n 16M -s "$d/expect" "$d/back3" || fail "PSK copy differs"
if nbdinfo --size "$(psk_uri r1 "$pki/wrong.psk")" >/dev/null 2>&1; then fail "a wrong PSK key was let in"; fi
grep -q "TLS handshake failed" "$d/raidd.log" || fail "wrong key's handshake failure not logged"
sed 's/^alice:/mallory:/' "$pki/wrong.psk" > "$pki/mallory.psk"
if nbdinfo --size "$(psk_uri r1 "$pki/mallory.psk" mallory)" >/dev/null 2>&1; then fail "an unknown PSK user was let in"; fi
if nbdinfo --size "$(plain_uri r1)" >/dev/null 2>&1; then fail "plain client served under --tls=require (PSK)"; fi
# qemu with PSK: qemu's tls-creds-psk reads DIR/keys.psk.
qpsk=(--object "tls-creds-psk,id=tls0,dir=$pki,username=alice,endpoint=client")
qemu-io "${qpsk[@]}" --image-opts "$(qimg r1)" -c 'write -P 0x5a 2M 128K' -c 'read -P 0x5a 2M 128K' \
  > "$d/qio" 2>&1 || fail "qemu-io over TLS (PSK): $(cat "$d/qio")"
grep -q "Pattern verification failed" "$d/qio" && fail "qemu-io over PSK: pattern differs"
head -c 128K /dev/zero | tr '\0' '\132' | dd of="$d/expect" bs=1M seek=2 conv=notrunc status=none
qemu-img info "${qpsk[@]}" --image-opts "$(qimg r1)" > "$d/qi" 2>&1 || fail "qemu-img info over PSK: $(cat "$d/qi")"
stop_raidd

# ---- --tls=on: plain and TLS clients both -------------------------------------------
start --tls=on --tls-certificates "$pki/server"
grep -q "nbd: --nbd-listen 127.0.0.1:$port with TLS optional" "$d/raidd.log" ||
  fail "no warning for --tls=on without --allow"
asm
nbdinfo --size "$(plain_uri r1)" > /dev/null 2>"$d/err" || fail "--tls=on: plain client refused: $(cat "$d/err")"
nbdinfo --size "$(x509_uri r1 "$pki/client")" > /dev/null 2>"$d/err" || fail "--tls=on: TLS client refused: $(cat "$d/err")"
nbdcopy "$(plain_uri r1)" "$d/back4" || fail "--tls=on: plain nbdcopy"
cmp -n 16M -s "$d/expect" "$d/back4" || fail "--tls=on: plain read differs"
stop_raidd

# ---- --tls=off: STARTTLS is refused as unsupported; the warning ---------------------
start
grep -q "nbd: --nbd-listen 127.0.0.1:$port without TLS" "$d/raidd.log" || fail "no warning without TLS"
[ "$(raw_option 5)" = 0x80000001 ] || fail "NBD_OPT_STARTTLS with --tls=off: not NBD_REP_ERR_UNSUP"
if nbdinfo --size "$(x509_uri r1 "$pki/client")" >/dev/null 2>&1; then fail "TLS client served with --tls=off"; fi
stop_raidd

# ---- --tls-verify-peer --------------------------------------------------------------------
start --tls=require --tls-certificates "$pki/server" --tls-verify-peer
grep -q "client certificates required" "$d/raidd.log" || fail "verify-peer not logged"
asm
if nbdinfo --size "$(x509_uri r1 "$pki/anon")" >/dev/null 2>&1; then
  fail "--tls-verify-peer let in a client without a certificate"
fi
nbdinfo --size "$(x509_uri r1 "$pki/client")" > /dev/null 2>"$d/err" ||
  fail "--tls-verify-peer refused a client with a certificate: $(cat "$d/err")"
grep -q "client certificate verified" "$d/raidd.log" || fail "verified client not logged"
# Clients that drop their connections with requests in flight (nbdcopy
# gives up on the unaligned tail of a 12813-byte file and closes without
# waiting for its writes' replies): raidd lives on (GnuTLS crashed in
# close_notify on a session it had invalidated).
head -c 12813 /dev/urandom > "$d/odd"
truncate -s 64M "$d/x0" "$d/x1"
R create drop --level 1 "$d/x0" "$d/x1" > /dev/null 2>&1 || fail "create drop"
for i in $(seq 10); do
  if nbdcopy "$d/odd" "$(x509_uri drop "$pki/client")" 2>/dev/null; then fail "nbdcopy of an unaligned file succeeded"; fi
done
sleep 1
kill -0 "$raidd_pid" || fail "raidd died when TLS clients went away with requests in flight"
R stop drop > /dev/null || fail "stop drop"
stop_raidd

# ---- --allow ---------------------------------------------------------------------------
start --allow 192.0.2.0/24,10.1.2.3
asm
grep -q "anyone who can reach it" "$d/raidd.log" && fail "warned although --allow is given"
[ "$(raw_option 3)" = closed ] || fail "a client outside --allow got a reply"
if nbdinfo --size "$(plain_uri r1)" >/dev/null 2>&1; then fail "127.0.0.1 let in outside --allow"; fi
grep -q "nbd: 127.0.0.1:[0-9]*: refused: not in the --allow list" "$d/raidd.log" ||
  fail "--allow refusal not logged with the address"
# The unix socket is not subject to --allow.
nbdinfo --size "nbd+unix:///r1?socket=$sock" >/dev/null || fail "--allow closed the unix socket"
stop_raidd
start --allow 192.0.2.1 --allow 127.0.0.0/8
asm
nbdinfo --size "$(plain_uri r1)" >/dev/null 2>"$d/err" || fail "127.0.0.1 refused inside --allow 127.0.0.0/8: $(cat "$d/err")"
stop_raidd
if python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null; then
  port6=$(free_port)
  "$raidd" --foreground --control "$ctl" --nbd-socket "$sock" --threads 2 \
    --nbd-listen "[::1]:$port6" --allow 127.0.0.1 >>"$d/raidd.log" 2>&1 &
  raidd_pid=$!
  for i in $(seq 100); do R status >/dev/null 2>&1 && break; sleep 0.1; done
  if nbdinfo --size "nbd://[::1]:$port6/r1" >/dev/null 2>&1; then fail "::1 let in outside --allow"; fi
  grep -q "nbd: \[::1\]:[0-9]*: refused: not in the --allow list" "$d/raidd.log" || fail "::1 refusal not logged"
  stop_raidd
  "$raidd" --foreground --control "$ctl" --nbd-socket "$sock" --threads 2 \
    --nbd-listen "[::1]:$port6" --allow ::1/128 >>"$d/raidd.log" 2>&1 &
  raidd_pid=$!
  for i in $(seq 100); do R status >/dev/null 2>&1 && break; sleep 0.1; done
  asm
  nbdinfo --size "nbd://[::1]:$port6/r1" >/dev/null 2>"$d/err" || fail "::1 refused inside --allow ::1/128: $(cat "$d/err")"
  stop_raidd
else
  echo "$0: no IPv6 loopback here: the ::1 checks are left out"
fi

# ---- --group: the unix socket for a group's members ------------------------------------
# As root: the socket is group "users", mode 0660; nobody gets in with
# "users" as its group or among its supplementary groups, and, once the
# socket is opened to all by hand, raidd's own credential check still
# keeps nobody out without it.
if [ "$(id -u)" = 0 ] && getent group users >/dev/null && command -v setpriv >/dev/null; then
  start --group users
  asm
  [ "$(stat -c '%G %a' "$sock")" = "users 660" ] || fail "--group users: socket is $(stat -c '%G %a' "$sock")"
  chmod 755 "$d"
  as_nobody () { setpriv --reuid=65534 "$@" -- nbdinfo --size "nbd+unix:///r1?socket=$sock"; }
  as_nobody --regid=100 --clear-groups >/dev/null 2>"$d/err" || fail "--group users: its gid refused: $(cat "$d/err")"
  as_nobody --regid=65534 --groups=100 >/dev/null 2>"$d/err" || fail "--group users: a supplementary member refused: $(cat "$d/err")"
  if as_nobody --regid=65534 --clear-groups >/dev/null 2>&1; then fail "--group users: nobody got in"; fi
  chmod 666 "$sock"
  if as_nobody --regid=65534 --clear-groups >/dev/null 2>&1; then fail "nobody got in through a socket opened by hand"; fi
  grep -q "nbd: unix pid [0-9]* uid 65534: refused: not root, not raidd's user and not in group users" "$d/raidd.log" ||
    fail "the credential check's refusal is not logged"
  chmod 700 "$d"
  stop_raidd
else
  echo "$0: not root, or no group \"users\" or setpriv: the --group checks are left out"
fi

# ---- bad values: each its own message, raidd does not start ----------------------------
bad () {
  local want=$1; shift
  if "$raidd" --foreground --control "$d/bad.sock" --nbd-socket "$d/bad-nbd.sock" "$@" \
       > "$d/bad.out" 2>&1; then
    fail "raidd $* started"
  fi
  grep -qF -- "$want" "$d/bad.out" || fail "raidd $*: expected \"$want\", got: $(cat "$d/bad.out")"
}
bad "--tls=maybe: must be off, on or require" --tls=maybe
bad "--tls=require needs credentials" --tls=require
bad "--tls=on needs credentials" --tls=on
bad "--tls-certificates is given but TLS is off" --tls-certificates "$pki/server"
bad "--tls-psk is given but TLS is off" --tls-psk "$pki/keys.psk"
bad "--tls-certificates $d/nowhere: No such file or directory" --tls=on --tls-certificates "$d/nowhere"
bad "--tls-certificates $pki/client: cannot read $pki/client/server-cert.pem" --tls=on --tls-certificates "$pki/client"
bad "--tls-psk $d/nowhere.psk: No such file or directory" --tls=require --tls-psk "$d/nowhere.psk"
printf 'alice\n' > "$d/broken.psk"
bad "--tls-psk $d/broken.psk: line 1: expected USERNAME:HEXKEY" --tls=require --tls-psk "$d/broken.psk"
: > "$d/empty.psk"
bad "--tls-psk $d/empty.psk: no key in it" --tls=require --tls-psk "$d/empty.psk"
bad "--tls-verify-peer checks client certificates: it needs --tls-certificates" \
  --tls=require --tls-psk "$pki/keys.psk" --tls-verify-peer
bad "--tls-verify-peer is given but TLS is off" --tls-verify-peer
mkdir "$d/badpki"; cp "$pki/server/"*.pem "$d/badpki/"; echo garbage > "$d/badpki/server-key.pem"
bad "--tls-certificates $d/badpki: $d/badpki/server-cert.pem and $d/badpki/server-key.pem:" \
  --tls=on --tls-certificates "$d/badpki"
bad '--allow 10.0.0.0/33: prefix length "33" for 10.0.0.0 must be 0 to 32' --allow 10.0.0.0/33
bad '--allow ::1/129: prefix length "129" for ::1 must be 0 to 128' --allow ::1/129
bad '--allow example.com: "example.com" is not an IPv4 or IPv6 address' --allow example.com
bad '--allow 10.0.0.1,,10.0.0.2: an empty entry' --allow 10.0.0.1,,10.0.0.2
bad '--allow 10.0.0.0/: prefix length "" for 10.0.0.0 must be 0 to 32' --allow 10.0.0.0/
bad "--group no-such-group-raidd: no such group" --group no-such-group-raidd
echo "$0: PASS"
