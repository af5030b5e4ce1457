/**
 * Preloaded into a `sepp serve` child by bench/pg-chain.ts (`node --import`): hears every batch
 * of the PostgreSQL writer (writer.ts `writerTrace`, the same module instance the server loads)
 * and, on SIGUSR2, writes the batches heard since the last signal to SEPP_PG_CHAIN_OUT as JSON.
 * SEPP_PG_CHAIN_SRC is the checkout whose writer it hears; with SEPP_PG_CHAIN_PROFILE=FILE it also
 * writes a CPU profile of the server between the first two signals (bench/pg-chain.ts `--profile`:
 * the drain).
 */
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
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
let signals = 0;
process.on('SIGUSR2', async () => {
  signals++;
  if (profiler !== undefined && profilePath !== undefined && signals <= 2) {
    if (signals === 1) await profiler.start();
    else await profiler.stop(profilePath);
  }
  // Written whole, then renamed: the reader never sees half a file.
  writeFileSync(`${out}.part`, JSON.stringify(batches));
  renameSync(`${out}.part`, out);
  batches = [];
});
