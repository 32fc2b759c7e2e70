/**
 * Expiry names the rows it deletes inside SQL. A key read into JavaScript and bound back could come
 * back changed (a text key holding bytes that are not UTF-8 — a trace id copied by SQL from a blob,
 * say): the delete then matched nothing, the batch still reported the rows it had chosen, and a pass
 * chose the same rows again for ever. A batch reports the rows it deleted.
 */
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/storage/db.js';
import { createRetentionRepo, EXPIRY_TARGETS } from '../../src/storage/retention-repo.js';

const target = (table: string) => EXPIRY_TARGETS.find((t) => t.table === table)!;

describe('expiry batches', () => {
  it('delete rows whose text keys are not valid UTF-8, and count what they deleted', () => {
    const db = openDatabase(':memory:');
    const ins = db.prepare(`INSERT INTO trace_chunks (project_id, trace_id, first_rowid, last_rowid, span_count, error_count, min_start_ms, max_start_ms, max_end_ms)
      VALUES (1, ?, ?, ?, 1, 0, ?, ?, ?)`);
    // Text (not blob) ids made of raw bytes, as `blob || text` gives in SQL, written by SQL alone.
    const bad = db.prepare(`INSERT INTO trace_chunks (project_id, trace_id, first_rowid, last_rowid, span_count, error_count, min_start_ms, max_start_ms, max_end_ms)
      VALUES (1, CAST(x'ff00fe41' AS TEXT) || printf('%04d', @i), @i, @i, 1, 0, 1000 + @i, 1000 + @i, 1001 + @i)`);
    for (let i = 0; i < 5; i++) bad.run({ i });
    expect(db.prepare("SELECT count(*) FROM trace_chunks WHERE hex(trace_id) LIKE 'FF00FE41%'").pluck().get()).toBe(5);
    ins.run('4bf92f3577b34da6a3ce929d0e0e4736', 9, 9, 5000, 5000, 5001); // newer than the cutoff
    const retention = createRetentionRepo(db);
    expect(retention.expireBatch(target('trace_chunks'), '1', 2000, 3)).toBe(3);
    expect(retention.expireBatch(target('trace_chunks'), '1', 2000, 3)).toBe(2);
    expect(retention.expireBatch(target('trace_chunks'), '1', 2000, 3)).toBe(0);
    expect(db.prepare('SELECT count(*) FROM trace_chunks').pluck().get()).toBe(1);
    expect(retention.oldest(target('trace_chunks'), '1')).toBe(5000);
  });
});
