# bench/report.awk: results.md's tables from bench/run's results.csv.
#   awk -F, -f bench/report.awk results.csv
# The issue's targets are listed here, in targets(), in one place.

function fmt(v, d) { return v == "" ? "-" : sprintf("%." d "f", v) }
# section(title, text): a section's heading and its introduction.
function section(t, text) { print "## " t; print ""; print text; print "" }
function dv(i) { return V[i, "verified"] == "" ? "-" : V[i, "verified"] }
function wlname(rw, bs, qd, cl, al,   s) {
  s = (rw == "randrw67" ? "random 67% read / 33% write" : \
       rw == "randread" ? "random read" : rw == "randwrite" ? "random write" : \
       rw == "read" ? "sequential read" : rw == "write" ? "sequential write" : rw)
  s = toupper(bs) " " s ", iodepth " qd ", " cl (cl == 1 ? " client" : " clients")
  if (al == "512") s = s ", 512-byte aligned"
  return s
}
# find(test, config, wlkey, state): the row index of that cell, or 0.
function find(t, c, k, st,   i) {
  for (i = 1; i <= n; i++)
    if (T[i] == t && C[i] == c && K[i] == k && S[i] == st) return i
  return 0
}
# target(label, test, config, wlkey, need): one line of the targets table.
function target(label, t, c, k, need,   i, x) {
  i = find(t, c, k, t == "rebuild-idle" ? "rebuilding" : "optimal")
  if (!i) return
  x = V[i, "x_baseline"]
  printf "| %s | %s | %s | %.2f | %s |\n", label, c, fmt(x, 2), need, \
    x == "" ? "n/a" : (x + 0 >= need ? "PASS" : "**MISS**")
  ntargets++
}
# The issue's targets (#6): ratios to one member on simulated SSDs, and
# to nbdkit's memory plugin on RAM members.  Random = 4K at iodepth 64
# ("enough queue depth": at 32, requests spread at random over 4 members
# of 4 channels each leave some channels idle), sequential = 1 MiB at
# iodepth 32, one client; RAID 5's full-stripe writes are 3 MiB (whole
# stripes over 3 and 4 members with the 512K chunk; 1 MiB writes on RAID 5
# over 4 are partial stripes, and raidd merges no writes).  The RAM rows
# are 4K at iodepth 32, as the issue says.
function targets(   j, c, lv, m, rd, wr, fs, rr, rw, rr32, rw32) {
  rd = "read:1m:32:1:4k"; wr = "write:1m:32:1:4k"; fs = "write:3m:16:1:4k"
  rr = "randread:4k:64:1:4k"; rw = "randwrite:4k:64:1:4k"
  rr32 = "randread:4k:32:1:4k"; rw32 = "randwrite:4k:32:1:4k"
  for (j = 1; j <= nc; j++) {
    c = corder[j]; lv = L[cfirst[c]]; m = N[cfirst[c]]
    if (c !~ /^raid[0-9]+x[0-9]+$/) continue
    if (lv == 0) {
      target("RAID 0 over " m ", 1M sequential read >= 0.95 x N", "fio", c, rd, 0.95 * m)
      target("RAID 0 over " m ", 1M sequential write >= 0.95 x N", "fio", c, wr, 0.95 * m)
      target("RAID 0 over " m ", 4K random read >= 0.95 x N", "fio", c, rr, 0.95 * m)
      target("RAID 0 over " m ", 4K random write >= 0.95 x N", "fio", c, rw, 0.95 * m)
    } else if (lv == 1) {
      target("RAID 1 over " m ", 4K random read >= 1.9 x", "fio", c, rr, 1.9)
      target("RAID 1 over " m ", 4K random write >= 0.95 x", "fio", c, rw, 0.95)
    } else if (lv == 5) {
      target("RAID 5 over " m ", 3M sequential write (full stripes) >= 0.9 x (N-1)", "fio", c, fs, 0.9 * (m - 1))
      target("RAID 5 over " m ", 64K sequential write, iodepth 32 >= 0.8 x (N-1)", "fio", c, "write:64k:32:1:4k", 0.8 * (m - 1))
      target("RAID 5 over " m ", 4K sequential write, iodepth 32 >= 0.5 x (N-1)", "fio", c, "write:4k:32:1:4k", 0.5 * (m - 1))
      target_degraded("RAID 5 over " m ", degraded 1M sequential read >= 0.65 x in sync", c, rd, 0.65)
      target("RAID 5 over " m ", 4K random write >= 0.9 x N/4", "fio", c, rw, 0.9 * m / 4)
      target("RAID 5 over " m ", 4K random read >= 0.95 x N", "fio", c, rr, 0.95 * m)
    } else if (lv == 10) {
      target("RAID 10 over " m ", 4K random read >= 3.6 x", "fio", c, rr, 3.6)
    }
  }
  for (j = 1; j <= nc; j++) {
    c = corder[j]
    target("rebuild of one member, idle " c ", >= 0.9 x member's sequential write", "rebuild-idle", c, "-:-:-:-:-", 0.9)
  }
  target("RAM members: RAID 0 over 4 / nbdkit memory, 4K random read >= 1", "nbdkit", "raid0x4-ram", rr32, 1)
  target("RAM members: RAID 0 over 4 / nbdkit memory, 4K random write >= 1", "nbdkit", "raid0x4-ram", rw32, 1)
  target("RAM members: RAID 5 over 4 / nbdkit memory, 4K random read >= 0.8", "nbdkit", "raid5x4-ram", rr32, 0.8)
  target("RAM members: RAID 5 over 4 / nbdkit memory, 4K random write >= 0.8", "nbdkit", "raid5x4-ram", rw32, 0.8)
  # CPU per 4K I/O (issue 19): raidd's against nbdkit memory's, and the
  # RAID path alone (bench/raid-bench).
  for (j = 1; j <= nc; j++) {
    c = corder[j]
    if (c !~ /-ram$/) continue
    lv = L[cfirst[c]]
    for (w = 1; w <= 2; w++) {
      k = w == 1 ? rr32 : rw32
      i = find("nbdkit", c, k, "optimal"); b = find("nbdkit", "nbdkit-memory", k, "optimal")
      if (i && b && V[b, "cpu_us_per_io"] > 0)
        target_max("RAM members: " c " CPU per 4K " (w == 1 ? "read" : "write") " <= 0.8 x nbdkit memory's", c, \
          V[i, "cpu_us_per_io"] / V[b, "cpu_us_per_io"], 0.8, "x")
      i = find("raidpath", c, k, "optimal")
      if (i) target_max("RAID path alone: " c " CPU per 4K " (w == 1 ? "read" : "write") " <= " \
          (lv == 5 && w == 2 ? 3 : 1) " us", c, V[i, "cpu_us_per_io"], lv == 5 && w == 2 ? 3 : 1, "us")
    }
  }
}
# target_max(label, config, value, limit, unit): a target met at or below LIMIT.
function target_max(label, c, v, lim, unit) {
  printf "| %s | %s | %s %s | <= %s %s | %s |\n", label, c, fmt(v, 2), unit, lim, unit, \
    (v == "" ? "n/a" : (v + 0 <= lim ? "PASS" : "**MISS**"))
  ntargets++
}
# target_degraded(label, config, wlkey, need): degraded over in-sync IOPS.
function target_degraded(label, c, k, need,   i, j, x) {
  i = find("fio", c, k, "degraded"); j = find("fio", c, k, "optimal")
  if (!i || !j || V[j, "iops"] + 0 == 0) return
  x = V[i, "iops"] / V[j, "iops"]
  printf "| %s | %s | %.2f | %.2f | %s |\n", label, c, x, need, (x >= need ? "PASS" : "**MISS**")
  ntargets++
}

