import { Type, type TSchema } from 'typebox';
import { ApiError } from './errors.ts';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/** `page` ≥ 1 and `size` 1..max; values out of range are rejected, never clamped. */
export function OffsetQuery(maxSize = MAX_PAGE_SIZE) {
  return {
    page: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1, description: 'Page number, from 1' }),
    size: Type.Integer({ minimum: 1, maximum: maxSize, default: DEFAULT_PAGE_SIZE, description: `Page size, 1 to ${maxSize}` }),
  };
}

export function OffsetPage<T extends TSchema>(item: T) {
  return Type.Object({
    pagination: Type.Object({
      total_items: Type.Integer(),
      page_number: Type.Integer(),
      page_size: Type.Integer(),
      total_pages: Type.Integer(),
    }),
    data: Type.Array(item),
  });
}

export type Offset = { page: number; size: number };

export function offsetOf(q: Offset): { limit: number; offset: number } {
  return { limit: q.size, offset: (q.page - 1) * q.size };
}

export function offsetPage<T>(data: T[], total: number, q: Offset) {
  return {
    pagination: {
      total_items: total,
      page_number: q.page,
      page_size: q.size,
      total_pages: Math.ceil(total / q.size),
    },
    data,
  };
}

export const CursorQuery = {
  start: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Cursor from the previous page\'s pagination.next' })),
  size: Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE }),
};

export function CursorPage<T extends TSchema>(item: T) {
  return Type.Object({
    pagination: Type.Object({ next: Type.Optional(Type.String()), page_size: Type.Integer() }),
    data: Type.Array(item),
  });
}

/** Cursors are opaque to clients: base64url of the position they continue after. */
export function encodeCursor(position: Record<string, string>): string {
  return Buffer.from(JSON.stringify(position)).toString('base64url');
}

export function decodeCursor(cursor: string, keys: string[]): Record<string, string> {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Record<string, unknown>;
    if (keys.every((k) => typeof value[k] === 'string')) return value as Record<string, string>;
  } catch {
    // fall through to the error below
  }
  throw ApiError.field('query.start', 'is not a cursor returned by this endpoint');
}

/** Fetch one row more than the page to know whether a next page exists. */
export function cursorPage<T>(rows: T[], size: number, positionOf: (last: T) => Record<string, string>) {
  const data = rows.slice(0, size);
  const next = rows.length > size ? encodeCursor(positionOf(data[data.length - 1])) : undefined;
  return { pagination: { ...(next ? { next } : {}), page_size: size }, data };
}
