/**
 * The store conformance suite against the PostgreSQL store (a schema per case, emptied for the next one; one throwaway cluster),
 * and on the same cluster the generic plans of its reads by state and type (./browse-plans.ts).
 */
import { postgresBackend, useConformanceCluster } from './backend.ts';
import { testBrowsePlans } from './browse-plans.ts';
import { exerciseStore } from './suite.ts';

const postgres = useConformanceCluster('conformance');

exerciseStore(postgresBackend(() => postgres));
testBrowsePlans(postgres);
