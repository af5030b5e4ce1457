/** What every gRPC handler shares: the engine, the authenticator, server facts, the observer and the drain flag. */
import type { Engine } from '../engine/engine.ts';
import type { Authenticator } from './auth.ts';
import type { RpcObserver } from './observer.ts';

export interface ServerFacts {
  version: string;
  gitCommit: string;
  durability: 'full' | 'relaxed';
  startedAtMs: number;
  maxMessageBytes: number;
  /** Wall clock for server_time_ms (the engine's clock). */
  nowMs: () => number;
}

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
  constructor(readonly message: string) {}
}
