/** `sepp backup FILE`: an online, consistent copy of a running server's database. */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { type ChannelCredentials, credentials, Metadata, type ServiceError, status } from '@grpc/grpc-js';
import type { Argv } from 'yargs';
import type { BackupChunk } from '../../../clients/typescript/src/gen/sepp/v1/admin.js';
import { QueueServiceClient } from '../../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { SeppError } from '../../../clients/typescript/src/index.ts';
import { messageOf, printFailure, UsageError } from '../failure.ts';
import { type CliIo, pathIn } from '../io.ts';
import {
  type ConnectionArgs,
  cliUserAgent,
  describeFailure,
  parseServer,
  printJson,
  readCa,
  withConnection,
} from './connection.ts';
import type { ServerTarget } from './connection-errors.ts';

const mib = (bytes: number) => `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;

export function registerBackupCommand(parser: Argv, io: CliIo): void {
  parser.command(
    'backup <file>',
    "Copy a running server's database to FILE (online and consistent; needs an admin key when keys are on)",
    (y) =>
      withConnection(
        io,
        y
          .positional('file', {
            type: 'string',
            demandOption: true,
            describe: 'Where to write the copy (a SQLite file)',
          })
          .option('force', { type: 'boolean', default: false, describe: 'Overwrite FILE if it exists' }),
      ),
    async (args) => {
      io.exitCode = await backup(io, args.file, args);
    },
  );
}

/** Opens FILE.partial for writing, or says why it cannot in terms of FILE. */
function openPartial(io: CliIo, file: string, partial: string): number {
  try {
    return openSync(pathIn(io, partial), 'w', 0o600);
  } catch (error) {
    const code = error instanceof Error && 'code' in error ? String(error.code) : '';
    const why =
      code === 'ENOENT'
        ? `the directory ${dirname(file)} does not exist`
        : code === 'EACCES' || code === 'EPERM'
          ? `permission denied in ${dirname(file)}`
          : code === 'EISDIR'
            ? `${partial} is a directory`
            : messageOf(error);
    throw new UsageError(`cannot write ${file}: ${why}`);
  }
}

async function backup(io: CliIo, file: string, args: ConnectionArgs & { force: boolean }): Promise<number> {
  let target: ServerTarget | undefined;
  let fd: number | undefined;
  const partial = `${file}.partial`;
  let client: QueueServiceClient | undefined;
  const json = args.output === 'json' || args.json === true;
  // Progress is for a person at a terminal: off one (a script, a log) and with --json
  // only the outcome is written.
  const tty = io.stderr.isTTY === true && !json;
  const progress = (line: string, final = false) => {
    if (tty) io.stderr.write(`\r\x1b[K${line}${final ? '\n' : ''}`);
    else if (final) io.stderr.write(`${line}\n`);
  };
  try {
    if (existsSync(pathIn(io, file)) && !args.force) {
      throw new UsageError(`${file} exists; choose another name or pass --force`);
    }
    const ca = readCa(io, args);
    target = parseServer(args.server, ca !== undefined);
    const channel: ChannelCredentials =
      ca === undefined ? credentials.createInsecure() : credentials.createSsl(ca === true ? null : ca);
    const metadata = new Metadata();
    const apiKey = args['api-key'] || io.env.SEPP_API_KEY;
    if (apiKey) metadata.set('authorization', `Bearer ${apiKey}`);
    fd = openPartial(io, file, partial);
    // Its own client (the SDK has no Backup call), so it names the command itself, as connect() does.
    client = new QueueServiceClient(target.address, channel, { 'grpc.primary_user_agent': cliUserAgent });
    const { written, sha256 } = await receive(client, metadata, fd, progress);
    closeSync(fd);
    fd = undefined;
    renameSync(pathIn(io, partial), pathIn(io, file));
    if (json) printJson(io, { file, sizeBytes: written, sha256 });
    else progress(`backup written to ${file} (${mib(written)}, sha256 ${sha256.slice(0, 16)}…)`, true);
    return 0;
  } catch (error) {
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch {}
      rmSync(pathIn(io, partial), { force: true });
    }
    if (tty) progress('');
    const e = error as Partial<ServiceError>;
    const failure =
      typeof e.code === 'number' && e.code !== status.OK
        ? new SeppError(e.code, e.details ?? messageOf(error))
        : error;
    const { message, exitCode } = await describeFailure(failure, target, io);
    printFailure(io, error instanceof UsageError ? message : `backup failed: ${message}`, error);
    return exitCode;
  } finally {
    client?.close();
  }
}

/** Streams the copy into `fd`; resolves once the server's checksum matches what was written. */
async function receive(
  client: QueueServiceClient,
  metadata: Metadata,
  fd: number,
  progress: (line: string, final?: boolean) => void,
): Promise<{ written: number; sha256: string }> {
  const hash = createHash('sha256');
  let written = 0;
  const done = await new Promise<{ sizeBytes: number; sha256: string }>((resolve, reject) => {
    const stream = client.backup({}, metadata);
    let lastPercent = -1;
    stream.on('data', (chunk: BackupChunk) => {
      const kind = chunk.kind;
      if (kind?.$case === 'progress') {
        const percent = Math.floor((100 * kind.value.pagesDone) / Math.max(1, kind.value.pagesTotal));
        if (percent !== lastPercent) {
          lastPercent = percent;
          progress(
            `copying the database on the server: ${percent}% (${kind.value.pagesDone}/${kind.value.pagesTotal} pages)`,
          );
        }
      } else if (kind?.$case === 'data') {
        writeSync(fd, kind.value);
        hash.update(kind.value);
        written += kind.value.length;
        progress(`receiving: ${mib(written)}`);
      } else if (kind?.$case === 'done') {
        resolve(kind.value);
      }
    });
    stream.on('error', reject);
    stream.on('end', () => reject(new Error('the server ended the backup before it was complete')));
  });
  const sha256 = hash.digest('hex');
  if (done.sizeBytes !== written || done.sha256 !== sha256) {
    throw new Error(
      `the copy does not match what the server sent (${written} of ${done.sizeBytes} bytes, sha256 ${sha256})`,
    );
  }
  return { written, sha256 };
}
