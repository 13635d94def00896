import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';

// DESIGN.md: processors never import from features; a connector gets card data as arguments, never a store.
it('nothing in src/processors imports from src/features, a store or the database', () => {
  const root = path.resolve(import.meta.dirname, '../../src/processors');
  const files = fs.readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  assert.ok(files.length >= 10);
  for (const file of files) {
    const source = fs.readFileSync(path.join(root, file), 'utf8');
    for (const [, target] of source.matchAll(/from '([^']+)'/g)) {
      assert.doesNotMatch(target, /features\/|\/db\/|store\.ts$/, `${file} imports ${target}`);
    }
  }
});
