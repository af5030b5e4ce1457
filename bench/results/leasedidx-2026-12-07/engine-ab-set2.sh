#!/bin/sh
# interleaved engine A/B: base6 vs base6 (control), A, B; 5 rounds, 120 batches
cd /tmp/lx-A
for r in 1 2 3 4 5; do
  for v in ctl A B; do
    t=/tmp/lx-$v; [ $v = ctl ] && t=/work/wt/base6
    echo "== round $r variant $v load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%T)"
    npx tsx bench/engine-ab.ts --a /work/wt/base6 --b $t --per-call 50 --batches 120 2>&1 | grep -E "B/A|load"
  done
done
echo "== end load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%T)"
