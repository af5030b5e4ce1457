/** Flow control: the limits a lease obeys, turns across groups, rate-limit buckets (docs/flow-control.md). */
export {
  FlowControl,
  type FlowLease,
  type FlowStats,
  queueOrder,
  readyGroupsCountLimit,
  type ThrottledWaiters,
} from './flow-control.ts';
export { maxProbesPerLease } from './group-turns.ts';
export { type BucketState, capacityOf, fullBucket, nextTokenAtMs, refill } from './token-bucket.ts';
