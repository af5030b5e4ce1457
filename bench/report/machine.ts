import { execFileSync } from 'node:child_process';
import { closeSync, fdatasyncSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { availableParallelism, release, totalmem } from 'node:os';
import { join } from 'node:path';
import type { MachineDescription } from './results.ts';

function firstMatch(file: string, re: RegExp): string {
  try {
    return re.exec(readFileSync(file, 'utf8'))?.[1]?.trim() ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** The device, file system and rotational flag under `dir`, where the servers keep their data. */
function describeDisk(dir: string): string {
  try {
    const [source = '?', fstype = '?'] = execFileSync('findmnt', ['-n', '-o', 'SOURCE,FSTYPE', '-T', dir], {
      encoding: 'utf8',
    })
      .trim()
      .split(/\s+/);
    const device = source.replace('/dev/', '').replace(/\d+$/, '');
    const rotational = firstMatch(`/sys/block/${device}/queue/rotational`, /(\d)/);
    const kind = rotational === '0' ? 'non-rotational' : rotational === '1' ? 'rotational' : 'unknown kind';
    return `${source} (${fstype}, ${kind}) for ${dir}`;
  } catch {
    return `unknown (findmnt failed) for ${dir}`;
  }
}

/** How long one small durable write takes here: what every fsync-per-ack system pays. */
export function fdatasyncMedianUs(dir: string, samples = 100): number {
  const file = join(dir, 'fsync-probe');
  const fd = openSync(file, 'w');
  const block = Buffer.alloc(4096, 1);
  const times: number[] = [];
  try {
    for (let i = 0; i < samples; i++) {
      writeSync(fd, block);
      const t0 = performance.now();
      fdatasyncSync(fd);
      times.push((performance.now() - t0) * 1000);
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
  times.sort((a, b) => a - b);
  return Math.round(times[Math.floor(times.length / 2)] ?? 0);
}

export function describeMachine(dataDir: string): MachineDescription {
  return {
    cpus: availableParallelism(),
    cpuModel: firstMatch('/proc/cpuinfo', /^model name\s*:\s*(.+)$/m),
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    kernel: release(),
    os: firstMatch('/etc/os-release', /^PRETTY_NAME="?([^"\n]+)"?$/m),
    node: process.version,
    disk: describeDisk(dataDir),
    fdatasyncMedianUs: fdatasyncMedianUs(dataDir),
  };
}
