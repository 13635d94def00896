import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { DEFAULT_LIMITS, Sandbox, type SandboxFailure } from '../../src/sandbox/index.ts';
import { failed, runner, value } from './helpers.ts';

const sb = new Sandbox();
after(() => sb.dispose());
const run = runner(sb);

describe('the function contract', () => {
  it('calls an exported async function with req {args, configuration, bt} and returns its value', async () => {
    const r = await run(
      `module.exports = async function (req) {
        return { keys: Object.keys(req).sort(), args: req.args, configuration: req.configuration, bt: req.bt };
      };`,
      { req: { args: { card: { number: '4242' } }, configuration: { KEY: 'v' } } },
    );
    assert.deepEqual(value(r), { keys: ['args', 'bt', 'configuration'], args: { card: { number: '4242' } }, configuration: { KEY: 'v' }, bt: null });
    assert.equal(typeof r.durationMs, 'number');
    assert.deepEqual(r.console, []);
  });

  it('accepts a synchronous function, exports.default, and an undefined result', async () => {
    assert.deepEqual(value(await run('module.exports = (req) => ({ raw: { n: 1 } });')), { raw: { n: 1 } });
    assert.deepEqual(value(await run('exports.default = async () => 7;')), 7);
    assert.equal(value(await run('module.exports = async () => {};')), undefined);
  });

  it('passes other plain req fields through (proxies send their own)', async () => {
    const req = { args: { body: { a: 1 }, headers: { 'x-y': 'z' }, method: 'POST', path: '/p', query: 'q=1' }, configuration: {} };
    assert.deepEqual(value(await run('module.exports = async (req) => req.args;', { req })), req.args);
  });

  it('returns plain JSON data: no prototypes, functions dropped, Dates as strings', async () => {
    const r = value(await run('module.exports = async () => ({ d: new Date(0), f() {}, m: new Map([[1, 2]]), n: null });')) as Record<string, unknown>;
    assert.deepEqual(r, { d: '1970-01-01T00:00:00.000Z', m: {}, n: null });
    assert.equal(Object.getPrototypeOf(r), Object.prototype);
  });

  it('drops __proto__ keys from results instead of applying them', async () => {
    const r = value(await run(`module.exports = async () => JSON.parse('{"a":1,"__proto__":{"polluted":true}}');`)) as Record<string, unknown>;
    assert.deepEqual(r, { a: 1 });
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('captures console output in order, never on the host console', async () => {
    const r = await run(`module.exports = async () => {
      console.log('a', 1, { b: [2, 'c'] }, null, undefined);
      console.info('info'); console.debug('debug'); console.warn('careful'); console.error(new TypeError('bad'));
      return 1;
    };`);
    assert.deepEqual(r.console.slice(0, 4), ["a 1 { b: [ 2, 'c' ] } null undefined", 'info', 'debug', '[warn] careful']);
    assert.match(r.console[4], /^\[error\] TypeError: bad/);
  });

  it('console.assert, table, count, time and group work as in Node instead of throwing, and start over every call', async () => {
    const code = `module.exports = async () => {
      console.assert(true, 'not shown'); console.assert(false); console.assert(false, 'msg', 1); console.assert(0, { a: 1 });
      console.count(); console.count(); console.count('x'); console.countReset(); console.count();
      console.time('t'); console.timeLog('t', 'mid'); console.timeEnd('t'); console.timeEnd('t');
      console.group('G'); console.log('in'); console.groupCollapsed(); console.log('deeper'); console.groupEnd(); console.groupEnd(); console.groupEnd();
      console.table([{ a: 1 }]);
      return 1;
    };`;
    for (let i = 0; i < 2; i++) {
      const r = await run(code);
      assert.equal(value(r), 1);
      assert.deepEqual(
        r.console.map((l) => l.replace(/\d+ms/, 'Nms')),
        ['[error] Assertion failed', '[error] Assertion failed: msg 1', '[error] Assertion failed: { a: 1 }', 'default: 1', 'default: 2', 'x: 1', 'default: 1',
          't: Nms mid', 't: Nms', "[warn] No such label 't' for console.timeEnd()", 'G', '  in', '    deeper', '[ { a: 1 } ]'],
      );
    }
  });

  it('returns the console lines of failed runs too', async () => {
    const r = await run(`module.exports = async () => { console.log('before'); throw new Error('boom'); };`);
    failed(r, { status: 422, kind: 'user_error', detail: 'boom' });
    assert.deepEqual(r.console, ['before']);
  });

  it('offers CommonJS module, exports, __filename and a function-scoped this', async () => {
    const r = await run(`exports.x = 1; module.exports = async () => [typeof module, typeof exports, __filename, typeof require];`);
    assert.deepEqual(value(r), ['object', 'object', '/reactor.js', 'function']);
  });
});

describe('invalid code', () => {
  it('a syntax error → 400 invalid_code naming the line and column', async () => {
    const code = 'module.exports = async () => {\n  const x = ;\n};';
    failed(await run(code), { status: 400, kind: 'invalid_code', detail: /SyntaxError: .*\(line 2, column 13\)/ });
    const checked = sb.check(code);
    assert.equal(checked?.status, 400);
    assert.equal(checked?.kind, 'invalid_code');
    assert.match(checked!.detail, /line 2/);
  });

  it('an error on the first line reports its column within the user code', () => {
    assert.match(sb.check('const = 5;')!.detail, /\(line 1, column 7\)/);
  });

  it('an unclosed brace names the last line of the code', () => {
    assert.match(sb.check('module.exports = async () => {\n  return 1;')!.detail, /line 2\b/);
  });

  it('check() accepts valid code and runs none of it', async () => {
    assert.equal(sb.check('for (;;) {} module.exports = async () => 1;'), undefined);
    assert.equal(sb.check('return 5'), undefined); // CommonJS allows a top-level return
  });

  it('code that exports no function → 400 invalid_code', async () => {
    for (const code of ['module.exports = 5;', '', 'exports.handler = async () => 1;', 'module.exports = { default: 1 };']) {
      failed(await run(code), { status: 400, kind: 'invalid_code', detail: /must export a function/ });
    }
  });

  it('code over maxCodeChars → 400 invalid_code, at check and at run', async () => {
    const code = `module.exports = async () => 1; // ${'x'.repeat(DEFAULT_LIMITS.maxCodeChars)}`;
    assert.match(sb.check(code)!.detail, /50000/);
    failed(await run(code), { status: 400, kind: 'invalid_code', detail: /limit is 50000/ });
    failed(await run('module.exports = async () => 1; // 12345', { limits: { maxCodeChars: 20 } }), { status: 400, kind: 'invalid_code' });
  });

  it('an exception at the top level of the module is a user error', async () => {
    failed(await run(`throw new Error('at load');`), { status: 422, kind: 'user_error', detail: 'at load' });
  });
});

describe('errors thrown by user code', () => {
  const cases: [string, number, SandboxFailure['kind']][] = [
    ['BadRequestError', 400, 'user_error'],
    ['AuthenticationError', 401, 'user_error'],
    ['AuthorizationError', 403, 'user_error'],
    ['NotFoundError', 404, 'user_error'],
    ['UnprocessableEntityError', 422, 'user_error'],
    ['RateLimitError', 429, 'user_error'],
    ['ReactorRuntimeError', 422, 'user_error'],
  ];
  for (const [name, status, kind] of cases) {
    it(`${name} → ${status}, with its message and data`, async () => {
      const r = await run(`const { ${name} } = require('@coffer/errors');
        module.exports = async () => { throw new ${name}('went wrong', { field: ['is bad'] }); };`);
      failed(r, { status, kind, detail: 'went wrong', data: { field: ['is bad'] } });
    });
  }

  it('the classes have names, statuses, defaults, details, and extend Error; coffer/errors is an alias', async () => {
    const r = await run(`const e = require('@coffer/errors');
      module.exports = async () => {
        const err = new e.NotFoundError();
        const withData = new e.BadRequestError('m', { a: 1 });
        return [require('coffer/errors') === e, err instanceof Error, err instanceof e.ApiError, err.name, err.status, err.message,
                withData.data, withData.details, Object.isFrozen(e)];
      };`);
    assert.deepEqual(value(r), [true, true, true, 'NotFoundError', 404, 'Not Found', { a: 1 }, { a: 1 }, true]);
  });

  it('a subclass of an error class keeps its status', async () => {
    const r = await run(`const { NotFoundError } = require('@coffer/errors');
      class CardMissing extends NotFoundError {}
      module.exports = async () => { throw new CardMissing('no card'); };`);
    failed(r, { status: 404, kind: 'user_error', detail: 'no card' });
  });

  it('a plain Error → 422 user_error with its message; other types are named', async () => {
    failed(await run(`module.exports = async () => { throw new Error('plain'); };`), { status: 422, kind: 'user_error', detail: 'plain' });
    failed(await run(`module.exports = async () => { null.x; };`), { status: 422, kind: 'user_error', detail: /^TypeError: Cannot read properties of null/ });
    failed(await run(`module.exports = () => { throw 'a string'; };`), { status: 422, kind: 'user_error', detail: 'a string' });
    failed(await run(`module.exports = async () => Promise.reject({ message: 'obj' });`), { status: 422, detail: 'obj' });
  });

  it('statuses cannot be forged: a status property or a changed status is ignored', async () => {
    failed(await run(`module.exports = async () => { const e = new Error('x'); e.status = 500; throw e; };`), { status: 422, kind: 'user_error' });
    failed(await run(`module.exports = async () => { throw { status: 403, message: 'fake' }; };`), { status: 422, kind: 'user_error' });
    failed(
      await run(`const { BadRequestError } = require('@coffer/errors');
        module.exports = async () => { const e = new BadRequestError('x'); e.status = 503; throw e; };`),
      { status: 400, kind: 'user_error' },
    );
    failed(
      await run(`const { ApiError } = require('@coffer/errors');
        class Mine extends ApiError { static STATUS = 500; }
        module.exports = async () => { throw new Mine('x'); };`),
      { status: 422, kind: 'user_error' },
    );
  });

  it('a long message is cut', async () => {
    const r = await run(`module.exports = async () => { throw new Error('x'.repeat(100000)); };`);
    assert.ok(failed(r, { status: 422 }).detail.length <= 2001);
  });

  it('an unhandled rejection ends the run as a user error (as it would end Node)', async () => {
    const r = await run(`module.exports = async () => {
      Promise.reject(new Error('forgotten'));
      await new Promise((r) => setTimeout(r, 20));
      return 'never';
    };`);
    failed(r, { status: 422, kind: 'user_error', detail: /forgotten/ });
  });

  it('an exception in a timer callback ends the run', async () => {
    const r = await run(`module.exports = async () => {
      setTimeout(() => { throw new RangeError('in timer'); }, 1);
      await new Promise((r) => setTimeout(r, 50));
      return 'never';
    };`);
    failed(r, { status: 422, kind: 'user_error', detail: 'RangeError: in timer' });
  });

  it('an error without a message is named alone, not "TypeError: " with nothing after it', async () => {
    failed(await run(`module.exports = async () => { throw new TypeError(); };`), { status: 422, detail: 'TypeError' });
    failed(await run(`module.exports = async () => { Promise.reject(new RangeError()); await new Promise((r) => setTimeout(r, 20)); };`), { status: 422, detail: 'RangeError' });
    failed(await run(`module.exports = async () => { throw new Error(); };`), { status: 422, detail: 'The code threw an error.' });
  });

  it('the result must be JSON-serializable', async () => {
    failed(await run('module.exports = async () => ({ n: 1n });'), { status: 422, kind: 'user_error', detail: /cannot be serialized as JSON.*BigInt/ });
    failed(await run('module.exports = async () => { const a = {}; a.a = a; return a; };'), { status: 422, kind: 'user_error', detail: /circular/ });
  });
});
