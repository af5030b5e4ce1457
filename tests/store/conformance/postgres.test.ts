/** The store conformance suite against the PostgreSQL store (a schema per case, emptied for the next one; one throwaway cluster). */
import { after, before } from 'node:test';
import type { PostgresCluster } from '../../helpers/postgres.ts';
import { postgresBackend, startConformanceCluster } from './backend.ts';
import { exerciseStore } from './suite.ts';

let cluster: PostgresCluster | undefined;
let database = '';

before(async () => {
  cluster = await startConformanceCluster();
  database = await cluster.createDatabase('conformance');
});

after(async () => {
  await cluster?.close();
});

exerciseStore(
  postgresBackend(() => {
    if (cluster === undefined) throw new Error('the PostgreSQL cluster did not start');
    return { cluster, database };
  }),
);
