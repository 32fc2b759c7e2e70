/** Human output: tables of `data` fitted to the terminal width, key/value lines for objects. */
import { describe, expect, it } from 'vitest';
import { relativeTime, renderCsv, renderHuman, renderJsonl, renderObject, renderTable, sparkline } from '../../src/cli/format.js';

const rows = [
  { id: '3f0c1c1e-6b1a-4d8e-9a4c-0d3e2f1a9b7c', message: 'The export button does nothing at all when clicked twice', status: 'new', nested: { a: 1 }, empty: null, created_at: '2026-01-01T00:00:00.000Z' },
  { id: '9b7c0d3e-2f1a-4d8e-9a4c-3f0c1c1e6b1a', message: 'Login\nbroken', status: 'reviewed', nested: { a: 2 }, empty: null, created_at: '2026-01-02T00:00:00.000Z' },
];

describe('renderTable', () => {
  it('shows scalar columns, leaves out nested and always-empty ones, and names what it left out', () => {
    const t = renderTable(rows, 200);
    const [header] = t.text.split('\n');
    expect(header!.split(/ {2,}/)).toEqual(['id', 'message', 'status', 'created_at']);
    expect(t.dropped).toEqual(['nested']);
    expect(t.text).toContain('Login broken');
  });

  it('shrinks free text before anything else and keeps identifiers whole', () => {
    const t = renderTable(rows, 100);
    const lines = t.text.split('\n');
    expect(lines.every((l) => l.length <= 100)).toBe(true);
    expect(t.text).toContain(rows[0]!.id);
    expect(t.text).toContain('2026-01-01T00:00:00.000Z');
    expect(t.text).toMatch(/The export button[^\n]*…/);
  });

  it('shortens identifiers before leaving out a column, and leaves out what still does not fit', () => {
    const t = renderTable(rows, 80);
    expect(t.text.split('\n').every((l) => l.length <= 80)).toBe(true);
    expect(t.text.split('\n')[0]!.split(/ {2,}/)).toEqual(['id', 'message', 'status', 'created_at']);
    expect(t.text).toContain('3f0c1c1e…');
    expect(t.text).not.toContain(rows[0]!.id);
    expect(t.dropped).toEqual(['nested']);
    const narrow = renderTable(rows, 50);
    expect(narrow.text.split('\n').every((l) => l.length <= 50)).toBe(true);
    expect(narrow.text.split('\n')[0]!.split(/ {2,}/)).toEqual(['id', 'message', 'status']);
    expect(narrow.dropped).toEqual(['created_at', 'nested']);
    const wideThenNarrow = renderTable([{ id: 'a', hash: 'f'.repeat(40), level: 'error' }], 20);
    expect(wideThenNarrow.text.split('\n')[0]!.split(/ {2,}/)).toEqual(['id', 'level']);
  });

  it('hides project_id when every row belongs to the same project', () => {
    const same = renderTable([{ id: 'a', project_id: '1' }, { id: 'b', project_id: '1' }], 80);
    expect(same.text.split('\n')[0]).toBe('id');
    const mixed = renderTable([{ id: 'a', project_id: '1' }, { id: 'b', project_id: '2' }], 80);
    expect(mixed.text.split('\n')[0]).toMatch(/^id +project_id$/);
  });
});

describe('renderObject and renderHuman', () => {
  it('prints nested objects with dotted keys and lists joined', () => {
    const text = renderObject({ id: 'k1', scopes: ['read', 'write'], features: { on: true }, gone: null });
    expect(text.split('\n')).toEqual(['id           k1', 'scopes       read, write', 'features.on  true', 'gone         -']);
  });

  it('prints a list answer as a table followed by its other fields on one line', () => {
    const text = renderHuman({ data: [{ id: 'a' }, { id: 'b' }], total: 2, limit: 50, offset: 0, next_cursor: null }, { width: 80 });
    expect(text).toBe('id\na\nb\ntotal: 2  limit: 50  offset: 0');
    expect(renderHuman({ data: [] }, { width: 80 })).toBe('(no rows)');
  });
});

describe('cells for people', () => {
  it('draws a list of numbers as a sparkline scaled to its maximum', () => {
    expect(sparkline([0, 1, 2, 3, 4, 5, 6, 7])).toBe('▁▂▃▄▅▆▇█');
    expect(sparkline([0, 0, 0])).toBe('▁▁▁');
    const t = renderTable([{ operation: 'GET /a', sparkline: [0, 7, 0, 7] }], 80);
    expect(t.text.split('\n')[1]).toMatch(/^GET \/a +▁█▁█$/);
  });

  it('shows ISO times relative to now in tables, and leaves them whole without a clock', () => {
    const now = Date.parse('2026-01-02T00:00:00.000Z');
    expect(relativeTime('2026-01-01T23:57:00.000Z', now)).toBe('3m ago');
    expect(relativeTime('2026-01-01T22:00:00.000Z', now)).toBe('2h ago');
    expect(relativeTime('2025-12-30T00:00:00.000Z', now)).toBe('3d ago');
    expect(relativeTime('2026-01-02T00:10:00.000Z', now)).toBe('in 10m');
    expect(relativeTime('2025-06-01T00:00:00.000Z', now)).toBe('2025-06-01');
    const t = renderTable(rows, 200, { now });
    expect(t.text).toMatch(/ 1d ago$/m);
    expect(t.text).not.toContain('2026-01-02T00:00:00.000Z');
  });

  it('prefers the declared default columns and names the rest', () => {
    const t = renderTable(rows, 200, { preferred: ['status', 'message', 'not_in_rows'] });
    expect(t.text.split('\n')[0]!.split(/ {2,}/)).toEqual(['status', 'message']);
    expect(t.dropped).toEqual(['id', 'created_at', 'nested']);
  });

  it('writes RFC 4180 CSV and JSON lines of the rows', () => {
    expect(renderCsv({ data: [{ a: 'x,y', b: 'say "hi"', c: { n: 1 } }, { a: 'plain' }] })).toBe('a,b,c\r\n"x,y","say ""hi""","{""n"":1}"\r\nplain,,');
    expect(renderCsv({ data: [{ a: 1, b: 2 }] }, ['b'])).toBe('b\r\n2');
    expect(renderJsonl({ data: [{ a: 1 }, { a: 2 }], total: 2 })).toBe('{"a":1}\n{"a":2}');
    expect(renderJsonl({ id: 'one' })).toBe('{"id":"one"}');
  });
});
