/**
 * Intl's ICU memory, which the isolate's memory limit does not count, is bounded by the runtime
 * (src/sandbox/runtime/intl.js): Intl objects and formatters made per run, and the ICU memory
 * the objects of a context hold at once (half the memory limit, at least 8 MB: 64 MB at the
 * default 128 MB, which most tests here use); locale methods share cached formatters.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { DEFAULT_LIMITS, Sandbox, type RunRequest } from '../../src/sandbox/index.ts';
import { failed, value } from './helpers.ts';

const sb = new Sandbox();
after(() => sb.dispose());

let keys = 0;
/** A key of its own for each test, so tests never share a context. */
function keyed(code: string, memoryMb = DEFAULT_LIMITS.memoryMb) {
  const cacheKey = `intl:${++keys}`;
  return (req: Record<string, unknown> = {}) => sb.run({ tenantId: 'T', cacheKey, code, req, limits: { memoryMb, timeoutMs: 20_000 } });
}

const PER_RUN = /Intl objects: at most 10000 per run/;
const held = (mb: number) => new RegExp(`Intl objects: at most ${mb} MB of ICU memory \\(estimated\\) held at once`);
const HELD = held(64);

describe('Intl objects made per run', () => {
  it('past 10,000 in a run, making one is a RangeError, which code may catch', async () => {
    const go = keyed(`module.exports = async () => {
      let made = 0, message = '', name = '';
      try { for (let i = 0; i < 20000; i++) { new Intl.Locale('en'); made++; } } catch (e) { message = e.message; name = e.name; }
      return { made, name, message };
    };`);
    const r = value(await go()) as { made: number; name: string; message: string };
    assert.equal(r.made, 10_000);
    assert.equal(r.name, 'RangeError');
    assert.match(r.message, PER_RUN);
  });

  it('a loop that catches the error makes nothing more, and quickly', async () => {
    const go = keyed(`module.exports = async () => {
      let made = 0, refused = 0;
      const d = new Date(0);
      for (let i = 0; i < 100000; i++) {
        try { Intl.NumberFormat('en'); made++; } catch { refused++; }
        try { d.toLocaleString('en', { get hour() { return 'numeric'; } }); made++; } catch { refused++; }
      }
      return { made, refused };
    };`);
    const r = await go();
    assert.deepEqual(value(r), { made: 10_000, refused: 190_000 });
    // Refusing is cheap: these 200,000 calls take ~4 s alone on the 2-core machine. The bound
    // leaves room for a loaded machine (the whole suite at once) and still fails a refusal
    // that costs several times that.
    assert.ok(r.durationMs < 15_000, `took ${r.durationMs} ms`);
  });

  it('uncaught, it fails the run as a 422 user error', async () => {
    const go = keyed(`module.exports = async () => { for (let i = 0; i < 20000; i++) new Intl.Collator('de'); };`);
    failed(await go(), { status: 422, kind: 'user_error', detail: /^RangeError: Intl objects: at most 10000 per run/ });
  });

  it('counts formatters the locale methods make when they cannot share one', async () => {
    // An options object with a getter cannot be a cache key: each call makes a formatter.
    const go = keyed(`module.exports = async () => {
      const opts = { get minimumFractionDigits() { return 2; } };
      let n = 0;
      try { for (let i = 0; i < 20000; i++) { (i).toLocaleString('en', opts); n++; } } catch (e) { return [n, e.message]; }
      return [n];
    };`);
    const [n, message] = value(await go()) as [number, string];
    assert.equal(n, 10_000);
    assert.match(message, PER_RUN);
  });

  it('starts from zero in every run of a warm context', async () => {
    const go = keyed(`module.exports = async () => { let n = 0; try { for (let i = 0; i < 6000; i++) { new Intl.ListFormat('en'); n++; } } catch (e) { return e.message; } return n; };`);
    assert.equal(value(await go()), 6000);
    assert.equal(value(await go()), 6000);
  });
});

