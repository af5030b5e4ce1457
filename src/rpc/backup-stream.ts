/**
 * Backup: an online copy of the database streamed to the caller. The engine
 * copies the live database into a temporary file in the data directory
 * (progress messages go out meanwhile), then the file is sent in chunks,
 * honouring the client's flow control, then removed. Each backup is written to
 * the audit log before the copy starts.
 *
 * However the call ends — done, failed, or cancelled by the client at any
 * point — the copy stops, its file descriptor is closed and the temporary
 * file is removed at once: a cancel aborts the engine's copy at its next step
 * and wakes a send that waits for the client to read.
 */
import { createHash } from 'node:crypto';
import { createReadStream, readdirSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { handleServerStreamingCall } from '@grpc/grpc-js';
import type { BackupChunk, BackupRequest } from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import { SeppError } from '../engine/errors.ts';
import { rpcAudit } from './audit-input.ts';
import { type BugReporter, type GuardedCall, guardServerStream } from './call-guard.ts';
import { admit, type RpcContext } from './rpc-context.ts';

const chunkBytes = 1024 * 1024;
let backupsStarted = 0;

export function createBackupHandler(
  ctx: RpcContext,
  dataDir: string,
  onBug: BugReporter,
): handleServerStreamingCall<BackupRequest, BackupChunk> {
  return guardServerStream<BackupRequest, BackupChunk>('Backup', onBug, (call) => {
    const caller = admit(ctx, call.metadata, 'admin', 'Backup');
    const tempPath = join(dataDir, `backup-${process.pid}-${++backupsStarted}.db.tmp`);
    const over = new AbortController();
    call.onFinish(() => over.abort());
    void call.spawn(async () => {
      try {
        // A store that makes no backups refuses before anything is audited (nothing happened).
        ctx.engine.checkBackup();
        // Durable before the copy starts: a backup that is refused the audit entry does not run.
        await ctx.engine.recordAudit(rpcAudit(ctx, caller, call.metadata, 'server.backup', 'server'));
        await sendBackup(ctx, call, tempPath, over.signal);
      } finally {
        await rm(tempPath, { force: true });
      }
    });
  });
}

async function sendBackup(
  ctx: RpcContext,
  call: GuardedCall<never, BackupChunk>,
  tempPath: string,
  over: AbortSignal,
): Promise<void> {
  let lastReportedPages = -1;
  await ctx.engine.backup(tempPath, (pagesDone, pagesTotal) => {
    // Throwing from the progress callback stops the copy at this step.
    if (over.aborted) throw new SeppError('unavailable', 'the backup was cancelled');
    if (pagesDone !== lastReportedPages) {
      lastReportedPages = pagesDone;
      call.write({ kind: { $case: 'progress', value: { pagesDone, pagesTotal } } });
    }
  });
  if (over.aborted) return;
  const hash = createHash('sha256');
  let sizeBytes = 0;
  const file = createReadStream(tempPath, { highWaterMark: chunkBytes });
  const closeFile = () => file.destroy();
  over.addEventListener('abort', closeFile);
  try {
    for await (const chunk of file) {
      if (over.aborted) return;
      const data = chunk as Buffer;
      hash.update(data);
      sizeBytes += data.length;
      if (!call.write({ kind: { $case: 'data', value: data } })) await call.drained();
    }
  } catch (error) {
    // Destroying the file on cancel ends the loop with a premature-close error: not a failure.
    if (over.aborted) return;
    throw error;
  } finally {
    over.removeEventListener('abort', closeFile);
    file.destroy();
  }
  call.write({ kind: { $case: 'done', value: { sizeBytes, sha256: hash.digest('hex') } } });
  call.end();
}

/** Removes temporary copies left by a server that died during a backup (call after the data directory is locked). */
export function removeStaleBackups(dataDir: string): void {
  for (const name of readdirSync(dataDir)) {
    if (/^backup-\d+-\d+\.db\.tmp$/.test(name)) rmSync(join(dataDir, name), { force: true });
  }
}
