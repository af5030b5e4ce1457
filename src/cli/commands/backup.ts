/** `sepp backup FILE`: an online, consistent copy of a running server's database. */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import type { Argv } from 'yargs';
import type { BackupChunk } from '../../../clients/typescript/src/gen/sepp/v1/admin.js';
import { QueueServiceClient } from '../../../clients/typescript/src/gen/sepp/v1/queue_service.js';

const mib = (bytes: number) => `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;

export function registerBackupCommand(parser: Argv): void {
  parser.command(
    'backup <file>',
    "Copy a running server's database to FILE (online and consistent; needs an admin key when keys are on)",
    (y) =>
      y
        .positional('file', {
          type: 'string',
          demandOption: true,
          describe: 'Where to write the copy (a SQLite file)',
        })
        .option('server', {
          type: 'string',
          default: process.env.SEPP_SERVER ?? '127.0.0.1:50051',
          describe: 'Server address (env SEPP_SERVER)',
        })
        .option('api-key', { type: 'string', describe: 'API key with the admin role (env SEPP_API_KEY)' })
        .option('force', { type: 'boolean', default: false, describe: 'Overwrite FILE if it exists' }),
    async (args) => {
      process.exitCode = await backup(
        args.file,
        args.server,
        args['api-key'] ?? process.env.SEPP_API_KEY,
        args.force,
      );
    },
  );
}

async function backup(
  file: string,
  server: string,
  apiKey: string | undefined,
  force: boolean,
): Promise<number> {
  if (existsSync(file) && !force) {
    process.stderr.write(`sepp: ${file} exists; choose another name or pass --force\n`);
    return 2;
  }
  const partial = `${file}.partial`;
  const client = new QueueServiceClient(server, credentials.createInsecure());
  const metadata = new Metadata();
  if (apiKey) metadata.set('authorization', `Bearer ${apiKey}`);
  const fd = openSync(partial, 'w', 0o600);
  const hash = createHash('sha256');
  let written = 0;
  const tty = process.stderr.isTTY;
  const status = (line: string, final = false) => {
    if (tty) process.stderr.write(`\r\x1b[K${line}${final ? '\n' : ''}`);
    else if (final) process.stderr.write(`${line}\n`);
  };
  try {
    const done = await new Promise<{ sizeBytes: number; sha256: string }>((resolve, reject) => {
      const stream = client.backup({}, metadata);
      let lastPercent = -1;
      stream.on('data', (chunk: BackupChunk) => {
        const kind = chunk.kind;
        if (kind?.$case === 'progress') {
          const percent = Math.floor((100 * kind.value.pagesDone) / Math.max(1, kind.value.pagesTotal));
          if (percent !== lastPercent) {
            lastPercent = percent;
            status(
              `copying the database on the server: ${percent}% (${kind.value.pagesDone}/${kind.value.pagesTotal} pages)`,
            );
            if (!tty && percent % 25 === 0) process.stderr.write(`copying: ${percent}%\n`);
          }
        } else if (kind?.$case === 'data') {
          writeSync(fd, kind.value);
          hash.update(kind.value);
          written += kind.value.length;
          status(`receiving: ${mib(written)}`);
        } else if (kind?.$case === 'done') {
          resolve(kind.value);
        }
      });
      stream.on('error', reject);
      stream.on('end', () => reject(new Error('the server ended the backup before it was complete')));
    });
    closeSync(fd);
    const sha256 = hash.digest('hex');
    if (done.sizeBytes !== written || done.sha256 !== sha256) {
      throw new Error(
        `the copy does not match what the server sent (${written} of ${done.sizeBytes} bytes, sha256 ${sha256})`,
      );
    }
    renameSync(partial, file);
    status(`backup written to ${file} (${mib(written)}, sha256 ${sha256.slice(0, 16)}…)`, true);
    return 0;
  } catch (error) {
    try {
      closeSync(fd);
    } catch {}
    rmSync(partial, { force: true });
    const e = error as Partial<ServiceError>;
    const message = e.details ?? (error instanceof Error ? error.message : String(error));
    status('', false);
    process.stderr.write(`sepp: backup failed: ${message}\n`);
    return e.code === 14 ? 3 : e.code === 16 || e.code === 7 ? 4 : 1;
  } finally {
    client.close();
  }
}
