/** The admin layer's public face for the composition root. */
export type { PushStatusView, ServerIdentityFacts, StoreHealth } from './api-types.ts';
export { type AdminApp, createAdminApp } from './app.ts';
export type { Readiness } from './health-routes.ts';
export { mountMetrics } from './metrics-route.ts';
export { RateHistory } from './rate-history.ts';
export { type AdminServer, serveAdmin } from './serve.ts';
export { diskAssetSource } from './static-assets.ts';
export type { AssetSource, ServerInfo } from './types.ts';
