/**
 * The child of tests/cli/heap-growth.test.ts: keeps about 25 MiB of small objects alive
 * and replaces them, each one living long enough to reach the old space before it becomes
 * garbage; prints the largest heap seen, in MiB. With the argument `limited`, it first
 * limits its heap's growth as `sepp serve` does. Both ways run the same bundle
 * (tests/helpers/child-script.ts), so they differ only in the limit.
 */
import { getHeapStatistics } from 'node:v8';
import { limitHeapGrowth } from '../../src/cli/heap-growth.ts';

if (process.argv[2] === 'limited') limitHeapGrowth();
const slots = new Array(10000);
const make = () => ({ a: Array.from({ length: 100 }, (_, i) => ({ i })) });
for (let i = 0; i < slots.length; i++) slots[i] = make();
let peak = 0;
for (let round = 0; round < 8; round++) {
  for (let i = 0; i < slots.length; i++) slots[(i * 7919 + round) % slots.length] = make();
  peak = Math.max(peak, getHeapStatistics().total_heap_size);
}
console.log(Math.round(peak / 1048576));
