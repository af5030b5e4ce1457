import { beanstalkdDriver } from './beanstalkd.ts';
import { bullmqDriver } from './bullmq.ts';
import { graphileDriver } from './graphile-worker.ts';
import { natsDriver } from './nats.ts';
import { pgbossDriver } from './pgboss.ts';
import { seppDriver } from './sepp.ts';
import type { DriverFactory } from './types.ts';

/**
 * Every system the harness can run, by CLI name, in the default run order. BullMQ comes
 * first because the ratios of the report are against it. sepp is six entries of one
 * driver module (issue 8): `sepp` (the SDK's default, streaming path), `sepp-unary` (the
 * SDK over unary calls only), `sepp-relaxed` (the default path, durability relaxed) and
 * `sepp-pg` (the default path on the PostgreSQL store, issue 37), and `sepp-base` and
 * `sepp-pg-base`, `sepp` and `sepp-pg` on another tree's bundle (SEPP_BENCH_BASE_BUNDLE: a
 * change against its base in one run).
 * pg-boss and graphile-worker each run on a fresh PostgreSQL 15 with the same settings
 * (issue 37: the baselines of sepp's PostgreSQL store).
 */
export const systems: ReadonlyMap<string, DriverFactory> = new Map<string, DriverFactory>([
  ['bullmq', bullmqDriver],
  ['sepp', (settings) => seppDriver('sepp', settings)],
  ['sepp-base', (settings) => seppDriver('sepp-base', settings)],
  ['sepp-unary', (settings) => seppDriver('sepp-unary', settings)],
  ['sepp-relaxed', (settings) => seppDriver('sepp-relaxed', settings)],
  ['sepp-pg', (settings) => seppDriver('sepp-pg', settings)],
  ['sepp-pg-base', (settings) => seppDriver('sepp-pg-base', settings)],
  ['beanstalkd', beanstalkdDriver],
  ['nats210', (settings) => natsDriver('2.10', settings)],
  ['nats29', (settings) => natsDriver('2.9', settings)],
  ['pgboss', pgbossDriver],
  ['graphile', graphileDriver],
]);

/** The system the report's ratios are computed against. */
export const baselineSystem = 'bullmq';
