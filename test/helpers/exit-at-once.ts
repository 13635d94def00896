/**
 * Loaded into every test process (test/run.ts): once the process is exiting, it exits at once,
 * as `coffer` does (src/cli.ts), instead of tearing V8 down. In that teardown V8's last
 * collection can finalize isolated-vm handles after Node's environment is gone, which aborts the
 * process with an isolated-vm assertion after every test passed. The hook runs after every other
 * `exit` listener (it moves itself last whenever the event loop empties), so what they report
 * is reported, and the exit code is theirs.
 */
function exitNow(code: number): void {
  process.exit(code);
}

process.on('beforeExit', () => {
  process.removeListener('exit', exitNow);
  process.on('exit', exitNow);
});
