import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { postgresBinDir } from '../../tests/helpers/postgres.ts';
import { natsServerPath } from '../systems/nats.ts';

/** The binaries each peer needs; sepp's drivers will need none from outside. */
const needs: Readonly<Record<string, readonly string[]>> = {
  bullmq: ['/usr/bin/redis-server'],
  beanstalkd: ['/usr/bin/beanstalkd'],
  nats210: [natsServerPath('2.10')],
  nats29: [natsServerPath('2.9')],
  pgboss: [`${postgresBinDir}/postgres`],
  graphile: [`${postgresBinDir}/postgres`],
};

/**
 * Runs bench/peers/install-peers.sh when a chosen peer's binary (or strace) is missing, so
 * a fresh machine needs nothing but `npm run bench`.
 */
export function ensurePeersInstalled(systems: readonly string[], fsyncCheck: boolean): void {
  const wanted = systems.flatMap((s) => needs[s] ?? []);
  if (fsyncCheck) wanted.push('/usr/bin/strace');
  const missing = wanted.filter((path) => !existsSync(path));
  if (missing.length === 0) return;
  process.stderr.write(`bench: missing ${missing.join(', ')}; running bench/peers/install-peers.sh\n`);
  const script = fileURLToPath(new URL('../peers/install-peers.sh', import.meta.url));
  const run = spawnSync('bash', [script], { stdio: 'inherit' });
  if (run.status !== 0) throw new Error(`bench/peers/install-peers.sh failed (exit ${run.status})`);
}
