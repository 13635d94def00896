/**
 * A sandbox process runs with the API process's heap flags (src/sandbox/process/heap-flags.ts),
 * but its isolates' heaps stay as their memory limits make them.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, it } from 'node:test';
import { SANDBOX_EXEC_ARGV } from '../../src/sandbox/process/host.ts';

const heapFlags = pathToFileURL(path.join(import.meta.dirname, '../../src/sandbox/process/heap-flags.ts')).href;

/** The heap limit (bytes) of a 16 MB isolate made in a process started with `flags`, after isolateHeapDefaults() when `reset`. */
function isolateHeapLimit(flags: string[], reset: boolean): number {
  const script = `
    import ivm from 'isolated-vm';
    import { isolateHeapDefaults } from ${JSON.stringify(heapFlags)};
    if (${reset}) isolateHeapDefaults();
    process.stdout.write(String(new ivm.Isolate({ memoryLimit: 16 }).getHeapStatisticsSync().heap_size_limit));`;
  return Number(execFileSync(process.execPath, [...flags, '--input-type=module', '-e', script], { cwd: path.join(import.meta.dirname, '../..'), encoding: 'utf8' }));
}

describe('a sandbox process\'s heap flags', () => {
  it('leave its isolates\' heaps as their memory limits make them', () => {
    const plain = isolateHeapLimit([], false);
    assert.ok(plain > 16 * 2 ** 20 && plain < 24 * 2 ** 20, `a 16 MB isolate's heap limit: ${plain} bytes`);
    assert.equal(isolateHeapLimit(SANDBOX_EXEC_ARGV, true), plain);
    // What the reset is for: the flags alone would give the isolate a larger young generation.
    assert.ok(isolateHeapLimit(SANDBOX_EXEC_ARGV, false) > plain + 8 * 2 ** 20);
  });
});
