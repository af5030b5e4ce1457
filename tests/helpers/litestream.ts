/** The Litestream binary from the `@flydotio/litestream` devDependency, for the replication tests. */
import { type ChildProcess, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const platformPackage = `@flydotio/litestream-${process.platform}-${process.arch}`;

/** The binary that `@flydotio/litestream`'s platform package carries, or undefined where none installs. */
function findBinary(): string | undefined {
  try {
    const dir = dirname(createRequire(import.meta.url).resolve(`${platformPackage}/package.json`));
    const binary = join(dir, 'litestream');
    return existsSync(binary) ? binary : undefined;
  } catch {
    return undefined;
  }
}

export const litestreamBinary = findBinary();

/** node:test's `skip` for tests that need Litestream: false, or why not (also printed, so a skip is seen). */
export const litestreamSkip: false | string =
  litestreamBinary === undefined
    ? `${platformPackage} is not installed: npm installs Litestream's binary only for linux and darwin, x64 and arm64`
    : false;
if (litestreamSkip) console.log(`SKIPPED: ${litestreamSkip}`);

export function litestreamVersion(): string {
  return spawnSync(litestreamBinary ?? 'litestream', ['version'], { encoding: 'utf8' }).stdout.trim();
}

/** A litestream.yml replicating `db` to a file replica in directory `replica`. */
export function fileReplicaConfig(db: string, replica: string): string {
  return `dbs:\n  - path: ${db}\n    replicas:\n      - type: file\n        path: ${replica}\n`;
}

/** Resolves once the child has exited (at once if it has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Everything a child writes to stdout and stderr, as it comes. */
export function collectOutput(child: ChildProcess): () => string {
  let text = '';
  for (const stream of [child.stdout, child.stderr])
    stream?.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
  return () => text;
}
