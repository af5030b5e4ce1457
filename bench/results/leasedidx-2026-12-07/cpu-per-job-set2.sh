#!/bin/sh
cd /tmp/lx-A
echo "start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
npx tsx bench/cpu-per-job.ts --against /work/wt/base6 --against /tmp/lx-B --runs 5
echo "end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "w5 start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
npx tsx bench/w5-flows.ts --runs 3 --prefetch 0 --only collector,wide --no-bullmq --against /work/wt/base6
echo "w5 end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
