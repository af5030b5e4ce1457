/**
 * How far `sepp serve` lets V8's old space grow past what its last full
 * collection left live (issue 29, item 16).
 *
 * A long-poll's objects — its HTTP/2 stream, grpc-js's call and interceptors,
 * its timer and abort signal, about 12 KiB of heap — live until its job
 * arrives or its wait ends, long enough to be promoted to the old space; once
 * answered they are old-space garbage, which only a full collection frees. V8
 * lets the old space grow to up to 4× what was live before that collection on
 * a machine with a large heap limit, so 1,000 long-polling workers moving
 * jobs took the server from 114 to 250 MiB in 20 s and 329 MiB in 60 s,
 * although what was live stayed under 60 MiB. At 1.5× the same 20 s peaked at
 * 168 MiB, for about 5 ms of CPU a second more in full collections
 * (bench/results/long-poll-memory-2026-12-05.md).
 */
import { setFlagsFromString } from 'node:v8';

/** Old space grows to at most 1 + heapGrowingPercent/100 times what was live. */
export const heapGrowingPercent = 50;

/**
 * Sets V8's heap growing factor for this process, unless the node running
 * sepp was given one (`node --heap-growing-percent=N sepp.cjs serve`).
 * Returns the percent in force (undefined: the node's own choice).
 */
export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv): number | undefined {
  const given = execArgv.find((arg) => /^--heap[-_]growing[-_]percent(=|$)/.test(arg));
  if (given !== undefined) return given.includes('=') ? Number(given.split('=')[1]) : undefined;
  setFlagsFromString(`--heap-growing-percent=${heapGrowingPercent}`);
  return heapGrowingPercent;
}
