#!/usr/bin/env node
// Coffer runs its TypeScript sources directly, which needs Node.js 24 (type stripping).
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(`coffer needs Node.js 24 or newer (this is ${process.version}). Run it through npm scripts or npx, which use the pinned Node.\n`);
  process.exit(1);
}
await import('../src/cli.ts');
