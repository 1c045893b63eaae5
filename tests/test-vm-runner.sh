#!/bin/bash
# Description: the VM runner itself (tests/vm/run), before the VM tests
# rely on it: a script's exit status, its stdout and stderr (kept apart)
# and --env come back from Debian's kernel in the VM, a script that ends
# well gives 0, and a run that outlives --timeout ends with the runner's
# own status 124, saying so; --kernel names stable or backports.  A panic
# under the script is shown and final (125); a guest that dies before the
# script starts is booted once more; a kernel that hangs (an RCU grace
# period stuck through two stall reports) is stopped, 125, its console
# shown from the first report with the state and stack of the task the
# report names and sysrq's blocked tasks (tests/vm/init).  Eight short
# boots.  Run by "make check-vm".
set -euo pipefail
. "${top_srcdir:-.}/tests/functions.sh"

vm=${RAID_VM_RUN:-$top_srcdir/tests/vm/run}
requires_file "$vm"
requires qemu-system-x86_64 --version
requires_root
fail () { echo "$0: FAIL: $*" >&2; exit 1; }
mktmpdir raid-vm-runner
d=$tmpdir

cat > "$d/three.sh" <<'EOF'
#!/bin/bash
echo "out: $GREETING from $(uname -r)"
echo "err: on stderr" >&2
exit 3
EOF
printf '#!/bin/sh\nexit 0\n' > "$d/zero.sh"
printf '#!/bin/sh\nsleep 600\n' > "$d/sleep.sh"
chmod +x "$d"/*.sh

# A kernel it does not know is a usage error, before anything boots.
st=0
"$vm" --kernel sid -- "$d/zero.sh" > "$d/out" 2> "$d/err" || st=$?
[ "$st" = 2 ] || fail "--kernel sid: the runner says $st, not 2"
grep -q "kernel stable or backports, not 'sid'" "$d/err" || fail "--kernel sid: $(cat "$d/err")"
st=0
RAID_VM_KERNEL=sid "$vm" -- "$d/zero.sh" > "$d/out" 2> "$d/err" || st=$?
[ "$st" = 2 ] || fail "RAID_VM_KERNEL=sid: the runner says $st, not 2"
echo "ok   --kernel and RAID_VM_KERNEL take stable or backports only"

st=0
"$vm" --share "$d" --env GREETING="hello, vm" --timeout 300 -- "$d/three.sh" \
  > "$d/out" 2> "$d/err" || st=$?
cat "$d/out" "$d/err"
[ "$st" = 3 ] || fail "the script exited 3, the runner says $st"
grep -q '^out: hello, vm from [0-9]' "$d/out" || fail "the script's stdout did not come back"
grep -qx 'err: on stderr' "$d/err" || fail "the script's stderr did not come back"
grep -q '^err:' "$d/out" && fail "the script's stderr came out on stdout"
echo "ok   exit status 3, stdout, stderr and --env come back"

st=0
"$vm" --timeout 300 -- "$d/zero.sh" || st=$?
[ "$st" = 0 ] || fail "the script exited 0, the runner says $st"
echo "ok   exit status 0 comes back"

st=0
"$vm" --timeout 3 -- "$d/sleep.sh" 2> "$d/err" || st=$?
cat "$d/err"
[ "$st" = 124 ] || fail "a run past --timeout gave $st, not 124"
grep -q TIMEOUT "$d/err" || fail "the runner did not say it timed out"
echo "ok   --timeout: status 124, said so"

# A guest that panics while the script runs: 125, the panic shown from its
# first line, and no second boot (the script's failure is final).
printf '#!/bin/sh\necho c > /proc/sysrq-trigger\nsleep 60\n' > "$d/panic.sh"
chmod +x "$d/panic.sh"
st=0
"$vm" --timeout 300 -- "$d/panic.sh" 2> "$d/err" || st=$?
cat "$d/err"
[ "$st" = 125 ] || fail "a guest that panicked gave $st, not 125"
grep -q '| .*Kernel panic - not syncing' "$d/err" || fail "the panic was not shown"
grep -q '| .*sysrq' "$d/err" || fail "the panic's first lines were not shown"
grep -q 'booting it again' "$d/err" && fail "a panic under the script was booted again"
echo "ok   a panic under the script: status 125, the panic shown, no second boot"

# A guest that dies while booting, before the script starts, is booted once
# more, and the run is the second boot's.
st=0
RAID_VM_TEST_BOOT_PANIC=1 "$vm" --share "$d" --env GREETING=again --timeout 300 -- "$d/three.sh" \
  > "$d/out" 2> "$d/err" || st=$?
cat "$d/out" "$d/err"
[ "$st" = 3 ] || fail "after a boot that died, the runner says $st, not the script's 3"
grep -q 'the guest died while booting, before the script started' "$d/err" ||
    fail "the runner did not say the first boot died"
grep -q '| .*Kernel panic - not syncing' "$d/err" || fail "the first boot's panic was not shown"
[ "$(grep -c '^out: again from' "$d/out")" = 1 ] || fail "the script did not run exactly once"
echo "ok   a boot that dies before the script is booted once more"

# A guest kernel that hangs: an RCU grace period still stuck at the second
# stall report on it stops the run there, with 125, said, the reports
# shown with where the task they name was (its stack), long before
# --timeout.  The reports are the kernel's own words,
# written to /dev/kmsg by the script (nothing a script does can make a
# real stall).  One report alone (a busy host starving a vCPU, the grace
# period then ending) stops nothing.
cat > "$d/stall.sh" <<'EOS'
#!/bin/sh
report () { echo "<2>rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:" > /dev/kmsg
            echo "<2>rcu: 	Tasks blocked on level-0 rcu_node (CPUs 0-1): P1/1:b..l" > /dev/kmsg
            echo "<2>rcu: 	(detected by 0, t=$1 jiffies, g=$2, q=20751 ncpus=2)" > /dev/kmsg; }
report 52517 2409
[ "$1" = once ] && { sleep 12; exit 0; }
sleep 1
report 68272 2409
sleep 600
EOS
chmod +x "$d/stall.sh"
st=0
"$vm" --share "$d" --timeout 300 -- "$d/stall.sh" once 2> "$d/err" || st=$?
cat "$d/err"
[ "$st" = 0 ] || fail "one stall report stopped the run: $st, not the script's 0"
st=0
SECONDS=0
"$vm" --share "$d" --timeout 300 -- "$d/stall.sh" 2> "$d/err" || st=$?
cat "$d/err"
[ "$st" = 125 ] || fail "a guest whose kernel hung gave $st, not 125"
grep -q "the guest's kernel hung: RCU grace period 2409 stuck" "$d/err" ||
    fail "the runner did not say the kernel hung"
grep -q '| .*detected by 0, t=68272 jiffies, g=2409' "$d/err" || fail "the stall reports were not shown"
# tests/vm/init's word on the task the report names (PID 1 here: init)
# and sysrq's blocked tasks, shown from the first report on.
grep -q '| vm init: task 1 (init), blocked in the stall report: State:' "$d/err" ||
    fail "the blocked task's state and stack were not shown"
grep -q '| .*sysrq: Show Blocked State' "$d/err" || fail "sysrq's blocked tasks were not shown"
[ "$SECONDS" -lt 200 ] || fail "a hung kernel was stopped only after $SECONDS s"
echo "ok   a kernel hung on an RCU stall: status 125 in $SECONDS s, said, shown"

# The VM tests' vm_run (tests/functions.sh) makes a run whose kernel hung
# once more, and the second hang is the test's failure.
st=0
vm_run --share "$d" --timeout 300 -- "$d/stall.sh" 2> "$d/err" || st=$?
cat "$d/err"
[ "$st" = 125 ] || fail "vm_run over a kernel that hung twice gave $st, not 125"
[ "$(grep -c "the guest's kernel hung:" "$d/err")" = 2 ] || fail "vm_run did not boot the hung run once more"
grep -q "crashed or hung (its console above): not this test's failure; the run is made once more" "$d/err" ||
    fail "vm_run did not say why it ran again"
echo "ok   vm_run: a run whose kernel hung is made once more, a second hang fails"
