#!/bin/sh
cd /tmp/lx-B
echo "w5 B start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
npx tsx bench/w5-flows.ts --runs 3 --prefetch 0 --only collector,wide --no-bullmq --against /work/wt/base6
echo "w5 B end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "cpu B start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
npx tsx bench/cpu-per-job.ts --against /work/wt/base6 --runs 5
echo "cpu B end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
