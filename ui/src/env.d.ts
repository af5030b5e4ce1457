/** Stylesheets are imported for their side effect: esbuild bundles them into the CSS file. */
declare module '*.css';

/**
 * The engine's types (src/engine/types.ts, read through src/admin/api-types.ts)
 * name Node's Buffer for payloads, which the API never sends as such: for the
 * browser's type check a Buffer is a byte array.
 */
type Buffer = Uint8Array;
