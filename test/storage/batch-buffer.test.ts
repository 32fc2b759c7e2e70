/**
 * Issue 20 item 3: rows bound for ClickHouse are acknowledged only after their insert, and under load
 * the store inserts less often with more rows per insert ("flush by size or time"): when rows arrived
 * while the last insert ran, the next insert waits until `lingerMs` after the last one started (or 4×
 * its time, up to 5 × `lingerMs`) unless `rows` rows wait or the store is flushed; rows that arrived
 * with no insert running (a lone writer waiting for each acknowledgement) go at once. Fake timers:
 * every wait is an explicit clock step.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createBatchBuffer, rowArrays, type BufferPacing } from '../../src/storage/clickhouse/batch-buffer.js';

interface Insert {
  rows: number[];
  at: number;
  done: () => void;
  fail: (e: Error) => void;
}

/** A buffer whose inserts are held until the test ends them (`done`/`fail`), as a server answers. */
function bufferWith(pacing?: BufferPacing) {
  const inserts: Insert[] = [];
  const buffer = createBatchBuffer(
    rowArrays<number>(
      (rows) =>
        new Promise<void>((resolve, reject) => {
          inserts.push({ rows: [...rows], at: Date.now(), done: resolve, fail: reject });
        }),
    ),
    pacing,
  );
  /** One write batch holding `rows`: resolves when they are inserted (its acknowledgement). */
  const write = (rows: number[]) => {
    buffer.participant.begin();
    buffer.add(rows);
    buffer.participant.jobEnd(true);
    buffer.participant.end();
    const acked = { value: false, error: null as unknown };
    const p = buffer.participant.commit!().then(
      () => void (acked.value = true),
      (e) => void (acked.error = e),
    );
    return { acked, p };
  };
  return { inserts, buffer, write };
}

const step = (ms: number) => vi.advanceTimersByTimeAsync(ms);

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  vi.setSystemTime(1_000_000);
});
afterEach(() => {
  vi.useRealTimers();
});

describe('ClickHouse insert pacing', () => {
  it('without pacing inserts at once and gathers what arrives during an insert into the next one', async () => {
    const { inserts, write } = bufferWith();
    const a = write([1]);
    await step(0);
    expect(inserts.map((i) => i.rows)).toEqual([[1]]);
    const b = write([2]);
    const c = write([3]);
    await step(0);
    expect(inserts).toHaveLength(1); // one insert in flight at a time
    inserts[0]!.done();
    await step(0);
    expect(a.acked.value).toBe(true);
    expect(b.acked.value).toBe(false); // not before its own insert
    expect(inserts.map((i) => i.rows)).toEqual([[1], [2, 3]]);
    inserts[1]!.done();
    await step(0);
    expect([b.acked.value, c.acked.value]).toEqual([true, true]);
  });

  it('never delays a lone writer that sends its next rows once the last are acknowledged', async () => {
    const { inserts, write } = bufferWith({ lingerMs: 200, rows: 1000 });
    for (let i = 0; i < 5; i++) {
      const w = write([i]);
      await step(0);
      expect(inserts).toHaveLength(i + 1); // inserted at once, every time
      await step(30);
      inserts[i]!.done();
      await step(0);
      expect(w.acked.value).toBe(true);
    }
    expect(inserts.map((x) => x.at - inserts[0]!.at)).toEqual([0, 30, 60, 90, 120]);
  });

  it('when rows arrive during an insert, waits lingerMs after it started and gathers what comes meanwhile', async () => {
    const { inserts, write } = bufferWith({ lingerMs: 200, rows: 1000 });
    const a = write([1]);
    await step(0);
    expect(inserts).toHaveLength(1); // the first rows: at once
    const later = [write([2]), write([3])]; // other writers, while that insert runs
    await step(10);
    inserts[0]!.done();
    await step(0);
    expect(a.acked.value).toBe(true);
    await step(100);
    const more = write([4, 5]);
    await step(80); // 190 ms after the first insert started
    expect(inserts).toHaveLength(1);
    expect(later.some((w) => w.acked.value)).toBe(false);
    await step(10);
    expect(inserts.map((i) => i.rows)).toEqual([[1], [2, 3, 4, 5]]);
    expect(inserts[1]!.at - inserts[0]!.at).toBe(200);
    expect(more.acked.value).toBe(false); // acknowledged only once inserted
    inserts[1]!.done();
    await step(0);
    expect([...later, more].every((w) => w.acked.value)).toBe(true);
  });

  it('inserts at once when `rows` rows wait', async () => {
    const { inserts, write } = bufferWith({ lingerMs: 200, rows: 5 });
    write([1]);
    await step(0);
    write([2, 3]);
    await step(5);
    inserts[0]!.done();
    await step(5);
    expect(inserts).toHaveLength(1);
    write([4, 5, 6]);
    await step(0);
    expect(inserts.map((i) => i.rows)).toEqual([[1], [2, 3, 4, 5, 6]]);
  });

  it('waits 4× the last insert time when the server is slow, up to 5 × lingerMs', async () => {
    const { inserts, write } = bufferWith({ lingerMs: 50, rows: 1000 });
    write([1]);
    await step(0);
    write([2]);
    await step(40); // a slow insert: 40 ms
    inserts[0]!.done();
    await step(110);
    expect(inserts).toHaveLength(1);
    await step(10); // 160 ms = 4 × 40 after the first insert started
    expect(inserts).toHaveLength(2);
    write([3]);
    await step(100); // a very slow one: 4 × 100 is past the cap of 5 × 50
    inserts[1]!.done();
    await step(149);
    expect(inserts).toHaveLength(2);
    await step(1); // 250 ms after the second insert started
    expect(inserts.map((i) => i.rows)).toEqual([[1], [2], [3]]);
  });

  it('flush() inserts what waits without the rest of the wait, and resolves once it is stored', async () => {
    const { inserts, write, buffer } = bufferWith({ lingerMs: 1000, rows: 1000 });
    write([1]);
    await step(0);
    const w = write([2]);
    inserts[0]!.done();
    await step(0);
    expect(inserts).toHaveLength(1); // [2] waits: it came during an insert
    let flushed = false;
    void buffer.flush().then(() => (flushed = true));
    await step(0);
    expect(inserts.map((i) => i.rows)).toEqual([[1], [2]]);
    expect(flushed).toBe(false);
    inserts[1]!.done();
    await step(0);
    expect([flushed, w.acked.value]).toEqual([true, true]);
  });

  it('a refused insert fails the writes it held, not the next ones', async () => {
    const { inserts, write } = bufferWith({ lingerMs: 100, rows: 1000 });
    const a = write([1]);
    await step(0);
    const b = write([2]);
    inserts[0]!.fail(new Error('refused'));
    await step(0);
    expect((a.acked.error as Error).message).toBe('refused');
    await step(100);
    expect(inserts.map((i) => i.rows)).toEqual([[1], [2]]);
    inserts[1]!.done();
    await step(0);
    expect(b.acked.value).toBe(true);
  });
});
