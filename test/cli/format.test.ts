/** Human output: tables of `data` fitted to the terminal width, key/value lines for objects. */
import { describe, expect, it } from 'vitest';
import { renderHuman, renderObject, renderTable } from '../../src/cli/format.js';

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

  it('leaves out columns that do not fit, still taking narrower ones after them', () => {
    const t = renderTable(rows, 80);
    expect(t.text.split('\n').every((l) => l.length <= 80)).toBe(true);
    expect(t.text.split('\n')[0]!.split(/ {2,}/)).toEqual(['id', 'message', 'status']);
    expect(t.dropped).toEqual(['created_at', 'nested']);
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
