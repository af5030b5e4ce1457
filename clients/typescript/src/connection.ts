/**
 * One connection to a sepp server: the gRPC channel, its credentials and the
 * API key, and the unary call helper every RPC method goes through (deadline,
 * cancellation, opt-in retry of UNAVAILABLE where repeating is safe).
 */
import {
  type ChannelCredentials,
  type ClientUnaryCall,
  credentials,
  type CallOptions as GrpcCallOptions,
  Metadata,
  type ServiceError,
  status,
} from '@grpc/grpc-js';
import { deadlineArgument, deadlineMsMax, serializationFailure } from './arguments.ts';
import { backoffDelayMs, sleep } from './backoff.ts';
import { cancelCall } from './cancel-call.ts';
import { connectionClosedByServer, retriedByClient, SeppError, toSeppError } from './errors.ts';
import { QueueServiceClient, QueueServiceService } from './gen/sepp/v1/queue_service.js';
import { targetOf } from './running-members.ts';

/** TLS settings; PEM contents, not file names. */
export interface TlsOptions {
  /** CA certificate(s) to trust instead of the system's. */
  ca?: string | Buffer;
  /** Client certificate, for servers that require one. */
  cert?: string | Buffer;
  /** The client certificate's private key. */
  key?: string | Buffer;
  /** Name to check the server's certificate against, when it differs from the address's host. */
  serverName?: string;
}

/** Opt-in retries of calls that failed with UNAVAILABLE, or that the server marked `sepp-retry: later`. */
export interface RetryOptions {
  /**
   * Retry UNAVAILABLE where repeating is safe, any other answer the server marked `sepp-retry:
   * later` (a limit reached for now: RESOURCE_EXHAUSTED; an enqueue refused `queue_full`, which
   * stored nothing — a job, a batch's refused jobs, an atomic batch, a flow — repeated until the
   * queue has room or the call's deadline nears), and INTERNAL
   * when the server closed the connection under the call (a GOAWAY with an error code); never an
   * answer marked `never`, nor one marked `operator` outside UNAVAILABLE. Enqueues are repeated only when every job
   * has an idempotency key: with this on, a job enqueued without one gets one from the SDK
   * (`sepp-retry:<uuid>`, remembered by the server for the queue's dedup window like any
   * key), so a retry after the server stored the job returns that job (`deduplicated: true`)
   * instead of a second. A call that can start a bulk operation carries a request key
   * (`requestKey`, random per call), so its retry answers with the operation the first started.
   */
  unavailable: boolean;
  /** Tries in all, including the first. Default 3. */
  maxAttempts?: number;
  /** First retry delay, in ms; doubles each time, with jitter. Default 100. */
  baseDelayMs?: number;
  /** Longest retry delay, in ms. Default 2000. */
  maxDelayMs?: number;
}

/** How `SeppClient.connect` talks to the server. */
export interface ConnectOptions {
  /**
   * API key, sent as `authorization: Bearer <key>` on every call. Default: the
   * environment variable `SEPP_API_KEY`, when set (what `sepp admin new-api-key`
   * tells you to give the client); none otherwise. `null`: no key, and the
   * environment is not read (a program that passes on its own settings, as the
   * `sepp` command line does).
   */
  apiKey?: string | null;
  /** TLS: `true` for the system's CAs, or explicit certificates. Default: plaintext. */
  tls?: true | TlsOptions;
  /** Deadline of every call that does not give its own, in ms. Default 10,000. */
  defaultDeadlineMs?: number;
  /** Retries of UNAVAILABLE (off unless set). */
  retry?: RetryOptions;
  /**
   * `stream` (default): enqueues, flows and Workers use the Produce and Work
   * streams, the fast path. `unary`: plain unary calls (EnqueueBatch, EnqueueFlow, Reserve, Ack…),
   * for proxies or environments that cannot hold bidirectional streams. The
   * results are the same.
   */
  transport?: 'stream' | 'unary';
  /** Most jobs per Produce message or EnqueueBatch call, and settlements per Work batch; the server's `max_batch_jobs` (default 1000). */
  maxBatchJobs?: number;
  /** Largest Produce message to build, in bytes (default 4 MiB, the server's smallest default). */
  maxMessageBytes?: number;
  /**
   * When coalesced enqueues are sent: `nextTick` (default) sends everything
   * enqueued in the current turn of the event loop right after it; `setImmediate`
   * also waits for the rest of the loop's I/O callbacks (bigger batches under
   * load from many sources, a little more latency).
   */
  flushOn?: 'nextTick' | 'setImmediate';
  /** An idle Produce stream is closed after this long, in ms, so it does not keep the process alive. Default 1000. */
  streamIdleMs?: number;
  /** Names the application in the gRPC user agent (e.g. `billing/2.1`), ahead of grpc-js's own. */
  userAgent?: string;
  /**
   * While calls are open (a Worker's Work stream or long poll, any unary call), the client sends an
   * HTTP/2 ping this many ms after the last one was answered; none while no call is open. Default 30,000. A
   * connection gone silent (the server's machine lost, a NAT or load balancer that dropped the flow
   * without a reset) then fails its calls with UNAVAILABLE within about `keepaliveMs` +
   * `keepaliveTimeoutMs`, and a Worker reconnects as after any outage. A positive integer.
   */
  keepaliveMs?: number;
  /** How long, in ms, a keepalive ping may go unanswered before the connection counts as lost. Default 20,000. A positive integer. */
  keepaliveTimeoutMs?: number;
}

