/** Job lifecycle events: the log the engine appends to after each commit, and its subscriptions. */
export { EventLog, type EventOwner, type EventSubscription, eventsTurnedOff } from './event-log.ts';
export {
  type EventFilter,
  type EventStart,
  eventAbout,
  type LifecycleEvent,
  type LifecycleEventKind,
} from './lifecycle-event.ts';
export { RemoteEnds } from './remote-ends.ts';
export type { EventSink } from './subscription.ts';
