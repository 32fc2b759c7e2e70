import { describe, expect, it } from 'vitest';
import { TracePager } from '../../../src/domain/traces/trace-pager.js';

/** Feeds a newest-first span stream (trace id, span start) with each trace's true start, like the list does. */
function run(stream: [string, number][], starts: Record<string, number>, offset: number, limit: number) {
  const pager = new TracePager<{ trace_id: string; started_ms: number }>(offset + limit + 1);
  let read = 0;
  for (const [id, at] of stream) {
    if (pager.complete(at)) break;
    read++;
    if (!pager.firstSight(id)) continue;
    pager.accept({ trace_id: id, started_ms: starts[id]! });
  }
  return { ...pager.page(offset, limit), read };
}

describe('TracePager', () => {
  it('orders traces by their start even when a long trace is met late in the stream', () => {
    // Trace L starts at 100 but its last span starts at 500; S starts at 400.
    const stream: [string, number][] = [['L', 500], ['S', 400], ['S', 401 - 1], ['L', 100]];
    const r = run(stream, { L: 100, S: 400 }, 0, 1);
    expect(r.rows.map((t) => t.trace_id)).toEqual(['S']);
    expect(r.hasMore).toBe(true);
  });

  it('stops reading once no unseen trace can start later than the page', () => {
    const stream: [string, number][] = [];
    const starts: Record<string, number> = {};
    for (let i = 100; i > 0; i--) {
      starts[`t${i}`] = i * 10;
      stream.push([`t${i}`, i * 10 + 5], [`t${i}`, i * 10]);
    }
    const r = run(stream, starts, 0, 3);
    expect(r.rows.map((t) => t.trace_id)).toEqual(['t100', 't99', 't98']);
    expect(r.hasMore).toBe(true);
    expect(r.read).toBeLessThan(12);
  });

  it('pages with offset and reports the end', () => {
    const stream: [string, number][] = [['a', 30], ['b', 20], ['c', 10]];
    const starts = { a: 30, b: 20, c: 10 };
    expect(run(stream, starts, 2, 2)).toMatchObject({ rows: [{ trace_id: 'c' }], hasMore: false });
    expect(run(stream, starts, 1, 1)).toMatchObject({ rows: [{ trace_id: 'b' }], hasMore: true });
    expect(run(stream, starts, 3, 5).rows).toEqual([]);
  });

  it('offers each trace once and rejects a bad page size', () => {
    const p = new TracePager(1);
    expect(p.firstSight('x')).toBe(true);
    expect(p.firstSight('x')).toBe(false);
    expect(p.examined).toBe(1);
    expect(() => new TracePager(0)).toThrow(RangeError);
  });
});