export interface ResolvedOptions {
  defaultDeadlineMs: number;
  retry: Required<RetryOptions>;
  transport: 'stream' | 'unary';
  maxBatchJobs: number;
  maxMessageBytes: number;
  flushOn: 'nextTick' | 'setImmediate';
  streamIdleMs: number;
  keepaliveMs: number;
  keepaliveTimeoutMs: number;
}

/** What an invoke needs besides the request. */
export interface InvokeOptions {
  deadlineMs?: number | undefined;
  signal?: AbortSignal | undefined;
  /** The call may be repeated after UNAVAILABLE (it has no effect twice). */
  retrySafe: boolean;
  /** An ack, nack or extend: NOT_FOUND and FAILED_PRECONDITION become LeaseLostError. */
  leaseCall?: boolean;
  /** Told before the call is sent again after a failure (its first send may have been applied). */
  onRepeat?: () => void;
}

/** A call that changes nothing, or whose repeat has no further effect: safe to retry after UNAVAILABLE. */
export function retrySafe(options: {
  deadlineMs?: number | undefined;
  signal?: AbortSignal | undefined;
}): InvokeOptions {
  return { deadlineMs: options.deadlineMs, signal: options.signal, retrySafe: true };
}

type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<GrpcCallOptions>,
  callback: (error: ServiceError | null, response: Res) => void,
) => ClientUnaryCall;

function channelCredentials(tls: ConnectOptions['tls']): ChannelCredentials {
  if (tls === undefined) return credentials.createInsecure();
  if (tls === true) return credentials.createSsl();
  const pem = (value: string | Buffer | undefined) =>
    value === undefined ? null : Buffer.isBuffer(value) ? value : Buffer.from(value);
  return credentials.createSsl(pem(tls.ca), pem(tls.key), pem(tls.cert));
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) throw new TypeError(`${name} must be a positive number`);
  return value;
}

function defaultDeadlineMs(value: number | undefined): number {
  const ms = positive(value, 10_000, 'defaultDeadlineMs');
  if (ms > deadlineMsMax) throw new TypeError(`defaultDeadlineMs must be at most ${deadlineMsMax} (a year)`);
  return ms;
}

/** The longest delay Node's timers take (2^31 - 1 ms, about 24.8 days): a longer one fires after 1 ms. */
const timerMsMax = 2_147_483_647;

function timerMs(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value <= 0 || value > timerMsMax) {
    throw new TypeError(`${name} must be a positive integer number of ms, at most ${timerMsMax}`);
  }
  return value;
}

/** The RPC's name ("ListWorkers") of each method of the generated client, for messages. */
const rpcNames: ReadonlyMap<unknown, string> = new Map(
  Object.entries(QueueServiceService).map(([key, definition]) => [
    (QueueServiceClient.prototype as unknown as Record<string, unknown>)[key],
    definition.path.slice(definition.path.lastIndexOf('/') + 1),
  ]),
);

/** How long the first batch waits for the server's bounds at most (learnServerBounds). */
const serverBoundsDeadlineMs = 5000;
/** When a server could not say its bounds, how long until they are asked again. */
const serverBoundsAgainMs = 30_000;

export class Connection {
  readonly rpc: QueueServiceClient;
  readonly options: ResolvedOptions;
  readonly address: string;
  /** The address and how it is reached (running-members.ts): a member's lease token goes only to its target. */
  readonly target: string;
  private readonly baseMetadata: Metadata;
  private closedFlag = false;
  /** The server's bounds (learnServerBounds): asked and known, being asked, or when to ask again. */
  private boundsKnown = false;
  private boundsAsking: Promise<void> | undefined;
  private boundsAgainAtMs = 0;
  /** `maxBatchJobs` and `maxMessageBytes` as the options gave them (the server's may only lower them). */
  private readonly givenBounds: { maxBatchJobs: number; maxMessageBytes: number };
  /**
   * The server's `limits.max_reserve_jobs` (the most jobs a Reserve asks for, and the most
   * unused credit a Work stream holds), as GetServerInfo last said it; 0 until then (or from a
   * server older than the field). `prefetch: 'auto'` holds jobs only within it.
   */
  serverMaxReserveJobs = 0;
  /**
   * GetServerInfoResponse.features as the server last said them (protocol features older
   * servers lack: `nack_give_back`, `work_stop_delivery`); undefined until it answered, empty
   * from a server older than the field or without the call.
   */
  serverFeatures: ReadonlySet<string> | undefined;

