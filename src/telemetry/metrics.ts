/**
 * sepp's metrics: one MeterProvider of our own (never the global one, so a
 * library in the same process cannot add to or read from it), read two ways —
 * pulled as Prometheus text when `/metrics` is scraped, and pushed over
 * OTLP/HTTP when an endpoint is configured.
 *
 * Counters are fed from the engine's job events (already one event per queue
 * and outcome per operation, so a batch of 1,000 jobs is one `add`); gauges
 * read the engine's maintained counters and stat the database files only when
 * someone collects. docs/observability.md lists every instrument.
 */
import type {
  Attributes,
  BatchObservableResult,
  Counter,
  Histogram,
  Meter,
  Observable,
} from '@opentelemetry/api';
import type { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import type { Resource } from '@opentelemetry/resources';
import { MeterProvider, type MetricReader, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { hasFlowLimit } from '../engine/flow-control/index.ts';
import type { ScheduleEvent } from '../engine/schedules/types.ts';
import type { CommitStats, JobEvent, QueueInfo, StateCounts } from '../engine/types.ts';
import { jobStates } from '../engine/types.ts';
import type { StoreFiles } from '../store/store.ts';
import { type AnswerCounts, observeAnswers } from './answer-metrics.ts';
import { attr } from './attributes.ts';
import { type ConnectionCounts, observeConnections } from './connection-metrics.ts';
import { type HttpDoorCounts, observeHttpDoors } from './http-door-metrics.ts';
import { QueueLabels } from './queue-labels.ts';

/** What the gauges read; the Engine satisfies it. */
export interface MetricsSource {
  /**
   * Every queue's jobs by state, from the maintained counters, read at each collection (an
   * asynchronous callback: a store may answer over the network).
   */
  queueCounts(): Promise<ReadonlyMap<string, StateCounts>>;
  /** The named queues described (ages, flow control): only those with series of their own. */
  describeQueues(names: readonly string[]): Promise<QueueInfo[]>;
  readonly waitingReserves: number;
  /**
   * PostgreSQL: reads waiting for a read connection now, and those refused since the start
   * (the queue full, store.max_waiting_reads; a key at its share, store.max_waiting_reads_per_key);
   * null for a store whose reads never wait (no series then).
   */
  readonly readQueue: { waiting: number; refusedQueueFull: number; refusedKeyShare: number } | null;
  /** The job event backlog (src/engine/events): subscribers, events kept and their bytes. */
  readonly eventBacklog: { subscribers: number; events: number; bytes: number };
  /** True while the disk is full (enqueues refused, workers draining). */
  readonly diskIsFull: boolean;
  /** Batches not ended (open or sealed); null for a store without batches (no series then). */
  batchesOpen(): Promise<number | null>;
}

export interface MetricsOptions {
  resource: Resource;
  /**
   * `${otlpEndpoint}/v1/metrics` is pushed to when set, with the exporter class (loaded only
   * then: otlp-exporters.ts).
   */
  otlpMetrics: { url: string; Exporter: typeof OTLPMetricExporter } | null;
  exportIntervalMs: number;
  /**
   * The store's files (SQLite: `sepp.db` and its WAL), stat-ed at each collection: two
   * system calls, no query, so a synchronous callback; undefined: a store without files.
   */
  storeFiles: StoreFiles | undefined;
  /** Reports a failing gauge callback once instead of failing the scrape. */
  onCollectError: (what: string, error: unknown) => void;
  /** Queues with series of their own; the rest share `(other)`. Default 200 (queue-labels.ts). */
  labelledQueuesMax?: number;
}

/** The content type Prometheus expects for the text exposition format. */
export const prometheusContentType = 'text/plain; version=0.0.4; charset=utf-8';

// Bucket boundaries sized for what each histogram measures, not the SDK's web-request defaults.
const rpcDurationBucketsMs = [
  0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 5000, 10000, 30000, 60000,
];
const commitDurationBucketsMs = [0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096];
const batchSizeBuckets = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048];

type JobCounterKind = JobEvent['kind'];

export class Metrics {
  private readonly provider: MeterProvider;
  private readonly prometheus: PrometheusExporter;
  private readonly serializer = new PrometheusSerializer();
  private readonly jobCounters: Record<JobCounterKind, Counter>;
  private readonly rpcDuration: Histogram;
  private readonly commitDuration: Histogram;
  private readonly commitBatchSize: Histogram;
  private readonly ticksEnqueued: Counter;
  private readonly ticksSkipped: Counter;
  private readonly pushDeliveries: Counter;
  private readonly pushDuration: Histogram;
  private source: MetricsSource | undefined;
  /** The cardinality limit on the queue label (queue-labels.ts). */
  private readonly queueLabels: QueueLabels;
  private connections: (() => ConnectionCounts) | undefined;
  private storeAvailable: (() => boolean) | undefined;
  private httpDoors: (() => HttpDoorCounts) | undefined;
  private answers: (() => AnswerCounts) | undefined;

  constructor(private readonly options: MetricsOptions) {
    this.queueLabels = new QueueLabels(options.labelledQueuesMax);
    // preventServerStart: the exporter is only a MetricReader here; sepp's own HTTP serves the text.
    this.prometheus = new PrometheusExporter({ preventServerStart: true });
    const readers: MetricReader[] = [this.prometheus];
    if (options.otlpMetrics !== null) {
      readers.push(
        new PeriodicExportingMetricReader({
          exporter: new options.otlpMetrics.Exporter({ url: options.otlpMetrics.url }),
          exportIntervalMillis: options.exportIntervalMs,
          exportTimeoutMillis: Math.min(30_000, options.exportIntervalMs),
        }),
      );
    }
    this.provider = new MeterProvider({ resource: options.resource, readers });
    const meter = this.provider.getMeter('sepp');

    const jobs = (name: string, description: string) =>
      meter.createCounter(`sepp.jobs.${name}`, { unit: '{job}', description });
    this.jobCounters = {
      enqueued: jobs('enqueued', 'Jobs stored by Enqueue, EnqueueBatch, EnqueueAtomic and Produce'),
      deduplicated: jobs('deduplicated', 'Enqueues answered with an existing job (idempotency key seen)'),
      debounced: jobs('debounced', 'Enqueues absorbed by a waiting job with the same debounce key'),
      rejected: jobs('rejected', 'Jobs refused at enqueue, by reason'),
      reserved: jobs('reserved', 'Jobs leased to workers (each delivery, retries included)'),
      acked: jobs('acked', 'Jobs completed by an ack'),
      nacked: jobs('nacked', 'Failed attempts reported by a nack (retried or dead-lettered)'),
      lease_undone: meter.createCounter('sepp.leases.undone', {
        unit: '{lease}',
        description:
          'Leases undone because their answer never reached a worker (also counted in sepp.jobs.reserved)',
      }),
      lease_given_back: meter.createCounter('sepp.leases.given_back', {
        unit: '{lease}',
        description:
          'Leases given back unstarted by their worker (a nack with give_back; also counted in sepp.jobs.reserved)',
      }),
      dead_lettered: jobs('dead_lettered', 'Jobs that became dead letters, by reason'),
      expired: jobs('expired', 'Leases that ran out before an ack or nack'),
      ttl_expired: jobs('ttl_expired', 'Jobs whose expiry (TTL) passed before they started'),
      timed_out: jobs(
        'timed_out',
        'Attempts ended by their hard timeout (timeout_ms), retried or dead-lettered',
      ),
      requeued: jobs('requeued', 'Dead letters put back to ready'),
      cancelled: jobs('cancelled', 'Jobs that became cancelled (CancelJob, CancelJobs, the admin UI)'),
      purged: jobs('purged', 'Waiting jobs deleted by a purge'),
    };
    this.rpcDuration = meter.createHistogram('rpc.server.duration', {
      unit: 'ms',
      description: 'Duration of each unary RPC and each Produce/Work stream request, by method and status',
      advice: { explicitBucketBoundaries: rpcDurationBucketsMs },
    });
    this.commitDuration = meter.createHistogram('sepp.commit.duration', {
      unit: 'ms',
      description: 'Wall time of one group commit: BEGIN, the operations, COMMIT and its fsync',
      advice: { explicitBucketBoundaries: commitDurationBucketsMs },
    });
    this.commitBatchSize = meter.createHistogram('sepp.commit.batch.size', {
      unit: '{operation}',
      description: 'Write operations that shared one group commit (one fsync)',
      advice: { explicitBucketBoundaries: batchSizeBuckets },
    });
    this.ticksEnqueued = meter.createCounter('sepp.schedule.ticks.enqueued', {
      unit: '{tick}',
      description: 'Schedule ticks whose job was enqueued, by schedule',
    });
    this.ticksSkipped = meter.createCounter('sepp.schedule.ticks.skipped', {
      unit: '{tick}',
      description:
        'Schedule ticks that enqueued nothing, by schedule and reason (misfire, overlap, rejected)',
    });
    this.pushDeliveries = meter.createCounter('sepp.push.deliveries', {
      unit: '{delivery}',
      description:
        'Push deliveries (attempts) by queue and outcome (ok, http_status, rate_limited, timeout, …)',
    });
    this.pushDuration = meter.createHistogram('sepp.push.duration', {
      unit: 'ms',
      description: 'Time from the start of a push delivery to its answer (or failure), by queue and outcome',
      advice: { explicitBucketBoundaries: rpcDurationBucketsMs },
    });
    this.observeGauges(meter);
    observeConnections(meter, () => this.connections?.());
    observeHttpDoors(meter, () => this.httpDoors?.());
    observeAnswers(meter, () => this.answers?.());
  }

  /** The answers-beyond-their-room counter reads `read` (the gRPC server and the HTTP API, once they exist). */
  observeAnswers(read: () => AnswerCounts): void {
    this.answers = read;
  }

  /** The HTTP doors' counters read `read` (the doors, once they exist). */
  observeHttpDoors(read: () => HttpDoorCounts): void {
    this.httpDoors = read;
  }

  /** Connection gauges and counters read `read` (the gRPC server, once it exists). */
  observeConnections(read: () => ConnectionCounts): void {
    this.connections = read;
  }

  /** The store-availability gauge reads `read` (the app's view of the maintenance passes). */
  observeStoreHealth(read: () => boolean): void {
    this.storeAvailable = read;
  }

  /** Gauges read the engine; it is built after the metrics, because it reports into them. */
  observe(source: MetricsSource): void {
    this.source = source;
  }

  /** Engine hook: called after the commit that made the change. */
  readonly onEvent = (event: JobEvent): void => {
    const attributes: Attributes = { [attr.queue]: this.queueLabels.of(event.queue) };
    if (event.kind === 'rejected') attributes[attr.rejectionReason] = event.reason;
    else if (event.kind === 'dead_lettered') attributes[attr.deadReason] = event.reason;
    this.jobCounters[event.kind].add(event.count, attributes);
  };

  /** Engine hook: called after the commit that handled schedule ticks. */
  readonly onScheduleEvent = (event: ScheduleEvent): void => {
    if (event.kind === 'tick_enqueued') {
      this.ticksEnqueued.add(event.count, { [attr.schedule]: event.schedule });
    } else {
      this.ticksSkipped.add(event.count, {
        [attr.schedule]: event.schedule,
        [attr.skipReason]: event.reason,
      });
    }
  };

  /** Engine hook: called after every group commit. */
  readonly onBatch = (stats: CommitStats): void => {
    const attributes = { [attr.commitOutcome]: stats.ok ? 'ok' : 'failed' };
    this.commitDuration.record(stats.durationMs, attributes);
    this.commitBatchSize.record(stats.operations, attributes);
  };

  /** A push delivery ended (src/push reports it through the observer app.ts connects). */
  recordPush(queue: string, outcome: string, durationMs: number): void {
    const attributes = { [attr.queue]: this.queueLabels.of(queue), [attr.pushOutcome]: outcome };
    this.pushDeliveries.add(1, attributes);
    this.pushDuration.record(durationMs, attributes);
  }

  recordRpc(durationMs: number, attributes: Attributes): void {
    this.rpcDuration.record(durationMs, attributes);
  }

  /** Collects every instrument now and renders the Prometheus text exposition format. */
  async prometheusText(): Promise<string> {
    const { resourceMetrics, errors } = await this.prometheus.collect();
    for (const error of errors) this.options.onCollectError('collect', error);
    return this.serializer.serialize(resourceMetrics);
  }

  /** Pushes an OTLP export now, when configured. */
  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  /** Pushes a last OTLP export (when configured) and stops the readers. */
  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }

  /** Flow control (docs/flow-control.md): series only for queues that use it, so others add none. */
  private observeFlow(
    result: BatchObservableResult,
    queue: QueueInfo,
    gauges: { leasedLimit: Observable; throttled: Observable; readyGroups: Observable },
  ): void {
    const attributes = { [attr.queue]: queue.name };
    const { settings } = queue;
    if (settings.maxLeased > 0) result.observe(gauges.leasedLimit, settings.maxLeased, attributes);
    if (hasFlowLimit(settings) || queue.throttledWorkers > 0) {
      result.observe(gauges.throttled, queue.throttledWorkers, attributes);
    }
    if (queue.readyGroups > 0 || settings.groupMaxLeased > 0 || settings.groupRateLimit.leases > 0) {
      result.observe(gauges.readyGroups, queue.readyGroups, attributes);
    }
  }

  private observeGauges(meter: Meter): void {
    const depth = meter.createObservableUpDownCounter('sepp.queue.depth', {
      unit: '{job}',
      description: 'Jobs in each queue by state, from the maintained counters (no row counting)',
    });
    const oldestReady = meter.createObservableGauge('sepp.queue.oldest_ready.age', {
      unit: 'ms',
      description: 'How long the oldest ready job of each queue has been due (absent when none is ready)',
    });
    const waiting = meter.createObservableUpDownCounter('sepp.reserves.waiting', {
      unit: '{request}',
      description: 'Reserve long-polls and Work streams waiting for a job now',
    });
    // The event backlog (src/engine/events).
    const upDown = (name: string, unit: string, description: string) =>
      meter.createObservableUpDownCounter(name, { unit, description });
    const subscribers = upDown('sepp.events.subscribers', '{stream}', 'Events streams subscribed now');
    const backlogEvents = upDown(
      'sepp.events.backlog',
      '{event}',
      'Job events kept in memory for subscribers to catch up or resume (0 while nobody subscribes)',
    );
    const backlogBytes = upDown(
      'sepp.events.backlog.size',
      'By',
      'Estimated bytes of the job events kept (limits.event_backlog_bytes bounds it)',
    );
    const leasedLimit = meter.createObservableGauge('sepp.queue.leased.limit', {
      unit: '{job}',
      description:
        "Each queue's max_leased (absent when it has none); compare with sepp.queue.depth{state=leased}",
    });
    const throttled = meter.createObservableUpDownCounter('sepp.queue.reserves.throttled', {
      unit: '{request}',
      description:
        'Waiting reserves a limit holds back from ready jobs, per queue (max_leased, rate, group limits)',
    });
    const readyGroups = meter.createObservableGauge('sepp.queue.groups.ready', {
      unit: '{group}',
      description: 'Groups with ready jobs in each queue that has groups, counted up to 1,000',
    });
    const diskFull = meter.createObservableGauge('sepp.storage.disk_full', {
      unit: '1',
      description:
        '1 while the data directory disk is full: enqueues are refused, workers drain in the freed reserve',
    });
    const readsWaiting = upDown(
      'sepp.store.reads.waiting',
      '{read}',
      'PostgreSQL: reads waiting for a read connection now (at most store.max_waiting_reads; absent on SQLite)',
    );
    const readsRefused = meter.createObservableCounter('sepp.store.reads.refused', {
      unit: '{read}',
      description:
        'PostgreSQL: reads refused at once (RESOURCE_EXHAUSTED, 429) since the start: queue_full (store.max_waiting_reads), key_share (store.max_waiting_reads_per_key)',
    });
    meter.addBatchObservableCallback(
      (result) => {
        const reads = this.source?.readQueue;
        if (reads === undefined || reads === null) return;
        result.observe(readsWaiting, reads.waiting);
        result.observe(readsRefused, reads.refusedQueueFull, { [attr.refusalReason]: 'queue_full' });
        result.observe(readsRefused, reads.refusedKeyShare, { [attr.refusalReason]: 'key_share' });
      },
      [readsWaiting, readsRefused],
    );
    diskFull.addCallback((result) => {
      if (this.source !== undefined) result.observe(this.source.diskIsFull ? 1 : 0);
    });
    const storeAvailable = meter.createObservableGauge('sepp.store.available', {
      unit: '1',
      description:
        "1 while the store answers this server's maintenance passes (each second); 0 from the first that failed (PostgreSQL unreachable, a schema a newer sepp migrated) until one works again",
    });
    storeAvailable.addCallback((result) => {
      if (this.storeAvailable !== undefined) result.observe(this.storeAvailable() ? 1 : 0);
    });
    const batchesOpen = meter.createObservableUpDownCounter('sepp.batches.open', {
      unit: '{batch}',
      description:
        'Batches not ended yet (open, or sealed with members pending); jobs waiting on dependencies are sepp.queue.depth{state=waiting}',
    });
    batchesOpen.addCallback(async (result) => {
      const source = this.source;
      if (source === undefined) return;
      try {
        const open = await source.batchesOpen();
        if (open !== null) result.observe(open);
      } catch (error) {
        this.options.onCollectError('sepp.batches.open', error);
      }
    });
    const fileSize = meter.createObservableUpDownCounter('sepp.db.file.size', {
      unit: 'By',
      description: 'Size of the SQLite database file and of its write-ahead log',
    });

    meter.addBatchObservableCallback(
      async (result) => {
        const source = this.source;
        if (source === undefined) return;
        let counts: ReadonlyMap<string, StateCounts>;
        let described: QueueInfo[];
        try {
          counts = await source.queueCounts();
          // Name order, so the queues that get series at a first scrape do not depend on a Map's order.
          const labels = [...counts.keys()].sort().map((name) => this.queueLabels.of(name));
          described = await source.describeQueues(labels.filter((label) => counts.has(label)));
        } catch (error) {
          // A closed database during shutdown must not fail the final export.
          this.options.onCollectError('sepp.queue.depth', error);
          return;
        }
        const byLabel = new Map<string, StateCounts>();
        for (const [name, queueCounts] of counts) {
          const label = this.queueLabels.of(name);
          const sum = byLabel.get(label);
          if (sum === undefined) byLabel.set(label, { ...queueCounts });
          else for (const state of jobStates) sum[state] += queueCounts[state];
        }
        for (const [label, queueCounts] of byLabel) {
          for (const state of jobStates) {
            result.observe(depth, queueCounts[state], { [attr.queue]: label, [attr.jobState]: state });
          }
        }
        for (const queue of described) {
          if (queue.oldestReadyAgeMs !== null)
            result.observe(oldestReady, queue.oldestReadyAgeMs, { [attr.queue]: queue.name });
          this.observeFlow(result, queue, { leasedLimit, throttled, readyGroups });
        }
        result.observe(waiting, source.waitingReserves);
        const backlog = source.eventBacklog;
        result.observe(subscribers, backlog.subscribers);
        result.observe(backlogEvents, backlog.events);
        result.observe(backlogBytes, backlog.bytes);
      },
      [
        depth,
        oldestReady,
        waiting,
        leasedLimit,
        throttled,
        readyGroups,
        subscribers,
        backlogEvents,
        backlogBytes,
      ],
    );

    fileSize.addCallback((result) => {
      const sizes = this.options.storeFiles?.sizes();
      if (sizes === undefined) return;
      result.observe(sizes.database, { [attr.dbFile]: 'database' });
      result.observe(sizes.wal, { [attr.dbFile]: 'wal' });
    });
  }
}
