/**
 * The shape of the wrapper every unary handler goes through (made in
 * unary-handlers.ts: drain check, authorization, malformed requests, the
 * answer and the call's observation), so handlers of one capability can live
 * in a file of their own (control-handlers.ts).
 */
import type { handleUnaryCall, ServerUnaryCall } from '@grpc/grpc-js';
import type { Caller, Permission } from './auth.ts';
import type { RpcCallObservation, TraceContext } from './observer.ts';

export type Unary = <Req, Res>(
  rpc: string,
  permission: Permission,
  fn: (
    request: Req,
    call: ServerUnaryCall<Req, Res>,
    caller: Caller,
    observation: RpcCallObservation,
  ) => Promise<Res> | Res,
  parentOf?: (request: Req) => TraceContext | undefined,
) => handleUnaryCall<Req, Res>;
