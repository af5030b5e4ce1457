/** What every gRPC handler shares: the engine, the authenticator, server facts, the observer and the drain flag. */
import type { Metadata } from '@grpc/grpc-js';
import type { Engine } from '../engine/engine.ts';
import { SeppError } from '../engine/errors.ts';
import type { Authenticator, Caller, Permission } from './auth.ts';
import type { RpcObserver } from './observer.ts';

export interface ServerFacts {
  version: string;
  gitCommit: string;
  durability: 'full' | 'relaxed';
  startedAtMs: number;
  maxMessageBytes: number;
  /** Connections and calls per connection, and how long a connection may take or idle. */
  connectionLimits: {
    maxConnections: number;
    maxStreamsPerConnection: number;
    handshakeTimeoutMs: number;
    idleTimeoutMs: number;
  };
  /** Wall clock for server_time_ms (the engine's clock). */
  nowMs: () => number;
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
  /** Open Work and Produce streams, so shutdown can end them. */
  readonly streams: Set<{ endForShutdown(): void }>;
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
