/** The audit log: who changed what, written in the same unit as the change. */
export { AuditLog } from './audit-log.ts';
