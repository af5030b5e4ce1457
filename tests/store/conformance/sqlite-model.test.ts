/** The model-based case of the store conformance suite against the SQLite store (the system tier: a long loop). */
import { sqliteBackend } from './backend.ts';
import { exerciseStoreModel } from './suite.ts';

exerciseStoreModel(sqliteBackend);
