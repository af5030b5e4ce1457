/**
 * A client's queue calls (`client.queues`): every queue with its counts, pause,
 * resume, purge and delete, and run-time settings.
 */

import { purgeQueueCall } from './admin-calls.ts';
import { pageSizeArgument } from './arguments.ts';
import { type Connection, retrySafe } from './connection.ts';
import { queueInfoFromProto } from './convert.ts';
import { resetQueueSettingsCall, type SettingInput, setQueueSettingsCall } from './settings-calls.ts';
import type {
  BulkResult,
  CallOptions,
  QueueActionOptions,
  QueueInfo,
  QueuePage,
  QueuePageOptions,
  RequestKeyOption,
} from './types.ts';

/** Options of `purge`: with `background`, answer as soon as the purge has begun. */
export interface PurgeOptions extends CallOptions, RequestKeyOption {
  /** Resolve with a `BulkResult` once the purge (a bulk operation) has begun, instead of a count when it has ended. */
  background?: boolean;
}

/** The queue calls of a client (`client.queues`). */
export class Queues {
  /** @internal */
  constructor(private readonly conn: Connection) {}

  /**
   * Every queue with its counts by state, paused flag, oldest ready age and settings,
   * in name order: follows the server's pages (at most `max_queues` queues in all).
   */
  async list(options: CallOptions = {}): Promise<QueueInfo[]> {
    const queues: QueueInfo[] = [];
    let pageToken = '';
    do {
      const page = await this.listPage({ ...options, pageToken });
      queues.push(...page.queues);
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
    return queues;
  }

  /**
   * One page of queues in name order: at most `pageSize` (default 100, at most the
   * server's `max_page_size`); pass `nextPageToken` back for the next, '' on the last page.
   */
  async listPage(options: QueuePageOptions = {}): Promise<QueuePage> {
    const response = await this.conn.invoke(
      this.conn.rpc.listQueues,
      {
        pageSize: pageSizeArgument(options.pageSize),
        pageToken: options.pageToken ?? '',
      },
      retrySafe(options),
    );
    return { queues: response.queues.map(queueInfoFromProto), nextPageToken: response.nextPageToken };
  }

  /**
   * Pauses a queue: it hands out no jobs until resumed; enqueue still works.
   * A queue nobody has used yet is NOT_FOUND unless `allowMissing` creates it.
   */
  async pause(queue: string, options: QueueActionOptions = {}): Promise<void> {
    const allowMissing = options.allowMissing === true;
    await this.conn.invoke(this.conn.rpc.pauseQueue, { queue, allowMissing }, retrySafe(options));
  }

  /** Resumes a paused queue; NOT_FOUND for a queue nobody has used yet, unless `allowMissing`. */
  async resume(queue: string, options: QueueActionOptions = {}): Promise<void> {
    const allowMissing = options.allowMissing === true;
    await this.conn.invoke(this.conn.rpc.resumeQueue, { queue, allowMissing }, retrySafe(options));
  }

  /** Deletes a queue that holds no job in any state (FAILED_PRECONDITION while it holds any). */
  async delete(queue: string, options: CallOptions = {}): Promise<void> {
    // A repeat after an unknown outcome finds nothing (NOT_FOUND) rather than deleting anything else.
    await this.conn.invoke(this.conn.rpc.deleteQueue, { queue }, retrySafe(options));
  }

  /**
   * Deletes every ready and scheduled job of a queue (admin key) as one bulk
   * operation; resolves with how many. With `background` it resolves as soon
   * as the operation has begun, with a `BulkResult` (follow `operation.id`
   * with `client.jobs.bulkOperation`).
   */
  purge(queue: string, options?: PurgeOptions & { background?: false }): Promise<number>;
  purge(queue: string, options: PurgeOptions & { background: true }): Promise<BulkResult>;
  purge(queue: string, options?: PurgeOptions): Promise<number | BulkResult>;
  async purge(queue: string, options: PurgeOptions = {}): Promise<number | BulkResult> {
    const result = await purgeQueueCall(this.conn, queue, options);
    return options.background === true ? result : result.changed;
  }

  /**
   * Overrides settings of a queue while the server runs (admin key): by their
   * config-file names, with values written as in the file (`{ max_attempts: 10,
   * backoff_base_ms: '2s' }`). They apply from the next lease or enqueue and
   * survive restarts; resolves with the queue as it is afterwards.
   */
  setSettings(
    queue: string,
    settings: Readonly<Record<string, SettingInput>>,
    options: CallOptions = {},
  ): Promise<QueueInfo> {
    return setQueueSettingsCall(this.conn, queue, settings, options);
  }

  /** Removes run-time overrides of a queue (named ones, or `all`): the config file's values apply again. */
  resetSettings(
    queue: string,
    keys: readonly string[] | 'all',
    options: CallOptions = {},
  ): Promise<QueueInfo> {
    return resetQueueSettingsCall(this.conn, queue, keys, options);
  }
}
