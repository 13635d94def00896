import { defineConfig } from 'vite';
import preact from '@preact/preset-vite';

/**
 * The Console's build (docs/console.md): `npm ci` runs it through the `prepare` script, into
 * console/dist, which Coffer serves at /console. `base: './'` keeps every URL relative, so the
 * same files work behind a path prefix. `npx vite --config console/vite.config.ts` serves it
 * for development, proxying the API to the Coffer at COFFER_URL (default http://localhost:8080).
 */
const target = process.env.COFFER_URL ?? 'http://localhost:8080';
// Every API path the console calls, for the development server (same origin, so cookies work).
const API = ['/me', '/signin', '/signout', '/applications', '/permissions', '/tokens', '/v2', '/reactors', '/proxies', '/proxy', '/webhooks', '/logs', '/tenants', '/orchestration', '/3ds', '/token-intents'];

export default defineConfig({
  root: import.meta.dirname,
  base: './',
  plugins: [preact()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    // No inline script or style anywhere: the CSP allows only files from Coffer itself.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 1000,
  },
  server: {
    proxy: Object.fromEntries(API.map((p) => [p, { target, changeOrigin: false }])),
  },
});
