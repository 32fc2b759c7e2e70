import type { AnyOperation } from '../../operations/define.js';

/**
 * The spec's two pagination patterns (Conventions): offset (`limit` + `offset`, the next page uses
 * offset plus limit) and cursor (`cursor` set unchanged to the previous `next_cursor`, stop at null).
 * Which one a list uses is read from its descriptor, so new lists page without edits.
 */
export type PaginationKind = 'offset' | 'cursor';

function outputKeys(op: AnyOperation): Set<string> {
  const shape = (op.output as unknown as { shape?: Record<string, unknown> }).shape;
  return new Set(shape && typeof shape === 'object' ? Object.keys(shape) : []);
}

/** How a list operation pages, or null when it does not (no `data` array, no offset/cursor input). */
export function paginationOf(op: AnyOperation): PaginationKind | null {
  const input = op.input.shape as Record<string, unknown>;
  const out = outputKeys(op);
  if (!out.has('data')) return null;
  if ('cursor' in input && out.has('next_cursor')) return 'cursor';
  if ('offset' in input && 'limit' in input) return 'offset';
  return null;
}

const num = (v: unknown): number | undefined => {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) ? n : undefined;
};

/**
 * The input of the page after `page`, or null when `page` was the last one.
 * Offset lists stop on `has_more: false` when the list reports it, else when offset + limit reaches
 * `total`, else (no total) when a page comes back short. Cursor lists stop when `next_cursor` is null.
 */
export function nextPageInput(kind: PaginationKind, sent: Record<string, unknown>, page: unknown): Record<string, unknown> | null {
  const p = (page && typeof page === 'object' ? page : {}) as Record<string, unknown>;
  const data = Array.isArray(p.data) ? p.data : [];
  if (kind === 'cursor') {
    const next = p.next_cursor;
    if (typeof next !== 'string' || next === '' || next === sent.cursor) return null;
    return { ...sent, cursor: next };
  }
  if (data.length === 0) return null;
  const offset = num(p.offset) ?? num(sent.offset) ?? 0;
  const limit = num(p.limit) ?? num(sent.limit) ?? data.length;
  let more: boolean;
  if (typeof p.has_more === 'boolean') more = p.has_more;
  else if (num(p.total) !== undefined) more = offset + limit < num(p.total)!;
  else more = data.length >= limit;
  return more ? { ...sent, offset: offset + limit } : null;
}

/** Every page of a list, starting from `input`. */
export async function* iteratePages<P>(
  kind: PaginationKind,
  input: Record<string, unknown>,
  fetchPage: (input: Record<string, unknown>) => Promise<P>,
): AsyncGenerator<P, void, undefined> {
  let next: Record<string, unknown> | null = input;
  while (next) {
    const page: P = await fetchPage(next);
    yield page;
    next = nextPageInput(kind, next, page);
  }
}
