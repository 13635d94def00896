// Hosts for ./url.js: IPv4 (with the WHATWG shorthand and hex/octal parts), IPv6 (compressed
// on output), domains (percent-decoded, lower-cased, IDN labels to punycode), opaque hosts.

function parseIPv4Number(part) {
  if (part === '') return NaN;
  let radix = 10;
  if (/^0[xX]/.test(part)) {
    part = part.slice(2);
    radix = 16;
  } else if (part.length > 1 && part[0] === '0') {
    part = part.slice(1);
    radix = 8;
  }
  if (part === '') return 0;
  const valid = radix === 16 ? /^[0-9a-fA-F]+$/ : radix === 10 ? /^[0-9]+$/ : /^[0-7]+$/;
  return valid.test(part) ? parseInt(part, radix) : NaN;
}

/** undefined when `host` is not an IPv4 address at all; throws when it looks like one but is invalid. */
function parseIPv4(host, input) {
  const parts = host.split('.');
  if (parts[parts.length - 1] === '' && parts.length > 1) parts.pop();
  const last = parts[parts.length - 1];
  if (!(/^[0-9]+$/.test(last) || /^0[xX][0-9a-fA-F]*$/.test(last))) return undefined;
  if (parts.length > 4) throw invalidURL(input);
  const nums = parts.map(parseIPv4Number);
  if (nums.some((n) => Number.isNaN(n))) throw invalidURL(input);
  for (let i = 0; i < nums.length - 1; i++) if (nums[i] > 255) throw invalidURL(input);
  if (nums[nums.length - 1] >= 256 ** (5 - nums.length)) throw invalidURL(input);
  let ipv4 = nums[nums.length - 1];
  for (let i = 0; i < nums.length - 1; i++) ipv4 += nums[i] * 256 ** (3 - i);
  const out = [];
  for (let i = 3; i >= 0; i--) out.push(Math.floor(ipv4 / 256 ** i) % 256);
  return out.join('.');
}

function parseIPv6(str, input) {
  const pieces = [0, 0, 0, 0, 0, 0, 0, 0];
  let piece = 0;
  let compress = null;
  let i = 0;
  const fail = () => invalidURL(input);
  if (str[0] === ':') {
    if (str[1] !== ':') throw fail();
    i = 2;
    compress = ++piece;
  }
  while (i < str.length) {
    if (piece === 8) throw fail();
    if (str[i] === ':') {
      if (compress !== null) throw fail();
      i++;
      compress = ++piece;
      continue;
    }
    let value = 0;
    let length = 0;
    while (length < 4 && i < str.length && /[0-9a-fA-F]/.test(str[i])) {
      value = value * 16 + parseInt(str[i], 16);
      i++;
      length++;
    }
    if (str[i] === '.') {
      if (length === 0 || piece > 6) throw fail();
      i -= length;
      const v4 = str.slice(i).split('.');
      if (v4.length !== 4 || v4.some((p) => !/^(0|[1-9][0-9]{0,2})$/.test(p) || +p > 255)) throw fail();
      pieces[piece++] = +v4[0] * 256 + +v4[1];
      pieces[piece++] = +v4[2] * 256 + +v4[3];
      i = str.length;
      break;
    }
    if (str[i] === ':') {
      i++;
      if (i >= str.length) throw fail();
    } else if (i < str.length) {
      throw fail();
    }
    pieces[piece++] = value;
  }
  if (compress !== null) {
    let swaps = piece - compress;
    piece = 7;
    while (piece !== 0 && swaps > 0) {
      const t = pieces[compress + swaps - 1];
      pieces[compress + swaps - 1] = pieces[piece];
      pieces[piece] = t;
      piece--;
      swaps--;
    }
  } else if (piece !== 8) {
    throw fail();
  }
  // Serialize, compressing the first longest run of two or more zero pieces.
  let best = -1;
  let bestLen = 1;
  for (let s = 0; s < 8; ) {
    let e = s;
    while (e < 8 && pieces[e] === 0) e++;
    if (e - s > bestLen) {
      best = s;
      bestLen = e - s;
    }
    s = e === s ? s + 1 : e;
  }
  let out = '';
  for (let p = 0; p < 8; p++) {
    if (p === best) {
      out += p === 0 ? '::' : ':';
      p += bestLen - 1;
      continue;
    }
    out += pieces[p].toString(16) + (p < 7 ? ':' : '');
  }
  return '[' + out + ']';
}

