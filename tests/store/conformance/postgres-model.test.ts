/** The model-based case of the store conformance suite against the PostgreSQL store (the system tier: a long loop). */
import { postgresBackend, useConformanceCluster } from './backend.ts';
import { exerciseStoreModel } from './suite.ts';

const postgres = useConformanceCluster('model');

exerciseStoreModel(postgresBackend(() => postgres));