NR == 1 { for (i = 1; i <= NF; i++) { h[$i] = i; col[i] = $i }; ncol = NF; next }
{
  n++
  for (i = 1; i <= ncol; i++) V[n, col[i]] = $i
  # A run over several raidd thread counts (--threads): rows of a count
  # other than the first one's are told apart by their configuration's name.
  if (n == 1) ft = $h["threads"]
  T[n] = $h["test"]; C[n] = $h["config"] ($h["threads"] != ft ? " (" $h["threads"] " thr.)" : ""); S[n] = $h["state"]
  L[n] = $h["level"]; N[n] = $h["members"]
  K[n] = $h["rw"] ":" $h["bs"] ":" $h["iodepth"] ":" $h["clients"] ":" $h["align"]
  if (!(C[n] in cfirst)) { cfirst[C[n]] = n; corder[++nc] = C[n] }
  if (T[n] == "fio" && S[n] == "optimal" && !(K[n] in kseen)) { kseen[K[n]] = 1; korder[++nk] = K[n] }
}

END {
  print "## Targets (issues #6, #19)"
  print ""
  print "Ratio to the one-member configuration (\"x one\"), or to nbdkit's memory"
  print "plugin for the RAM rows, against what the issues ask (#6, #19); CPU targets"
  print "are met at or below their limit."
  print ""
  print "| target | configuration | measured x | required x | result |"
  print "|---|---|---|---|---|"
  targets()
  if (!ntargets) print "| (no target cell in this run) | | | | |"
  print ""

  # Per workload: each configuration against one member and its ideal.
  print "## Each configuration against one member and its ideal"
  print ""
  print "x one: IOPS over the one-member configuration's; ideal x: what the"
  print "geometry allows (bench/run, ideal()); efficiency = x one / ideal x."
  print "CPU: raidd's CPU (user + system) in seconds per GB moved and in microseconds"
  print "per I/O. Data: \"yes\" when what the cell read was checked as it came (fio's"
  print "CRC32C headers) and, for a cell that wrote, the whole array was read back and"
  print "checked after it; \"-\" when the drives dropped the data (a discard profile)."
  for (w = 1; w <= nk; w++) {
    split(korder[w], p, ":")
    print ""
    print "### " wlname(p[1], p[2], p[3], p[4], p[5])
    print ""
    print "| configuration | IOPS | MiB/s | mean lat. (us) | p50 lat. (us) | p99 lat. (us) | x one | ideal x | efficiency | CPU s/GB | CPU us/IO | data |"
    print "|---|---|---|---|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= n; i++) if (T[i] == "fio" && S[i] == "optimal" && K[i] == korder[w])
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", C[i], V[i, "iops"], V[i, "mib_s"], \
        V[i, "lat_mean_us"], V[i, "lat_p50_us"] == "" ? "-" : V[i, "lat_p50_us"], V[i, "lat_p99_us"], \
        fmt(V[i, "x_baseline"], 2), fmt(V[i, "ideal_x"], 2), \
        fmt(V[i, "efficiency"], 2), fmt(V[i, "cpu_s_per_gb"], 2), fmt(V[i, "cpu_us_per_io"], 2), dv(i)
  }
  print ""

  # Scaling (--clients): one total queue depth split over 1, 2 and 4
  # clients, for each raidd thread count.
  split("randread:4k:32 randwrite:4k:32 read:1m:8 write:1m:8", sw, " ")
  split("4K random read, qd 32|4K random write, qd 32|1M sequential read, qd 8|1M sequential write, qd 8", sn, "|")
  hdr = 0
  for (j = 1; j <= nc; j++) for (k = 1; k <= 4; k++) {
    split(sw[k], p, ":"); line = ""; any = 0
    for (cl = 1; cl <= 4; cl *= 2) {
      i = find("fio", corder[j], p[1] ":" p[2] ":" (p[3] / cl) ":" cl ":4k", "optimal")
      line = line " " (i ? V[i, "iops"] : "-") " |"; if (i && cl > 1) any = 1
    }
    if (!any) continue
    if (!hdr++) {
      section("Scaling: clients and raidd's worker threads", \
        "IOPS with one total queue depth split evenly over 1, 2 and 4 clients (fio\n" \
        "jobs, one NBD connection each); \"(N thr.)\": raidd with N worker threads.")
      print "| configuration | workload | 1 client | 2 clients | 4 clients |"
      print "|---|---|---|---|---|"
    }
    printf "| %s | %s |%s\n", corder[j], sn[k], line
  }
  if (hdr) print ""

  # Degraded and rebuilding against the same array in sync.
  hdr = 0
  for (i = 1; i <= n; i++) if (T[i] == "fio" && (S[i] == "degraded" || S[i] == "rebuilding")) {
    if (!hdr++) {
      print "## Degraded and rebuilding"
      print ""
      print "One member failed and removed (degraded); a fresh member added and"
      print "rebuilt with no speed limit while fio runs (rebuilding)."
      print ""
      print "| configuration | workload | state | IOPS | MiB/s | in sync, IOPS | / in sync | p99 lat. (us) | data |"
      print "|---|---|---|---|---|---|---|---|---|"
    }
    j = find("fio", C[i], K[i], "optimal"); split(K[i], p, ":")
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", C[i], wlname(p[1], p[2], p[3], p[4], p[5]), S[i], \
      V[i, "iops"], V[i, "mib_s"], j ? V[j, "iops"] : "-", \
      (j && V[j, "iops"] > 0 && V[i, "iops"] != "") ? sprintf("%.2f", V[i, "iops"] / V[j, "iops"]) : "-", V[i, "lat_p99_us"], dv(i)
  }
  for (i = 1; i <= n; i++) if (T[i] == "rebuild-load")
    printf "| %s | rebuild rate while the workloads ran | | | %s | | | %s | |\n", C[i], V[i, "mib_s"], V[i, "note"]
  if (hdr) print ""

  hdr = 0
  for (i = 1; i <= n; i++) if (T[i] == "rebuild-idle") {
    if (!hdr++) {
      section("Rebuild of one member, idle array", \
        "Fail, remove, add a fresh member, `raidctl wait`; no speed limit. Member's\n" \
        "sequential write: fio on a member file when members are files, else the\n" \
        "one-member configuration's 1M sequential writes.")
      print "| configuration | rebuild (MiB/s) | member seq. write (MiB/s) | ratio | raidd CPU s/GB | data | |"
      print "|---|---|---|---|---|---|---|"
    }
    printf "| %s | %s | %s | %s | %s | %s | %s |\n", C[i], V[i, "mib_s"], fmt(V[i, "baseline"], 1), \
      fmt(V[i, "x_baseline"], 2), fmt(V[i, "cpu_s_per_gb"], 2), dv(i), V[i, "note"]
  }
  if (hdr) print ""

  hdr = 0
  for (j = 1; j <= nc; j++) {
    a = find("filecopy-large", corder[j], "copy:-:-:-:-", "optimal")
    b = find("filecopy-small", corder[j], "copy:-:-:-:-", "optimal")
    if (!a && !b) continue
    if (!hdr++) {
      print "## File copy on ext4 over the array"
      print ""
      print "nbdfuse + loop + ext4; a copy inside the file system (reads and writes"
      print "on the array), timed to the end of `sync`, after a remount."
      print "Ideal x: half sequential reads, half sequential writes."
      print ""
      print "| configuration | one large file (MiB/s) | x one | many small files (MiB/s) | x one | ideal x | raidd CPU s/GB (large, small) |"
      print "|---|---|---|---|---|---|---|"
    }
    printf "| %s | %s | %s | %s | %s | %s | %s, %s |\n", corder[j], a ? V[a, "mib_s"] : "-", a ? fmt(V[a, "x_baseline"], 2) : "-", \
      b ? V[b, "mib_s"] : "-", b ? fmt(V[b, "x_baseline"], 2) : "-", fmt(V[a ? a : b, "ideal_x"], 2), \
      a ? fmt(V[a, "cpu_s_per_gb"], 2) : "-", b ? fmt(V[b, "cpu_s_per_gb"], 2) : "-"
    if (a) fnote = V[a, "note"]; if (b) fnote = fnote ", " V[b, "note"]
  }
  if (hdr) { print ""; print "Files: " fnote "."; print "" }

  # CPU cost per configuration for the main workloads.
  split("randread:4k:32:1:4k randwrite:4k:32:1:4k randrw67:4k:32:1:4k read:1m:32:1:4k write:1m:32:1:4k", ck, " ")
  split("4K rand read|4K rand write|4K 67/33|1M seq read|1M seq write", cn, "|")
  m = 0
  for (k = 1; k <= 5; k++) if (ck[k] in kseen) cc[++m] = k
  if (m) {
    print "## CPU cost: raidd CPU seconds per GB moved"
    print ""
    line = "| configuration |"; sep = "|---|"
    for (k = 1; k <= m; k++) { line = line " " cn[cc[k]] " |"; sep = sep "---|" }
    print line; print sep
    for (j = 1; j <= nc; j++) {
      c = corder[j]; line = "| " c " |"; any = 0
      for (k = 1; k <= m; k++) {
        i = find("fio", c, ck[cc[k]], "optimal")
        if (i && V[i, "cpu_s_per_gb"] != "") any = 1
        line = line " " (i ? fmt(V[i, "cpu_s_per_gb"], 2) : "-") " |"
      }
      if (any) print line
    }
    print ""
  }

  # CPU per I/O on RAM members: the servers, and the RAID path alone.
  hdr = 0
  for (w = 1; w <= n; w++) if (T[w] == "nbdkit" && C[w] == "nbdkit-memory") {
    if (!hdr++) {
      print "## CPU per I/O: raidd against nbdkit, and the RAID path alone (RAM members)"
      print ""
      print "The same fio job on each server: nbdkit's null plugin (no data: what the"
      print "NBD transport alone costs here), nbdkit's memory plugin (allocator=malloc,"
      print "written whole first) and raidd serving arrays over RAM members.  The cells"
      print "are CPU-bound (fio and the server share the CPUs), so each workload runs in"
      print "rounds that take the servers in turn; each figure is its server's median"
      print "round.  CPU us/IO: the server's CPU time (user + system, every thread) per"
      print "I/O.  RAID path: bench/raid-bench on the same geometry and kind of member,"
      print "no server (the library's own cost); rest: raidd's figure minus the RAID"
      print "path's (NBD, its threads and queues)."
      print ""
      print "| workload | server | IOPS | / nbdkit memory | CPU us/IO | / nbdkit memory's | RAID path us/IO | rest us/IO | data |"
      print "|---|---|---|---|---|---|---|---|---|"
    }
    split(K[w], p, ":")
    for (i = 1; i <= n; i++) if (T[i] == "nbdkit" && K[i] == K[w]) {
      r = find("raidpath", C[i], K[i], "optimal")
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", wlname(p[1], p[2], p[3], p[4], p[5]), C[i], \
        V[i, "iops"], fmt(V[i, "x_baseline"], 2), fmt(V[i, "cpu_us_per_io"], 2), \
        ((V[w, "cpu_us_per_io"] > 0 && V[i, "cpu_us_per_io"] != "") ? sprintf("%.2f", V[i, "cpu_us_per_io"] / V[w, "cpu_us_per_io"]) : "-"), \
        (r ? fmt(V[r, "cpu_us_per_io"], 2) : "-"), \
        ((r && V[r, "cpu_us_per_io"] != "" && V[i, "cpu_us_per_io"] != "") ? sprintf("%.2f", V[i, "cpu_us_per_io"] - V[r, "cpu_us_per_io"]) : "-"), dv(i)
    }
  }
  if (hdr) print ""

  # Every check of the data that is not a cell's own.
  hdr = 0
  for (i = 1; i <= n; i++) if (T[i] == "verify") {
    if (!hdr++) {
      section("Data checks", "The whole array read back and every fio header checked (CRC32C and\n" \
        "offset); in sync, then the array's check (scrub) with no mismatch.")
      print "| configuration | state | when | result |"
      print "|---|---|---|---|"
    }
    printf "| %s | %s | %s | %s |\n", C[i], S[i], V[i, "note"], V[i, "verified"]
  }
  for (i = 1; i <= n; i++) if (T[i] ~ /^(fio|nbdkit|raidpath|filecopy)/ && V[i, "iops"] V[i, "mib_s"] != "") {
    ncells++; if (V[i, "verified"] == "yes") nver++
  }
  if (hdr || nver) {
    if (!hdr) { print "## Data checks"; print "" }   # the drives keep no data
    printf "%d of %d measured cells had their data checked%s.\n\n", nver, ncells, \
      (nver < ncells) ? " (the others: nbdkit's null plugin, which keeps nothing, or drives that drop their data)" : ""
  }

  for (i = 1; i <= n; i++) if (V[i, "note"] ~ /fio failed/ || V[i, "verified"] ~ /FAILED/) nfail++
  if (nfail) { print "**" nfail " cell(s) failed: see raidd.log and the CSV's note column.**"; print "" }

  print "## How to read this"
  print ""
  print "- **one**: one member alone behind raidd and NBD, like every array (raidd"
  print "  makes no one-member array: a RAID 1 over 2 with its second member failed"
  print "  and removed). **member-io_uring**: fio's io_uring engine on a member file"
  print "  directly, no raidd (only when members are files)."
  print "- **ideal x**: RAID 0 over N: N. RAID 1 over N: reads N, writes 1. RAID 5"
  print "  over N: reads N (the rotating parity keeps every member busy when enough"
  print "  is in flight), sequential writes N-1 (full stripes), small random writes"
  print "  N/min(4, N) (4 member I/Os each, or N over fewer than 4 members:"
  print "  reconstruct-write). RAID 10 over N: reads N, writes N/2. Mixes: the"
  print "  weighted harmonic mean of the read and write ideals."
  print "- **efficiency** = x one / ideal x: 1.00 is all the geometry allows when the"
  print "  members are the bottleneck. It says something only when they are (simulated"
  print "  SSDs with a latency and bandwidth, enough queue depth); on RAM members the"
  print "  host's CPUs are, and the CPU table and the nbdkit comparison are the measure."
  print "- **Small sequential requests** (4K to 64K at iodepth 32) on striped arrays:"
  print "  the ideal column is the large-request one, but what is in flight (32 x 4K"
  print "  = 128 KiB) lies inside one 512 KiB chunk most of the time, so one member"
  print "  serves it, as with md: about 1 + in flight / chunk members are busy, not"
  print "  N. Their low efficiency is the geometry, not overhead."
}
