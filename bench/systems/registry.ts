import { beanstalkdDriver } from './beanstalkd.ts';
import { bullmqDriver } from './bullmq.ts';
import { natsDriver } from './nats.ts';
import type { DriverFactory } from './types.ts';

/**
 * Every system the harness can run, by CLI name, in the default run order. BullMQ comes
 * first because the ratios of the report are against it. sepp is to be added here as three
 * entries of one driver module, as issue 8 asks: `sepp` (the SDK's default, streaming
 * path), `sepp-unary` (what a hand-written gRPC client gets) and `sepp-relaxed`.
 */
export const systems: ReadonlyMap<string, DriverFactory> = new Map<string, DriverFactory>([
  ['bullmq', bullmqDriver],
  ['beanstalkd', beanstalkdDriver],
  ['nats210', (settings) => natsDriver('2.10', settings)],
  ['nats29', (settings) => natsDriver('2.9', settings)],
]);

/** The system the report's ratios are computed against. */
export const baselineSystem = 'bullmq';
