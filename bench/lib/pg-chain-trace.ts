/**
 * Preloaded into a `sepp serve` child by bench/pg-chain.ts (`node --import`): hears every batch
 * of the PostgreSQL writer (writer.ts `writerTrace`, the same module instance the server loads)
 * and, on SIGUSR2, writes the batches heard since the last signal to SEPP_PG_CHAIN_OUT as JSON.
 * SEPP_PG_CHAIN_SRC is the checkout whose writer it hears; with SEPP_PG_CHAIN_PROFILE=FILE it also
 * writes a CPU profile of the server between the first two signals (bench/pg-chain.ts `--profile`:
 * the drain). With SEPP_PG_CHAIN_HEAP=FILE it writes a sampling heap profile of the same span
 * (`--heap-profile`): every sampled allocation, also of objects the garbage collector has since
 * freed, by the stack that made it (bench/pg-heap-areas.ts sums it by area); SEPP_PG_CHAIN_HEAP_KEEP
 * (below) leaves out some of the freed ones.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { Profiler } from './profiler.ts';

const src = process.env.SEPP_PG_CHAIN_SRC;
const out = process.env.SEPP_PG_CHAIN_OUT;
if (src === undefined || out === undefined)
  throw new Error('SEPP_PG_CHAIN_SRC and SEPP_PG_CHAIN_OUT must be set');
const { writerTrace } = (await import(pathToFileURL(join(src, 'src/store/postgres/writer.ts')).href)) as {
  writerTrace: { sink: ((trace: unknown) => void) | undefined };
};
let batches: unknown[] = [];
writerTrace.sink = (trace) => batches.push(trace);
/** SEPP_PG_CHAIN_PROFILE=FILE: a CPU profile of this process between the first two signals. */
const profilePath = process.env.SEPP_PG_CHAIN_PROFILE;
const profiler = profilePath === undefined ? undefined : new Profiler();
/** SEPP_PG_CHAIN_HEAP=FILE: the allocations of this process between the first two signals. */
const heapPath = process.env.SEPP_PG_CHAIN_HEAP;
const heap = heapPath === undefined ? undefined : new Session();
const heapPost = (method: string, params?: object): Promise<unknown> =>
  new Promise((resolve, reject) =>
    heap?.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
  );
let signals = 0;
process.on('SIGUSR2', async () => {
  signals++;
  if (profiler !== undefined && profilePath !== undefined && signals <= 2) {
    if (signals === 1) await profiler.start();
    else await profiler.stop(profilePath);
  }
  if (process.env.SEPP_PG_CHAIN_TRACE_GC === '1' && signals <= 2)
    setFlagsFromString(signals === 1 ? '--trace-gc-nvp' : '--no-trace-gc-nvp');
  if (heap !== undefined && heapPath !== undefined && signals <= 2) {
    if (signals === 1) {
      heap.connect();
      // Every 4 KiB allocated on average. SEPP_PG_CHAIN_HEAP_KEEP says which freed objects stay
      // in the profile: all (garbage is what is measured), old (those freed only once promoted to
      // the old generation: what made the young collections copy), live (none).
      const keep = process.env.SEPP_PG_CHAIN_HEAP_KEEP ?? 'all';
      await heapPost('HeapProfiler.startSampling', {
        samplingInterval: 4096,
        includeObjectsCollectedByMajorGC: keep !== 'live',
        includeObjectsCollectedByMinorGC: keep === 'all',
      });
    } else {
      const { profile } = (await heapPost('HeapProfiler.stopSampling')) as { profile: unknown };
      writeFileSync(heapPath, JSON.stringify(profile));
      heap.disconnect();
    }
  }
  // Written whole, then renamed: the reader never sees half a file.
  writeFileSync(`${out}.part`, JSON.stringify(batches));
  renameSync(`${out}.part`, out);
  batches = [];
});
