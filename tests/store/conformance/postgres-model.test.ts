/** The model-based case of the store conformance suite against the PostgreSQL store (the system tier: a long loop). */
import { after, before } from 'node:test';
import type { PostgresCluster } from '../../helpers/postgres.ts';
import { postgresBackend, startConformanceCluster } from './backend.ts';
import { exerciseStoreModel } from './suite.ts';

let cluster: PostgresCluster | undefined;
let database = '';

before(async () => {
  cluster = await startConformanceCluster();
  database = await cluster.createDatabase('model');
});

after(async () => {
  await cluster?.close();
});

exerciseStoreModel(
  postgresBackend(() => {
    if (cluster === undefined) throw new Error('the PostgreSQL cluster did not start');
    return { cluster, database };
  }),
);
