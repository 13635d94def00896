import { isContainer } from '../access/rules.ts';
import { characterCount } from '../expressions/values.ts';
import { TOKEN_ID_PATTERN } from '../features/tokens/schema.ts';
import { TOKEN_TYPE_NAMES } from '../vault/token-types.ts';

/**
 * The token search language: `field:value` terms joined by AND / OR (AND binds tighter),
 * with parentheses. Values may be quoted ("…", in which \" and \\ are escapes and any other
 * backslash is itself), and so may a metadata key (`metadata."k:y":v`). Fields: id, type,
 * container, fingerprint, metadata.<key>, and data (matches a search index value).
 * A term with no field is a data term. Lengths count characters (code points), as the list
 * filters' do.
 */
export type SearchField = 'id' | 'type' | 'container' | 'fingerprint' | 'data' | `metadata.${string}`;
export type SearchNode =
  | { kind: 'term'; field: SearchField; value: string }
  | { kind: 'and' | 'or'; left: SearchNode; right: SearchNode };

export class SearchQueryError extends Error {}

const FIELDS = new Set(['id', 'type', 'container', 'fingerprint', 'data']);
const MAX_TERMS = 50;
const TOKEN_ID = new RegExp(TOKEN_ID_PATTERN);
/** As the list filters bound them (GET /tokens, GET /v2/tokens). */
const MAX_FINGERPRINT = 100;
const MAX_METADATA_KEY = 100;
const MAX_METADATA_VALUE = 500;

/** `at` and `end`: where the lexeme starts and ends in the source (a quoted one with its quotes). */
type Lexeme = { t: 'word' | 'string' | '(' | ')' | 'AND' | 'OR'; v: string; at: number; end: number };

