/** Flow control: the limits a lease obeys, turns across groups, rate-limit buckets (docs/flow-control.md). */
export { FlowControl, hasFlowLimit } from './flow-control.ts';
export { leaseUngrouped } from './ungrouped-lease.ts';
