#!/bin/bash
# Description: a remote member across a real link: a network namespace and
# a veth pair made here (addresses assigned here, all removed at the end),
# nbdkit in the namespace serving a file over TCP with TLS-PSK (the key in
# a file, named by tls-psk-file= in the URI).  A RAID 1 of a local file
# and that member, under fio writing and verifying: the link is cut
# (ip link set down), requests go unanswered, the member is lost after its
# timeout= and the array goes on degraded; the link comes back up, raidd
# reconnects by itself and re-adds the member over the bitmap; fio ends
# without an error and scrub finds 0 mismatches.  The key appears in no
# log line and no status.  Before that, a wrong key and a host that is not
# there are refused by create, naming the URI, the local member untouched.
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"
requires_root
requires ip netns list
requires fio --enghelp=nbd
requires nbdkit --version
requires psktool --version
requires python3 --version

mktmpdir test-raidd-remote-netns
raidd_env "$tmpdir"

# Names and addresses of our own: the PID keeps parallel runs apart.
ns=raidtest$$ veth=rt$$a peer=rt$$b
net=10.$(( ($$ >> 8) % 200 + 20 )).$(( $$ % 250 + 1 ))
ip netns add "$ns" || skip "cannot make a network namespace"
srv_pid=
teardown () {
  [ -z "$srv_pid" ] || kill_pid "$srv_pid"
  ip link del "$veth" 2>/dev/null || :
  ip netns del "$ns" 2>/dev/null || :
}
cleanup_fn teardown
ip link add "$veth" type veth peer name "$peer"
ip link set "$peer" netns "$ns"
ip addr add "$net.1/24" dev "$veth"
ip link set "$veth" up
ip -n "$ns" addr add "$net.2/24" dev "$peer"
ip -n "$ns" link set "$peer" up
ip -n "$ns" link set lo up

psktool -p "$d/keys.psk" -u mirror >/dev/null
key=$(cut -d: -f2 "$d/keys.psk")
truncate -s 64M "$d/far.img" "$d/near.img"
ip netns exec "$ns" nbdkit --tls=require --tls-psk="$d/keys.psk" -i "$net.2" -p 10809 \
  -P "$d/far.pid" file "$d/far.img"
for _ in $(seq 100); do [ -s "$d/far.pid" ] && break; sleep 0.05; done
srv_pid=$(cat "$d/far.pid")

start_raidd
# Bad input first: a wrong key and a host that is not there are refused,
# naming the URI (never the key), and nothing is written to the local
# member.
psktool -p "$d/wrong.psk" -u mirror >/dev/null
cp "$d/near.img" "$d/near.orig"
for bad in "nbds://mirror@$net.2:10809/?tls-psk-file=$d/wrong.psk&connect-timeout=2" \
           "nbd://$net.99:10809/?connect-timeout=1"; do
  if R create bad --level 1 "$d/near.img" "$bad" > "$d/out" 2>&1; then
    fail "create with $bad succeeded"
  fi
  grep -qF "$bad" "$d/out" || fail "the error does not name $bad: $(cat "$d/out")"
  cmp -s "$d/near.img" "$d/near.orig" || fail "create with $bad wrote to the local member"
done
grep -qF "$(cut -d: -f2 "$d/wrong.psk")" "$d/out" "$d/raidd.log" && fail "a key appears in a message"
far="nbds://mirror@$net.2:10809/?tls-psk-file=$d/keys.psk&timeout=2&connect-timeout=2"
R create pair --level 1 --bitmap internal --bitmap-chunk 1M "$d/near.img" "$far" >/dev/null
R wait pair

st () {
  R status --json pair > "$d/st.json"
  python3 -c "import json,sys; a=json.load(open(sys.argv[1]))[0]; print($1)" "$d/st.json"
}
state () { st "([x['state'] for x in a['members'] if x['path'] == '''$far'''] + [''])[0]"; }
wait_state () {
  for _ in $(seq 600); do [ "$(state)" = "$1" ] && return 0; sleep 0.05; done
  fail "the far member is '$(state)', not '$1', after 30 s"
}

fio --name=netns --ioengine=nbd --uri="nbd+unix:///pair?socket=$sock" --rw=randwrite \
  --bs=4k --size=8M --iodepth=8 --verify=crc32c --verify_backlog=128 --verify_fatal=1 \
  --verify_state_save=0 --serialize_overlap=1 --time_based=1 --runtime=10 \
  --output="$d/fio.out" >/dev/null 2>&1 &
fio_pid=$!
kill_fio () { [ -z "${fio_pid:-}" ] || kill_pid "$fio_pid"; }
cleanup_fn kill_fio
sleep 1.5
ip link set "$veth" down                 # the cable is pulled
wait_state faulty
grep -q "no reply for" "$d/raidd.log" || grep -q "member $far.*lost" "$d/raidd.log" ||
  fail "the log does not say why the member was lost"
sleep 1
ip link set "$veth" up                   # ... and plugged back
wait_state in_sync
rc=0; wait "$fio_pid" || rc=$?; fio_pid=
[ $rc = 0 ] && grep -q "err= 0" "$d/fio.out" || { cat "$d/fio.out" >&2; fail "fio exited $rc"; }
R wait pair
grep -q "remote member $far is back: re-added" "$d/raidd.log" || fail "the member was not re-added"
R scrub pair --wait >/dev/null
[ "$(st "a['sync']['mismatches']")" = 0 ] || fail "scrub found mismatches"
R status pair > "$d/status.txt"
R detail pair >> "$d/status.txt" 2>&1 || :
if grep -qF "$key" "$d/raidd.log" "$d/status.txt"; then fail "the PSK appears in the log or the status"; fi
R stop pair >/dev/null
echo "test-raidd-remote-netns: OK"
