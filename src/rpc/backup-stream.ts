/**
 * Backup: an online copy of the database streamed to the caller. The engine
 * copies the live database into a temporary file in the data directory
 * (progress messages go out meanwhile), then the file is sent in chunks,
 * honouring the client's flow control, then removed. Each backup is written to
 * the audit log before the copy starts.
 */
import { createHash } from 'node:crypto';
import { createReadStream, readdirSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { handleServerStreamingCall, ServerWritableStream } from '@grpc/grpc-js';
import type { BackupChunk, BackupRequest } from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import { SeppError } from '../engine/errors.ts';
import { rpcAudit } from './audit-input.ts';
import type { RpcContext } from './rpc-context.ts';
import { toServiceError } from './status.ts';

const chunkBytes = 1024 * 1024;
let backupsStarted = 0;

export function createBackupHandler(
  ctx: RpcContext,
  dataDir: string,
): handleServerStreamingCall<BackupRequest, BackupChunk> {
  return (call: ServerWritableStream<BackupRequest, BackupChunk>) => {
    const tempPath = join(dataDir, `backup-${process.pid}-${++backupsStarted}.db.tmp`);
    const run = async () => {
      if (ctx.draining) throw new SeppError('unavailable', 'sepp is shutting down');
      const caller = ctx.auth.authorize(call.metadata, 'admin', 'Backup');
      // Durable before the copy starts: a backup that is refused the audit entry does not run.
      await ctx.engine.recordAudit(rpcAudit(ctx, caller, call.metadata, 'server.backup', 'server'));
      let lastReportedPages = -1;
      await ctx.engine.backup(tempPath, (pagesDone, pagesTotal) => {
        if (pagesDone !== lastReportedPages && !call.cancelled) {
          lastReportedPages = pagesDone;
          call.write({ kind: { $case: 'progress', value: { pagesDone, pagesTotal } } });
        }
      });
      const hash = createHash('sha256');
      let sizeBytes = 0;
      for await (const chunk of createReadStream(tempPath, { highWaterMark: chunkBytes })) {
        if (call.cancelled) return;
        const data = chunk as Buffer;
        hash.update(data);
        sizeBytes += data.length;
        if (!call.write({ kind: { $case: 'data', value: data } })) {
          await new Promise((resolve) => call.once('drain', resolve));
        }
      }
      call.write({ kind: { $case: 'done', value: { sizeBytes, sha256: hash.digest('hex') } } });
      call.end();
    };
    run()
      .catch((error: unknown) => {
        if (!call.cancelled) call.emit('error', toServiceError(error));
      })
      .finally(() => rm(tempPath, { force: true }));
  };
}

/** Removes temporary copies left by a server that died during a backup (call after the data directory is locked). */
export function removeStaleBackups(dataDir: string): void {
  for (const name of readdirSync(dataDir)) {
    if (/^backup-\d+-\d+\.db\.tmp$/.test(name)) rmSync(join(dataDir, name), { force: true });
  }
}