function punycodeLabel(label) {
  const cps = Array.from(label, (c) => c.codePointAt(0));
  let out = cps.filter((c) => c < 0x80).map((c) => $String.fromCharCode(c)).join('');
  const basic = out.length;
  let handled = basic;
  if (basic) out += '-';
  const adapt = (delta, points, first) => {
    delta = first ? Math.floor(delta / 700) : delta >> 1;
    delta += Math.floor(delta / points);
    let k = 0;
    for (; delta > 455; k += 36) delta = Math.floor(delta / 35);
    return k + Math.floor((36 * delta) / (delta + 38));
  };
  const digit = (d) => $String.fromCharCode(d + 22 + 75 * (d < 26));
  let n = 128;
  let delta = 0;
  let bias = 72;
  while (handled < cps.length) {
    const m = Math.min(...cps.filter((c) => c >= n));
    delta += (m - n) * (handled + 1);
    n = m;
    for (const c of cps) {
      if (c < n) delta++;
      if (c === n) {
        let q = delta;
        for (let k = 36; ; k += 36) {
          const t = k <= bias ? 1 : k >= bias + 26 ? 26 : k - bias;
          if (q < t) break;
          out += digit(t + ((q - t) % (36 - t)));
          q = Math.floor((q - t) / (36 - t));
        }
        out += digit(q);
        bias = adapt(delta, handled + 1, handled === basic);
        delta = 0;
        handled++;
      }
    }
    delta++;
    n++;
  }
  return 'xn--' + out;
}

// UTS #46 (the mapping the URL standard applies to domains), near enough without its tables:
// NFKC with case folding (fullwidth ＥＸＡＭＰＬＥ is example), the characters it ignores (a soft
// hyphen) dropped, and the ideographic full stops as dots. Refused: C1 controls, noncharacters
// and the joiners U+200C and U+200D (valid only after a virama). Not checked: the bidi rules.
const IDNA_IGNORED = /[\u00ad\u034f\u180b-\u180d\u180f\u200b\u2060\u2064\ufe00-\ufe0f\ufeff]|\udb40[\udd00-\uddef]/g;
const IDNA_DISALLOWED = /[\u0080-\u009f\u200c\u200d\ufdd0-\ufdef\ufffe\uffff]|[\ud83f\ud87f\ud8bf\ud8ff\ud93f\ud97f\ud9bf\ud9ff\uda3f\uda7f\udabf\udaff\udb3f\udb7f\udbbf\udbff][\udffe\udfff]/;
const IDNA_DOTS = /[\u3002\uff0e\uff61]/g;

function idnaMap(domain, input) {
  if (/^[\u0000-\u007f]*$/.test(domain)) return domain.toLowerCase();
  if (IDNA_DISALLOWED.test(domain)) throw invalidURL(input);
  return domain.replace(IDNA_IGNORED, '').toLowerCase().normalize('NFKC').toLowerCase().normalize('NFC').replace(IDNA_DOTS, '.');
}

const FORBIDDEN_HOST = /[\u0000\t\n\r #/:<>?@[\\\]^|]/;
const FORBIDDEN_DOMAIN = /[\u0000-\u001f #%/:<>?@[\\\]^|\u007f]/;

function parseHost(raw, special, input) {
  if (raw[0] === '[') {
    if (raw[raw.length - 1] !== ']') throw invalidURL(input);
    return parseIPv6(raw.slice(1, -1), input);
  }
  if (!special) {
    if (FORBIDDEN_HOST.test(raw)) throw invalidURL(input);
    return percentEncode(raw, C0_SET);
  }
  if (raw === '') throw invalidURL(input);
  const domain = idnaMap(utf8Decode(percentDecodeBytes(raw), false), input);
  if (FORBIDDEN_DOMAIN.test(domain) || domain.includes('\ufffd')) throw invalidURL(input);
  const ascii = domain
    .split('.')
    .map((label) => {
      if (/^[\u0000-\u007f]*$/.test(label)) return label;
      if (/^xn--/.test(label)) throw invalidURL(input); // an A-label holds ASCII only
      return punycodeLabel(label);
    })
    .join('.');
  if (ascii.length > 253 || ascii === '') throw invalidURL(input);
  const ipv4 = parseIPv4(ascii, input);
  return ipv4 === undefined ? ascii : ipv4;
}