describe('ICU memory held at once', () => {
  it('the 200,000 DateTimeFormats kept alive stop at 64 MB, and the host holds about that', async () => {
    // Before: a 32 MB isolate kept them all, about 27 KB each of the host's memory (5 GB).
    const go = keyed(`const keep = []; module.exports = async () => {
      try { for (let i = 0; i < 200000; i++) keep.push(new Intl.DateTimeFormat('en')); } catch (e) { return [keep.length, e.name, e.message]; }
      return [keep.length];
    };`);
    const before = process.memoryUsage().rss;
    const [kept, name, message] = value(await go()) as [number, string, string];
    const grew = process.memoryUsage().rss - before;
    assert.equal(kept, 2048);
    assert.equal(name, 'RangeError');
    assert.match(message, HELD);
    assert.ok(grew < 400 * 1024 * 1024, `the host's memory grew by ${Math.round(grew / 1e6)} MB`);
  });

  it('the budget is half the memory limit, at least 8 MB: past it, a smaller isolate meets the RangeError sooner', async () => {
    const code = `const keep = []; module.exports = async () => {
      try { for (;;) keep.push(new Intl.DateTimeFormat('en')); } catch (e) { return [keep.length, e.name, e.message]; }
    };`;
    // [memory limit, DateTimeFormats kept (32 KB each), budget in MB]; 8 MB isolates get the floor.
    for (const [memoryMb, kept, mb] of [[128, 2048, 64], [32, 512, 16], [16, 256, 8], [8, 256, 8]]) {
      const [n, name, message] = value(await keyed(code, memoryMb)()) as [number, string, string];
      assert.equal(n, kept, `${memoryMb} MB`);
      assert.equal(name, 'RangeError');
      assert.match(message, held(mb));
    }
  });

  it('objects kept across warm runs count until the budget is spent', async () => {
    const go = keyed(`const keep = []; module.exports = async (req) => {
      try { for (let i = 0; i < req.n; i++) keep.push(new Intl.DateTimeFormat('en')); } catch (e) { return [keep.length, e.message]; }
      return [keep.length];
    };`);
    assert.deepEqual(value(await go({ n: 1000 })), [1000]);
    // 2048 DateTimeFormats are 64 MB: the second run gets the rest of the budget.
    const [kept, message] = value(await go({ n: 2000 })) as [number, string];
    assert.equal(kept, 2048);
    assert.match(message, HELD);
  });

  // Half the budget is 1024 DateTimeFormats at 128 MB, 128 at 16 MB (whose budget is 8 MB).
  for (const [memoryMb, first, more] of [[128, 900, 200], [16, 100, 40]]) {
    it(`an isolate whose context holds more than half the budget after a run is replaced (${memoryMb} MB)`, async () => {
      const go = keyed(`const keep = []; module.exports = async (req) => { for (let i = 0; i < req.n; i++) keep.push(new Intl.DateTimeFormat('en')); return keep.length; };`, memoryMb);
      assert.equal(value(await go({ n: first })), first);
      assert.equal(value(await go({ n: more })), first + more, 'under half: the context is kept');
      assert.equal(value(await go({ n: 1 })), 1, 'over half: the next run starts in a fresh isolate');
    });
  }

  it('a formatter made and dropped in every call never runs out, however many calls', async () => {
    const go = keyed(`module.exports = async (req) => new Intl.DateTimeFormat('en', { timeZone: 'UTC' }).format(req.i * 86400000);`);
    for (let i = 0; i < 3000; i++) {
      const r = await go({ i });
      assert.ok(r.ok, `call ${i}: ${JSON.stringify(r)}`);
    }
  });

  it('collected objects give their share back', async () => {
    const go = keyed(`module.exports = async () => {
      const made = [];
      for (let round = 0; round < 3; round++) {
        let n = 0;
        try { for (let i = 0; i < 2000; i++) { new Intl.DateTimeFormat('en'); n++; } } catch {}
        made.push(n);
        // Garbage that lives long enough to bring about a full collection (only that one frees
        // objects watched by a FinalizationRegistry); then a task boundary, where the credits come in.
        for (let j = 0; j < 3; j++) {
          let junk = []; for (let i = 0; i < 2000; i++) { junk.push(new Array(10000).fill(i)); if (junk.length > 50) junk = []; }
          await new Promise((r) => setTimeout(r, 5));
        }
      }
      return made;
    };`);
    assert.deepEqual(value(await go()), [2000, 2000, 2000]);
  });

  it('a Segments object and its iterators count their copy of the text', async () => {
    const go = keyed(`module.exports = async () => {
      const text = 'ab '.repeat(1_000_000);
      const seg = new Intl.Segmenter('en');
      const keep = [];
      try { for (let i = 0; i < 100; i++) { const s = seg.segment(text); keep.push(s, s[Symbol.iterator]()); } } catch (e) { return [keep.length, e.message]; }
      return [keep.length];
    };`);
    const [kept, message] = value(await go()) as [number, string];
    // 3 million code units: about 6 MB each, so about ten fit in 64 MB.
    assert.ok(kept >= 8 && kept <= 12, `kept ${kept}`);
    assert.match(message, HELD);
  });

  // A quarter of the budget: 16 MB at 128 MB; 2 MB at 16 MB, where a full context holds 8 MB.
  for (const [memoryMb, full] of [[128, 2048], [16, 256]]) {
    it(`an isolate whose discarded contexts held much of it is replaced, not kept (${memoryMb} MB)`, async () => {
      // A timer left pending makes the context unusable for the next run: it is discarded, but its
      // objects stay in the isolate until V8 collects them, and a fresh context counts from zero.
      const s = new Sandbox();
      try {
        const run = (code: string) => s.run({ tenantId: 'T', cacheKey: 'k', code, req: {}, limits: { memoryMb, timeoutMs: 10_000 } });
        const fill = `const keep = []; module.exports = async () => { try { for (;;) keep.push(new Intl.DateTimeFormat('en')); } catch {} setTimeout(() => {}, 1e6); return keep.length; };`;
        assert.equal(value(await run(fill)), full);
        assert.equal(s.warmIsolates, 0);
        const little = `module.exports = async () => { new Intl.DateTimeFormat('en'); setTimeout(() => {}, 1e6); return 1; };`;
        assert.equal(value(await run(little)), 1);
        assert.equal(s.warmIsolates, 1);
      } finally {
        await s.dispose();
      }
    });
  }
});

