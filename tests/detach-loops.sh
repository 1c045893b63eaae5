#!/bin/bash
# Detach every loop device whose backing file lies under DIR (test cleanup).
for l in $(losetup --list --noheadings --output NAME,BACK-FILE 2>/dev/null |
           awk -v d="$1/" 'index($2, d) == 1 { print $1 }'); do
  losetup -d "$l"
done
