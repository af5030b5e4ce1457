#!/bin/bash
# The quiet window's benches (stop 21), run from /work/main (built); ~20 min.
cd /work/main
B=/work/wt/s21/bench
log() { echo "== $(date +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg) $*" | tee -a $B/times.txt; }
log cpu-per-job base11+base10; npx tsx bench/cpu-per-job.ts --against /work/wt/base11 --against /work/wt/base10 --runs 5 > $B/cpu.txt 2>&1
log w5; npx tsx bench/w5-flows.ts --runs 5 --prefetch 0,auto,500 --only collector,wide > $B/w5.txt 2>&1
log ceiling; npm run bench -- --systems sepp,sepp-pg,graphile --workload W1 --jobs 40000 --repeat 3 --no-fsync-check --warmup-jobs 10000 > $B/ceiling-warm.txt 2>&1
log pg-p0; npm run bench -- --systems sepp-pg,graphile --workload W1 --jobs 40000 --repeat 3 --no-fsync-check > $B/pg.txt 2>&1
log pg-chain; npx tsx bench/pg-chain.ts --jobs 20000 --warmup 20000 --prefetch 0 --runs 3 --against /work/wt/base11 > $B/pg-chain.txt 2>&1
log pg-servers; npx tsx bench/pg-servers.ts --jobs 10000 --runs 3 --servers 1,2 > $B/pg-servers.txt 2>&1
log w1-bullmq; npm run bench -- --systems bullmq,sepp --workload W1 --jobs 40000 --repeat 3 > $B/w1-bullmq.txt 2>&1
log done