describe('locale methods share cached formatters', () => {
  it('formats 20,000 dates, numbers and comparisons with the same options in one run', async () => {
    const go = keyed(`module.exports = async () => {
      const opts = { timeZone: 'UTC', year: 'numeric', month: 'short', day: '2-digit' };
      let last = '', sum = 0;
      for (let i = 0; i < 20000; i++) {
        last = new Date(Date.UTC(2024, 0, 1) + i * 86400000).toLocaleDateString('en-US', opts);
        sum += (i / 3).toLocaleString('de-DE', { maximumFractionDigits: 2 }).length;
        sum += 'a'.localeCompare('B', ['en'], { sensitivity: 'base' });
        sum += BigInt(i).toLocaleString('en', { notation: 'compact' }).length;
        sum += [i, 2.5].toLocaleString('fr', { minimumFractionDigits: 1 }).length;
        new Date(i).toLocaleTimeString(i % 2 ? 'de' : 'fr', { timeZone: 'UTC' });
      }
      return [last, sum > 0];
    };`);
    const last = new Date(Date.UTC(2024, 0, 1) + 19999 * 86400000).toLocaleDateString('en-US', { timeZone: 'UTC', year: 'numeric', month: 'short', day: '2-digit' });
    assert.deepEqual(value(await go()), [last, true]);
  });

  it('formats like the engine, whatever the arguments', async () => {
    const body = `
      const out = [];
      const t = (f) => { try { out.push(String(f())); } catch (e) { out.push(e.name + ': ' + e.message); } };
      const d = new Date(Date.UTC(2024, 1, 29, 23, 59, 58, 7));
      const locs = [undefined, 'en-US', 'de', ['fr', 'en'], 'ja-JP-u-ca-japanese', 'xx-bogus', '', 'en-u-hc-h23'];
      const opts = [undefined, {}, { timeZone: 'UTC' }, { timeZone: 'Asia/Tokyo', hour: 'numeric' }, { weekday: 'long', timeZone: 'UTC' },
        { dateStyle: 'full', timeZone: 'UTC' }, { timeStyle: 'short', timeZone: 'UTC' }, { hour: 'bogus' }, { dayPeriod: 'short', timeZone: 'UTC' },
        { fractionalSecondDigits: 2, timeZone: 'UTC' }, { timeZoneName: 'short', timeZone: 'UTC' }, { month: 'long', minute: 'numeric', timeZone: 'UTC' },
        { dateStyle: 'medium', hour: 'numeric' }, Object.assign(Object.create(null), { second: '2-digit', timeZone: 'UTC' })];
      for (const l of locs) for (const o of opts) for (const m of ['toLocaleString', 'toLocaleDateString', 'toLocaleTimeString']) t(() => d[m](l, o));
      t(() => new Date(NaN).toLocaleString('xx-bogus', { hour: 'bogus' }));
      for (const l of locs) for (const o of [undefined, { style: 'currency', currency: 'EUR' }, { style: 'percent' }, { notation: 'compact' }, { useGrouping: false }, { style: 'currency' }, { minimumFractionDigits: '3' }]) {
        t(() => (-1234.5678).toLocaleString(l, o));
        t(() => (12345678901234567890n).toLocaleString(l, o));
        for (const b of ['a', 'Ä', '10', undefined, 9]) t(() => 'a'.localeCompare(b, l, o && { sensitivity: 'accent', numeric: true }));
      }
      t(() => Date.prototype.toLocaleString.call({}, 'en', {}));
      t(() => Number.prototype.toLocaleString.call('5', 'en', {}));
      t(() => String.prototype.localeCompare.call(null, 'a', 'en', {}));
      t(() => new Number(5).toLocaleString('de', { minimumFractionDigits: 2 }));
      t(() => (5).toLocaleString('en', { get style() { return 'percent'; } }));
      t(() => (5).toLocaleString('en', null));
      return out;`;
    const native = new Function(body)() as string[];
    const go = keyed(`module.exports = async () => { ${body} };`);
    assert.deepEqual(value(await go()), native);
  });
});