function lex(src: string): Lexeme[] {
  const out: Lexeme[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    // Whitespace as the word loop below sees it (\s, U+00A0 and U+2028 too): skipping less would loop forever.
    if (/\s/.test(c)) {
      i++;
    } else if (c === '(' || c === ')') {
      out.push({ t: c, v: c, at: i, end: ++i });
    } else if (c === '"') {
      const start = i++;
      let v = '';
      while (i < src.length && src[i] !== '"') {
        if (src[i] === '\\' && (src[i + 1] === '"' || src[i + 1] === '\\')) i++;
        v += src[i++];
      }
      if (i >= src.length) throw new SearchQueryError(`unterminated quoted value at ${start}`);
      i++;
      out.push({ t: 'string', v, at: start, end: i });
    } else {
      const start = i;
      // A word ends at whitespace or a parenthesis; a quoted value may follow `field:`.
      while (i < src.length && !/[\s()"]/.test(src[i])) i++;
      const v = src.slice(start, i);
      out.push({ t: v === 'AND' || v === 'OR' ? v : 'word', v, at: start, end: i });
    }
  }
  return out;
}

export function parseSearchQuery(src: string): SearchNode {
  const lexemes = lex(src);
  let pos = 0;
  let terms = 0;
  const peek = () => lexemes[pos];

  function term(): SearchNode {
    const l = peek();
    if (!l) throw new SearchQueryError('the query ended where a term was expected');
    if (l.t === '(') {
      pos++;
      const inner = or();
      if (peek()?.t !== ')') throw new SearchQueryError(`expected ")" at ${peek()?.at ?? src.length}`);
      pos++;
      return inner;
    }
    if (l.t === 'string') {
      pos++;
      return leaf('data', l.v, l.at, true);
    }
    if (l.t !== 'word') throw new SearchQueryError(`unexpected "${l.v}" at ${l.at}`);
    pos++;
    // `metadata."a key: with anything"`: a quoted key, then `:` and the value, all adjacent.
    const quotedKey = l.v === 'metadata.' ? adjacent(l) : undefined;
    if (quotedKey?.t === 'string') {
      pos++;
      const rest = adjacent(quotedKey);
      if (rest?.t !== 'word' || !rest.v.startsWith(':')) throw new SearchQueryError(`expected ":" and a value after the quoted metadata key at ${l.at}`);
      pos++;
      return fieldValue(`metadata.${quotedKey.v}`, rest.v.slice(1), rest, l.at);
    }
    const colon = l.v.indexOf(':');
    if (colon < 0) return leaf('data', l.v, l.at, false);
    return fieldValue(l.v.slice(0, colon), l.v.slice(colon + 1), l, l.at);
  }

  /** The lexeme that starts where `l` ends, if any: nothing between them. */
  function adjacent(l: Lexeme): Lexeme | undefined {
    const next = peek();
    return next?.at === l.end ? next : undefined;
  }

  /** `field:value`, where an empty value may be followed at once by a quoted one (`field:"a b"`). */
  function fieldValue(field: string, value: string, last: Lexeme, at: number): SearchNode {
    let quoted = false;
    if (value === '' && adjacent(last)?.t === 'string') {
      value = lexemes[pos++].v;
      quoted = true;
    }
    // A metadata key is whatever follows `metadata.`, dots included ("order.id" is one key).
    const key = field.startsWith('metadata.') ? field.slice('metadata.'.length) : undefined;
    if (!FIELDS.has(field) && (key === undefined || key === '' || characterCount(key) > MAX_METADATA_KEY)) {
      throw new SearchQueryError(`unknown field "${field}" at ${at} (fields: id, type, container, fingerprint, data, metadata.<key> with a key of 1 to ${MAX_METADATA_KEY} characters)`);
    }
    return leaf(field as SearchField, value, at, quoted);
  }

  function leaf(field: SearchField, value: string, at: number, quoted: boolean): SearchNode {
    // A metadata value may be empty, as a token's may, when quoted: `metadata.note:""`.
    if (value === '' && !(quoted && field.startsWith('metadata.'))) throw new SearchQueryError(`empty value for "${field}" at ${at}`);
    // Values no token can hold are refused as the list filters refuse them, not matched to nothing.
    if (field === 'type' && !TOKEN_TYPE_NAMES.includes(value)) {
      throw new SearchQueryError(`"${value}" is not a token type at ${at} (types: ${TOKEN_TYPE_NAMES.join(', ')})`);
    }
    if (field === 'id' && !TOKEN_ID.test(value)) {
      throw new SearchQueryError(`"${value.slice(0, 50)}" is not a token id at ${at} (1 to 200 letters, digits, "_", "." or "-")`);
    }
    if (field === 'fingerprint' && characterCount(value) > MAX_FINGERPRINT) {
      throw new SearchQueryError(`fingerprint at ${at} is longer than ${MAX_FINGERPRINT} characters`);
    }
    if (field.startsWith('metadata.') && characterCount(value) > MAX_METADATA_VALUE) {
      throw new SearchQueryError(`the value of "${field}" at ${at} is longer than ${MAX_METADATA_VALUE} characters`);
    }
    if (field === 'container' && !isContainer(value)) {
      throw new SearchQueryError(`container "${value}" must be a path of lowercase segments that starts and ends with "/" at ${at}, e.g. /pci/high/`);
    }
    if (++terms > MAX_TERMS) throw new SearchQueryError(`at most ${MAX_TERMS} terms`);
    return { kind: 'term', field, value };
  }

  function and(): SearchNode {
    let left = term();
    while (peek()?.t === 'AND') {
      pos++;
      left = { kind: 'and', left, right: term() };
    }
    return left;
  }

  function or(): SearchNode {
    let left = and();
    while (peek()?.t === 'OR') {
      pos++;
      left = { kind: 'or', left, right: and() };
    }
    return left;
  }

  const tree = or();
  if (pos < lexemes.length) throw new SearchQueryError(`unexpected "${lexemes[pos].v}" at ${lexemes[pos].at}; join terms with AND or OR`);
  return tree;
}

/** Rewrites every term's value (the service hashes data terms with the tenant's index key). */
export async function mapTerms(node: SearchNode, fn: (field: SearchField, value: string) => Promise<string>): Promise<SearchNode> {
  if (node.kind === 'term') return { ...node, value: await fn(node.field, node.value) };
  return { kind: node.kind, left: await mapTerms(node.left, fn), right: await mapTerms(node.right, fn) };
}
