import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * This machine is shared with other sessions whose builds and tests come and go. Before a
 * timed phase, while our own clients and servers are idle, wait (bounded) for a moment when
 * the rest of the machine is quiet, so fewer figures are measured next to a busy neighbour.
 */

function busyAndTotalTicks(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const busy = user + nice + system + irq + softirq + steal;
  return { busy, total: busy + idle + iowait };
}

/** Percent of all cores busy over `windowMs`. */
async function busyPercent(windowMs: number): Promise<number> {
  const a = busyAndTotalTicks();
  await sleep(windowMs);
  const b = busyAndTotalTicks();
  const total = b.total - a.total;
  return total > 0 ? (100 * (b.busy - a.busy)) / total : 0;
}

/**
 * Waits until the machine is below `thresholdPercent` busy over a 1 s window, for at most
 * `maxWaitMs`; returns the last measured load. Our idle servers count too, which is fine:
 * they use next to nothing.
 */
export async function waitForQuiet(maxWaitMs: number, thresholdPercent: number): Promise<number> {
  const deadline = Date.now() + maxWaitMs;
  let load = await busyPercent(Math.min(1000, maxWaitMs));
  while (load > thresholdPercent && Date.now() < deadline) load = await busyPercent(1000);
  return load;
}
