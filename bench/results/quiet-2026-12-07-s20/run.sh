#!/bin/bash
cd /work/main
B=/work/wt/s20/bench
log() { echo "== $(date +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg) $*" | tee -a $B/times.txt; }
log cpu-per-job base10; npx tsx bench/cpu-per-job.ts --against /work/wt/base10 --runs 5 > $B/cpu-base10.txt 2>&1
log w5; npx tsx bench/w5-flows.ts --runs 5 --prefetch 0,500 --only collector,wide > $B/w5.txt 2>&1
log pg-p0; npm run bench -- --systems sepp-pg,graphile --workload W1 --jobs 40000 --repeat 3 --no-fsync-check > $B/pg-p0.txt 2>&1
log pg-p500; npm run bench -- --systems sepp-pg,graphile --workload W1 --jobs 40000 --repeat 3 --no-fsync-check --set sepp-pg.prefetch=500 > $B/pg-p500.txt 2>&1
log pg-p0-warm; npm run bench -- --systems sepp-pg,graphile --workload W1 --jobs 40000 --repeat 3 --no-fsync-check --warmup-jobs 10000 > $B/pg-p0-warm.txt 2>&1
log pg-chain; npx tsx bench/pg-chain.ts --jobs 20000 --warmup 20000 --prefetch 0 --runs 3 --against /work/wt/base10 > $B/pg-chain.txt 2>&1
log pg-servers; npx tsx bench/pg-servers.ts --jobs 10000 --runs 3 --servers 1,2 > $B/pg-servers.txt 2>&1
log w1-bullmq; npm run bench -- --systems bullmq,sepp --workload W1 --jobs 40000 --repeat 3 > $B/w1-bullmq.txt 2>&1
for i in 1 2 3; do for m in never on; do log graphile-$m-$i; npm run bench -- --systems graphile --workload W1 --jobs 20000 --repeat 1 --no-fsync-check --set graphile.analyze=$m > $B/graphile-$m-$i.txt 2>&1; done; done
log done
