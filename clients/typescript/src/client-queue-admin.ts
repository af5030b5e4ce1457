/**
 * The SeppClient's management of queues and the server: queues and their
 * counts, connected workers, pause, resume and delete, dead letters, server
 * info, run-time settings, config reload. SeppClient inherits these methods
 * (client.ts), after JobControlCalls.
 */
import { changeDeadLettersCall, listDeadLettersCall } from './admin-calls.ts';
import { JobControlCalls } from './client-job-control.ts';
import { queueInfoFromProto, serverInfoFromProto, workerInfoFromProto } from './convert.ts';
import type { Job } from './jobs.ts';
import {
  reloadConfigCall,
  resetQueueSettingsCall,
  type SettingInput,
  setQueueSettingsCall,
} from './settings-calls.ts';
import type {
  CallOptions,
  DeadLetterQuery,
  DeadLetterSelection,
  QueueActionOptions,
  QueueInfo,
  ReloadReport,
  ServerInfo,
  WorkerInfo,
} from './types.ts';

/** Calls that change nothing, or whose repeat has no further effect: safe to retry after UNAVAILABLE. */
export function readCall(options: CallOptions) {
  return { deadlineMs: options.deadlineMs, signal: options.signal, retrySafe: true };
}

export class QueueAdminCalls extends JobControlCalls {
  /** Every queue with its counts by state, paused flag, oldest ready age and settings. */
  async listQueues(options: CallOptions = {}): Promise<QueueInfo[]> {
    const response = await this.connection.invoke(this.connection.rpc.listQueues, {}, readCall(options));
    return response.queues.map(queueInfoFromProto);
  }

  /** The workers connected now: id, address, transport, queues, when last seen, leases held. */
  async listWorkers(options: CallOptions = {}): Promise<WorkerInfo[]> {
    const response = await this.connection.invoke(this.connection.rpc.listWorkers, {}, readCall(options));
    return response.workers.map(workerInfoFromProto);
  }

  /**
   * Pauses a queue: it hands out no jobs until resumed; enqueue still works.
   * A queue nobody has used yet is NOT_FOUND unless `allowMissing` creates it.
   */
  async pauseQueue(queue: string, options: QueueActionOptions = {}): Promise<void> {
    const allowMissing = options.allowMissing === true;
    await this.connection.invoke(this.connection.rpc.pauseQueue, { queue, allowMissing }, readCall(options));
  }

  /** Resumes a paused queue; NOT_FOUND for a queue nobody has used yet, unless `allowMissing`. */
  async resumeQueue(queue: string, options: QueueActionOptions = {}): Promise<void> {
    const allowMissing = options.allowMissing === true;
    await this.connection.invoke(this.connection.rpc.resumeQueue, { queue, allowMissing }, readCall(options));
  }

  /** Deletes a queue that holds no job in any state (FAILED_PRECONDITION while it holds any). */
  async deleteQueue(queue: string, options: CallOptions = {}): Promise<void> {
    // A repeat after an unknown outcome finds nothing (NOT_FOUND) rather than deleting anything else.
    await this.connection.invoke(this.connection.rpc.deleteQueue, { queue }, readCall(options));
  }

  /** One page of a queue's dead letters, oldest first (payloads and error histories left out). */
  listDeadLetters(
    queue: string,
    query: DeadLetterQuery = {},
  ): Promise<{ jobs: Job[]; nextPageToken: string | null }> {
    return listDeadLettersCall(this.connection, queue, query);
  }

  /** Every dead letter of a queue, page by page. */
  async *deadLetters(queue: string, query: Omit<DeadLetterQuery, 'pageToken'> = {}): AsyncGenerator<Job> {
    let pageToken: string | null = null;
    do {
      const page: { jobs: Job[]; nextPageToken: string | null } = await this.listDeadLetters(queue, {
        ...query,
        ...(pageToken === null ? {} : { pageToken }),
      });
      yield* page.jobs;
      pageToken = page.nextPageToken;
    } while (pageToken !== null);
  }

  /** Makes dead letters ready again with a fresh attempt budget; resolves with how many. */
  requeueDeadLetters(
    queue: string,
    selection: DeadLetterSelection,
    options: CallOptions = {},
  ): Promise<number> {
    return changeDeadLettersCall(this.connection, 'requeue', queue, selection, options);
  }

  /** Deletes dead letters for good (which frees their idempotency keys); resolves with how many. */
  deleteDeadLetters(
    queue: string,
    selection: DeadLetterSelection,
    options: CallOptions = {},
  ): Promise<number> {
    return changeDeadLettersCall(this.connection, 'delete', queue, selection, options);
  }

  /** The server's version, durability mode, clock and every effective limit. */
  async getServerInfo(options: CallOptions = {}): Promise<ServerInfo> {
    const response = await this.connection.invoke(this.connection.rpc.getServerInfo, {}, readCall(options));
    return serverInfoFromProto(response);
  }

  /**
   * Overrides settings of a queue while the server runs (admin role): by their
   * config-file names, with values written as in the file (`{ max_attempts: 10,
   * backoff_base_ms: '2s' }`). They apply from the next lease or enqueue and
   * survive restarts; resolves with the queue as it is afterwards.
   */
  setQueueSettings(
    queue: string,
    settings: Readonly<Record<string, SettingInput>>,
    options: CallOptions = {},
  ): Promise<QueueInfo> {
    return setQueueSettingsCall(this.connection, queue, settings, options);
  }

  /** Removes run-time overrides of a queue (named ones, or `all`): the config file's values apply again. */
  resetQueueSettings(
    queue: string,
    keys: readonly string[] | 'all',
    options: CallOptions = {},
  ): Promise<QueueInfo> {
    return resetQueueSettingsCall(this.connection, queue, keys, options);
  }

  /**
   * Makes the server read its config file again, as SIGHUP does (admin role); `dryRun` only reports.
   * A file that lowers security (no API keys, admin users, TLS or /metrics token where the running
   * configuration has them) is refused unless `allowSecurityDowngrade` is set, and even then where
   * the server listens on a non-loopback address without the matching `insecure_allow_unauthenticated`.
   */
  reloadConfig(
    options: CallOptions & { dryRun?: boolean; allowSecurityDowngrade?: boolean } = {},
  ): Promise<ReloadReport> {
    return reloadConfigCall(
      this.connection,
      { dryRun: options.dryRun ?? false, allowSecurityDowngrade: options.allowSecurityDowngrade ?? false },
      options,
    );
  }
}
