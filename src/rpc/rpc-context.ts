/** What every gRPC handler shares: the engine, the authenticator, server facts, the observer and the drain flag. */

import type { Metadata } from '@grpc/grpc-js';
import type { QueueScope, SettingChange } from '../config/index.ts';
import type { Engine } from '../engine/engine.ts';
import { SeppError } from '../engine/errors.ts';
import type { KeyRefusalLines } from '../platform/key-refusal-lines.ts';
import type { Authenticator, Caller, Permission } from './auth.ts';
import type { RpcObserver } from './observer.ts';
import type { RefusedAnswers } from './refused-answers.ts';
import type { StreamAnswers } from './unsent-answers.ts';

export interface ServerFacts {
  version: string;
  gitCommit: string;
  durability: 'full' | 'relaxed';
  startedAtMs: number;
  maxMessageBytes: number;
  /** The [grpc] limits: connections and calls per connection, how long a connection may take or idle, what one key may hold. */
  grpcLimits: {
    maxConnections: number;
    maxStreamsPerConnection: number;
    handshakeTimeoutMs: number;
    idleTimeoutMs: number;
    /** The server's pings on every connection, and how long one may go unanswered (server.ts). */
    keepaliveMs: number;
    keepaliveTimeoutMs: number;
    firstMessageTimeoutMs: number;
    /** Read per Events call: a reload may change it (the others are built into the server at start). */
    readonly maxEventSubscribersPerKey: number;
    maxBytesInFlightPerConnection: number;
    maxBytesInFlightPerKey: number;
  };
  /** Wall clock for server_time_ms (the engine's clock). */
  nowMs: () => number;
  /** Which process this is (complete once every port is bound; read per call). */
  identity: () => ServerIdentity;
}

/** The server process, as GetServerInfo and the dashboard name it; no secret. */
export interface ServerIdentity {
  readonly hostName: string;
  /** Random, made at start. */
  readonly instanceId: string;
  readonly pid: number;
  /** host:port as bound; http null when the HTTP API is off. */
  readonly grpcAddress: string;
  readonly adminAddress: string;
  readonly httpAddress: string | null;
}

/** Where the rpc layer writes log lines: the server's logger (rpc does not import telemetry). */
export interface RpcLog {
  debug(event: string, fields?: RpcLogFields): void;
  info(event: string, fields?: RpcLogFields): void;
  warn(event: string, fields?: RpcLogFields): void;
  error(event: string, fields?: RpcLogFields): void;
}
export type RpcLogFields = Readonly<Record<string, string | number | boolean | null | undefined>>;

export interface RpcContext {
  readonly engine: Engine;
  readonly auth: Authenticator;
  readonly facts: ServerFacts;
  /** Telemetry's view of each call; undefined when nobody observes. */
  readonly observer: RpcObserver | undefined;
  /** True once shutdown began: new calls get UNAVAILABLE. */
  draining: boolean;
  /** Unary answers refused after their handler ran (refused-answers.ts): the code they ended with, what to undo. */
  readonly refusedAnswers: RefusedAnswers;
  /** The log's lines naming the keys whose answers were refused or given back (`rpc.answers_refused`). */
  readonly answerRefusals: KeyRefusalLines;
  /** Follows the jobs a Work stream of `caller` on the connection of `peer` writes (unsent-answers.ts). */
  readonly streamAnswers: (peer: string, caller: string) => StreamAnswers;
  /** Open Work, Produce and Events streams and waiting Reserve calls, so shutdown can end them and a change of API keys can check them again. */
  readonly streams: Set<OpenStream>;
  /** Rereads the config file (ReloadConfig); undefined when the server cannot. */
  readonly reloadConfig:
    | ((request: {
        dryRun: boolean;
        actor: string;
        via?: string;
        allowSecurityDowngrade: boolean;
      }) => Promise<ReloadReport>)
    | undefined;
}

/** A Work or Produce stream while it is open. */
export interface OpenStream {
  endForShutdown(): void;
  /**
   * What the stream was let in with; checked again when the API keys change: a
   * revoked key ends it, and so does a change of the key's queues (server.ts).
   */
  readonly access: {
    readonly metadata: Metadata;
    readonly permission: Permission;
    readonly rpc: string;
    readonly scope: QueueScope | null;
  };
  /** Ends the stream with this error's status, after what is already answered. */
  endWith(error: SeppError): void;
}

/** What a reload did or, on a dry run, would do (app.ts makes it; config/reload-plan.ts decides it). */
export interface ReloadReport {
  applied: boolean;
  changed: string[];
  restartRequired: string[];
  /** `changed` and then `restartRequired`, each with its values (or a summary instead). */
  changes: readonly SettingChange[];
  problems: { key: string; message: string }[];
  configFile: string | null;
  /**
   * What the file lowers security by (config/reload-safety.ts: names, roles, queues, never a
   * secret), on an applied or dry-run reload the request allowed it for, and on a refusal for it.
   */
  securityDowngrades: string[];
}

/** A request whose bytes did not decode: handlers answer INVALID_ARGUMENT instead of grpc-js's INTERNAL. */
export class MalformedRequest {
  constructor(
    readonly message: string,
    /** What did decode, when only a field's content was refused (invalid UTF-8). */
    readonly decoded?: unknown,
  ) {}
}

/** Lets a call in: refuses it while shutting down, else identifies the caller and checks the permission. */
export function admit(ctx: RpcContext, metadata: Metadata, permission: Permission, rpc: string): Caller {
  if (ctx.draining)
    throw new SeppError('unavailable', 'sepp is shutting down; retry against the restarted server');
  return ctx.auth.authorize(metadata, permission, rpc);
}
