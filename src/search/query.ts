import { isContainer } from '../access/rules.ts';
import { TOKEN_ID_PATTERN } from '../features/tokens/schema.ts';
import { TOKEN_TYPE_NAMES } from '../vault/token-types.ts';

/**
 * The token search language: `field:value` terms joined by AND / OR (AND binds tighter),
 * with parentheses. Values may be quoted ("…" with \" escapes). Fields: id, type,
 * container, fingerprint, metadata.<key>, and data (matches a search index value).
 * A term with no field is a data term.
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
const MAX_METADATA_VALUE = 500;

type Lexeme = { t: 'word' | 'string' | '(' | ')' | 'AND' | 'OR'; v: string; at: number };

function lex(src: string): Lexeme[] {
  const out: Lexeme[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    // Whitespace as the word loop below sees it (\s, U+00A0 and U+2028 too): skipping less would loop forever.
    if (/\s/.test(c)) {
      i++;
    } else if (c === '(' || c === ')') {
      out.push({ t: c, v: c, at: i++ });
    } else if (c === '"') {
      const start = i++;
      let v = '';
      while (i < src.length && src[i] !== '"') {
        if (src[i] === '\\' && i + 1 < src.length) i++;
        v += src[i++];
      }
      if (i >= src.length) throw new SearchQueryError(`unterminated quoted value at ${start}`);
      i++;
      out.push({ t: 'string', v, at: start });
    } else {
      const start = i;
      // A word ends at whitespace or a parenthesis; a quoted value may follow `field:`.
      while (i < src.length && !/[\s()"]/.test(src[i])) i++;
      const v = src.slice(start, i);
      out.push({ t: v === 'AND' || v === 'OR' ? v : 'word', v, at: start });
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
      return leaf('data', l.v, l.at);
    }
    if (l.t !== 'word') throw new SearchQueryError(`unexpected "${l.v}" at ${l.at}`);
    pos++;
    const colon = l.v.indexOf(':');
    if (colon < 0) return leaf('data', l.v, l.at);
    const field = l.v.slice(0, colon);
    let value = l.v.slice(colon + 1);
    if (value === '' && peek()?.t === 'string' && peek()!.at === l.at + l.v.length) value = lexemes[pos++].v;
    // A metadata key is whatever follows `metadata.`, dots included ("order.id" is one key).
    if (!FIELDS.has(field) && !/^metadata\.\S{1,100}$/.test(field)) {
      throw new SearchQueryError(`unknown field "${field}" at ${l.at} (fields: id, type, container, fingerprint, data, metadata.<key>)`);
    }
    return leaf(field as SearchField, value, l.at);
  }

  function leaf(field: SearchField, value: string, at: number): SearchNode {
    if (value === '') throw new SearchQueryError(`empty value for "${field}" at ${at}`);
    // Values no token can hold are refused as the list filters refuse them, not matched to nothing.
    if (field === 'type' && !TOKEN_TYPE_NAMES.includes(value)) {
      throw new SearchQueryError(`"${value}" is not a token type at ${at} (types: ${TOKEN_TYPE_NAMES.join(', ')})`);
    }
    if (field === 'id' && !TOKEN_ID.test(value)) {
      throw new SearchQueryError(`"${value.slice(0, 50)}" is not a token id at ${at} (1 to 200 letters, digits, "_", "." or "-")`);
    }
    if (field === 'fingerprint' && value.length > MAX_FINGERPRINT) {
      throw new SearchQueryError(`fingerprint at ${at} is longer than ${MAX_FINGERPRINT} characters`);
    }
    if (field.startsWith('metadata.') && value.length > MAX_METADATA_VALUE) {
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
