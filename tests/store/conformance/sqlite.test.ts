/** The store conformance suite against the SQLite store (a temporary data directory per case). */
import { sqliteBackend } from './backend.ts';
import { exerciseStore } from './suite.ts';

exerciseStore(sqliteBackend);
