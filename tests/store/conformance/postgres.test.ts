/** The store conformance suite against the PostgreSQL store (a schema per case, emptied for the next one; one throwaway cluster). */
import { postgresBackend, useConformanceCluster } from './backend.ts';
import { exerciseStore } from './suite.ts';

const postgres = useConformanceCluster('conformance');

exerciseStore(postgresBackend(() => postgres));
