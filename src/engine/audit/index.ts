/** The audit log: who changed what, written in the same unit as the change. */
export { AuditLog, boundedJson } from './audit-log.ts';