describe('Intl behaves as in Node', () => {
  it('constructors, prototypes, statics, subclasses and calls without new', async () => {
    const body = `
      const names = ['DateTimeFormat', 'NumberFormat', 'Collator', 'PluralRules', 'RelativeTimeFormat', 'ListFormat', 'DisplayNames', 'Segmenter', 'Locale', 'DurationFormat'];
      const shape = names.filter((n) => Intl[n]).map((n) => [n, Intl[n].name, Intl[n].length, Object.getOwnPropertyNames(Intl[n]).sort().join(),
        Intl[n].prototype.constructor === Intl[n], Object.getPrototypeOf(Intl[n]) === Function.prototype,
        JSON.stringify(Object.getOwnPropertyDescriptor(Intl, n)), JSON.stringify(Object.getOwnPropertyDescriptor(Intl[n], 'prototype'))]);
      class Fmt extends Intl.NumberFormat { twice(x) { return this.format(x) + this.format(x); } }
      const f = new Fmt('de', { minimumFractionDigits: 1 });
      const dtf = Intl.DateTimeFormat('en-US', { timeZone: 'UTC' });
      const legacy = Intl.DateTimeFormat.call(Object.create(Intl.DateTimeFormat.prototype), 'en');
      const threw = [];
      for (const n of ['PluralRules', 'Segmenter', 'Locale', 'ListFormat']) { try { Intl[n]('en'); } catch (e) { threw.push(e.constructor === TypeError); } }
      const seg = [...new Intl.Segmenter('en', { granularity: 'word' }).segment('Hello big world')].filter((s) => s.isWordLike).map((s) => s.segment);
      return [shape, f instanceof Fmt, f instanceof Intl.NumberFormat, f.twice(2), f.constructor === Fmt,
        dtf instanceof Intl.DateTimeFormat, dtf.format(0), dtf.formatRange(0, 86400000), dtf.resolvedOptions().timeZone, legacy instanceof Intl.DateTimeFormat,
        Intl.NumberFormat('en').format(1234.5), Intl.Collator('en').compare('a', 'b'), threw,
        Intl.DateTimeFormat.supportedLocalesOf(['en-US', 'de', 'zz-ZZ']), Intl.getCanonicalLocales('EN-us'),
        new Intl.PluralRules('en').select(1), new Intl.RelativeTimeFormat('en').format(-1, 'day'), new Intl.ListFormat('en').format(['a', 'b', 'c']),
        new Intl.DisplayNames('en', { type: 'region' }).of('DE'), seg, new Intl.Locale('en').maximize().toString(), new Intl.Locale('en-Latn-US').minimize().toString(),
        Object.prototype.toString.call(dtf), typeof Intl.v8BreakIterator,
        [Date.prototype.toLocaleString.length, String.prototype.localeCompare.length, Number.prototype.toLocaleString.name, Intl.DateTimeFormat.prototype.formatRange.length]];`;
    const native = JSON.parse(JSON.stringify(new Function(body)()));
    const go = keyed(`module.exports = async () => { ${body} };`);
    assert.deepEqual(value(await go()), native);
  });

  it('the engine’s own constructors are out of reach', async () => {
    const go = keyed(`module.exports = async () => {
      const seen = new Set();
      Error.prepareStackTrace = (e, sites) => { for (const s of sites) { const f = s.getFunction(); if (f) seen.add(f); } return ''; };
      const peek = { get hour() { new Error().stack; return 'numeric'; }, get style() { new Error().stack; return 'decimal'; } };
      new Intl.DateTimeFormat('en', peek); Intl.NumberFormat('en', peek); new Date(0).toLocaleString('en', peek); (1).toLocaleString('en', peek);
      const protos = ['DateTimeFormat', 'NumberFormat', 'Collator', 'Segmenter', 'Locale'].map((n) => Intl[n].prototype.constructor === Intl[n]);
      // Every function the stack showed is the code's own getter.
      return [[...seen].every((f) => f === Object.getOwnPropertyDescriptor(peek, 'hour').get || f === Object.getOwnPropertyDescriptor(peek, 'style').get), protos];
    };`);
    assert.deepEqual(value(await go()), [true, [true, true, true, true, true]]);
  });
});
