/**
 * The SDK's public request and result shapes, by capability: jobs (producing,
 * leasing, settling) in job-types.ts, queues and the server in queue-types.ts,
 * job control and the audit log in control-types.ts. They mirror the protocol
 * (proto/sepp/v1) with friendlier types: times as `Date` (or epoch milliseconds
 * going in), names of states and reasons as strings, optional fields instead of
 * proto3 zero values.
 */
export type * from './control-types.ts';
export type * from './job-types.ts';
export type * from './queue-types.ts';