  constructor(address: string, options: ConnectOptions) {
    this.address = address;
    this.target = targetOf(address, options.tls);
    this.options = {
      defaultDeadlineMs: defaultDeadlineMs(options.defaultDeadlineMs),
      retry: {
        unavailable: options.retry?.unavailable ?? false,
        maxAttempts: positive(options.retry?.maxAttempts, 3, 'retry.maxAttempts'),
        baseDelayMs: positive(options.retry?.baseDelayMs, 100, 'retry.baseDelayMs'),
        maxDelayMs: positive(options.retry?.maxDelayMs, 2000, 'retry.maxDelayMs'),
      },
      transport: options.transport ?? 'stream',
      maxBatchJobs: positive(options.maxBatchJobs, 1000, 'maxBatchJobs'),
      maxMessageBytes: positive(options.maxMessageBytes, 4 * 1024 * 1024, 'maxMessageBytes'),
      flushOn: options.flushOn ?? 'nextTick',
      streamIdleMs: positive(options.streamIdleMs, 1000, 'streamIdleMs'),
      keepaliveMs: timerMs(options.keepaliveMs, 30_000, 'keepaliveMs'),
      keepaliveTimeoutMs: timerMs(options.keepaliveTimeoutMs, 20_000, 'keepaliveTimeoutMs'),
    };
    this.givenBounds = {
      maxBatchJobs: this.options.maxBatchJobs,
      maxMessageBytes: this.options.maxMessageBytes,
    };
    const tls = options.tls;
    this.rpc = new QueueServiceClient(address, channelCredentials(tls), {
      // Jobs may be as large as a queue allows (up to 64 MiB); the server enforces its own limit.
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
      // How soon the channel notices a server that is back: grpc-js backs off its connection
      // attempts from 1 s to 120 s by default (and re-resolves a name at most every 30 s), so a
      // Worker whose server was down for a while kept failing, whatever its own `reconnect`
      // backoff, until the channel's next attempt: 6-22 s after a server killed for 45 s was
      // back. The Python SDK's channel has the same bounds.
      'grpc.dns_min_time_between_resolutions_ms': 1000,
      'grpc.initial_reconnect_backoff_ms': 200,
      'grpc.max_reconnect_backoff_ms': 5000,
      // Pings while calls are open, so a silent connection fails its calls instead of holding them
      // forever (the server accepts pings at any interval: docs/configuration.md).
      'grpc.keepalive_time_ms': this.options.keepaliveMs,
      'grpc.keepalive_timeout_ms': this.options.keepaliveTimeoutMs,
      'grpc.keepalive_permit_without_calls': 0,
      ...(options.userAgent === undefined ? {} : { 'grpc.primary_user_agent': options.userAgent }),
      ...(typeof tls === 'object' && tls.serverName !== undefined
        ? { 'grpc.ssl_target_name_override': tls.serverName, 'grpc.default_authority': tls.serverName }
        : {}),
    });
    this.baseMetadata = new Metadata();
    const apiKey = options.apiKey === undefined ? process.env.SEPP_API_KEY || undefined : options.apiKey;
    if (apiKey) this.baseMetadata.set('authorization', `Bearer ${apiKey}`);
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /**
   * Lowers `options.maxBatchJobs` and `options.maxMessageBytes` to the server's own bounds
   * (GetServerInfo's `limits.max_batch_jobs` and `max_message_bytes`), so the batches this
   * client builds are ones the server takes. Asked once per client, and again only when the
   * server refuses a batch as over a bound (relearnServerBounds); a server that cannot answer
   * (older, a stand-in, down) leaves the options as they are, and is asked again 30 s later.
   * Returns the ask in flight to wait for (it never rejects), or undefined when there is nothing
   * to wait for.
   */
  learnServerBounds(): Promise<void> | undefined {
    if (this.boundsKnown || this.boundsAsking !== undefined) return this.boundsAsking;
    if (Date.now() < this.boundsAgainAtMs || this.closedFlag) return undefined;
    return this.askServerBounds();
  }

  /**
   * Asks the server's bounds again (or joins the ask in flight), after the server refused a
   * batch as over a bound: a reload may have lowered `limits.max_batch_jobs`, a restart
   * `grpc.max_message_bytes`. Resolves true when either bound is now lower than before; never
   * rejects (a server that cannot answer leaves the options as they are: false).
   */
  async relearnServerBounds(): Promise<boolean> {
    const { maxBatchJobs, maxMessageBytes } = this.options;
    if (this.closedFlag) return false;
    await (this.boundsAsking ?? this.askServerBounds());
    return this.options.maxBatchJobs < maxBatchJobs || this.options.maxMessageBytes < maxMessageBytes;
  }

  private askServerBounds(): Promise<void> {
    const deadlineMs = Math.min(this.options.defaultDeadlineMs, serverBoundsDeadlineMs);
    this.boundsAsking = this.invoke(this.rpc.getServerInfo, {}, { deadlineMs, retrySafe: false }).then(
      (info) => {
        this.boundsKnown = true;
        this.boundsAsking = undefined;
        this.serverFeatures = new Set(info.features);
        const limits = info.limits;
        if (limits === undefined) return;
        // 0: a server older than the field. The bound is the lower of the option given and the
        // server's, so a reload that raises the server's brings the option back up to the given one.
        if (limits.maxBatchJobs > 0)
          this.options.maxBatchJobs = Math.min(this.givenBounds.maxBatchJobs, limits.maxBatchJobs);
        if (limits.maxMessageBytes > 0)
          this.options.maxMessageBytes = Math.min(this.givenBounds.maxMessageBytes, limits.maxMessageBytes);
        this.serverMaxReserveJobs = limits.maxReserveJobs;
      },
      (error: unknown) => {
        this.boundsAsking = undefined;
        // A server without the call (UNIMPLEMENTED) never has it: the options stay.
        if (error instanceof SeppError && error.grpcCode === status.UNIMPLEMENTED) {
          this.boundsKnown = true;
          this.serverFeatures = new Set();
        } else this.boundsAgainAtMs = Date.now() + serverBoundsAgainMs;
      },
    );
    return this.boundsAsking;
  }

  /** Fresh metadata for one call (grpc-js may add to what it is given). */
  metadata(): Metadata {
    return this.baseMetadata.clone();
  }

  /** An absolute deadline for a call of `deadlineMs` (or the default); INVALID_ARGUMENT for one that is not a number of ms up to a year. */
  deadline(deadlineMs: number | undefined, name = 'deadlineMs'): number {
    return Date.now() + deadlineArgument(deadlineMs ?? this.options.defaultDeadlineMs, name);
  }

  /**
   * One unary call with deadline, cancellation and (when enabled and safe) retries of UNAVAILABLE, of
   * any answer the server marked `sepp-retry: later` (retriedByClient), and of a connection the server
   * closed (connectionClosedByServer).
   */
  async invoke<Req, Res>(method: UnaryMethod<Req, Res>, request: Req, options: InvokeOptions): Promise<Res> {
    if (this.closedFlag) throw new SeppError(status.CANCELLED, 'the sepp client is closed');
    const deadlineAtMs = this.deadline(options.deadlineMs);
    const { retry } = this.options;
    const attempts = retry.unavailable && options.retrySafe ? retry.maxAttempts : 1;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once(method, request, deadlineAtMs, options.signal);
      } catch (thrown) {
        const seppError = toSeppError(thrown, options.leaseCall);
        const error =
          (seppError.grpcCode === status.INTERNAL &&
            serializationFailure(rpcNames.get(method) ?? 'the call', seppError.message)) ||
          seppError;
        const again = retriedByClient(error) || connectionClosedByServer(error);
        if (!again || attempt >= attempts || this.closedFlag) throw error;
        const delayMs = backoffDelayMs(attempt - 1, retry.baseDelayMs, retry.maxDelayMs);
        if (Date.now() + delayMs >= deadlineAtMs || options.signal?.aborted) throw error;
        await sleep(delayMs, options.signal);
        options.onRepeat?.();
      }
    }
  }

  private once<Req, Res>(
    method: UnaryMethod<Req, Res>,
    request: Req,
    deadlineAtMs: number,
    signal: AbortSignal | undefined,
  ): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      if (signal?.aborted) {
        reject(new SeppError(status.CANCELLED, 'the call was cancelled'));
        return;
      }
      // cancelCall: a call aborted in the tick it started still gets its stream reset (cancel-call.ts).
      const onAbort = () => cancelCall(call);
      const call = method.call(
        this.rpc,
        request,
        this.metadata(),
        { deadline: deadlineAtMs },
        (error: ServiceError | null, response: Res) => {
          signal?.removeEventListener('abort', onAbort);
          if (error) reject(error);
          else resolve(response);
        },
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  close(): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    this.rpc.close();
  }
}
