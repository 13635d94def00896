#!/usr/bin/env -S node --max-semi-space-size=8 --heap-growing-percent=50 --no-allocation-site-pretenuring
// The flags bound V8's heap and keep it from pretenuring request objects (docs/operations.md,
// "Memory"); npm start passes the same.
// Coffer runs its TypeScript sources directly, which needs Node.js 24 (type stripping).
// libuv's thread pool (4 threads by default) serves DNS lookups as well as crypto and file
// work; outbound calls to names tenants choose can hold lookups for long (src/outbound/connect.ts
// allows 8 at once). Read when the pool first starts, which is after this line.
process.env.UV_THREADPOOL_SIZE ??= '16';
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(`coffer needs Node.js 24 or newer (this is ${process.version}). Run it through npm scripts or npx, which use the pinned Node.\n`);
  process.exit(1);
}
// Node caches each module's compiled form, TypeScript with its types stripped, so later starts
// skip both steps (and the TypeScript stripper is never loaded). NODE_COMPILE_CACHE moves the
// cache, NODE_DISABLE_COMPILE_CACHE=1 turns it off; without either it lives in the OS temp dir.
const { enableCompileCache } = await import('node:module');
enableCompileCache?.();
await import('../src/cli.ts');
