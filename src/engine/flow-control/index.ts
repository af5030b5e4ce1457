/** Flow control: the limits a lease obeys, turns across groups, rate-limit buckets (docs/flow-control.md). */
export { FlowControl, queueOrder } from './flow-control.ts';
