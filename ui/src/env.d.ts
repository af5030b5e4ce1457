/** Stylesheets are imported for their side effect: esbuild bundles them into the CSS file. */
declare module '*.css';
