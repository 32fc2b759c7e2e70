import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';

export interface FeedbackRow {
  id: string;
  project_id: string;
  message: string;
  contact_email: string | null;
  name: string | null;
  environment: string | null;
  user_id: string | null;
  release: string | null;
  service: string | null;
  url: string | null;
  session_id: string | null;
  replay_id: string | null;
  trace_id: string | null;
  error_group_id: string | null;
  metadata: Record<string, string | number | boolean | null> | null;
  status: 'new' | 'reviewed' | 'archived';
  source: string;
  created_at: number;
  updated_at: number;
}

export type FeedbackInsert = Omit<FeedbackRow, 'project_id' | 'status' | 'updated_at'>;

export interface FeedbackFilter {
  status?: string[];
  environment?: string;
  release?: string;
  service?: string;
  user_id?: string;
  session_id?: string;
  replay_id?: string;
  trace_id?: string;
  error_group_id?: string;
  q?: string;
  /** Case-insensitive literal substring of url. */
  url?: string;
  /** Case-insensitive literal substring of name, contact_email or user_id. */
  contact?: string;
  fromMs?: number;
  toMs?: number;
  /** Keyset position: rows strictly older than (created_at, id). */
  before?: { created_at: number; id: string };
  limit: number;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
function fromRow(r: any): FeedbackRow {
  return { ...r, project_id: String(r.project_id), metadata: r.metadata ? JSON.parse(r.metadata) : null };
}

/** Every column of a FeedbackRow, in the order `fromArray` reads them. */
const ROW_COLUMNS = [
  'id', 'project_id', 'message', 'contact_email', 'name', 'environment', 'user_id', 'release', 'service', 'url', 'session_id',
  'replay_id', 'trace_id', 'error_group_id', 'metadata', 'status', 'source', 'created_at', 'updated_at',
] as const;

function fromArray(a: any[]): FeedbackRow {
  return {
    id: a[0], project_id: String(a[1]), message: a[2], contact_email: a[3], name: a[4], environment: a[5], user_id: a[6], release: a[7],
    service: a[8], url: a[9], session_id: a[10], replay_id: a[11], trace_id: a[12], error_group_id: a[13],
    metadata: a[14] ? JSON.parse(a[14]) : null, status: a[15], source: a[16], created_at: a[17], updated_at: a[18],
  };
}

const COLUMNS = [
  'id', 'message', 'contact_email', 'name', 'environment', 'user_id', 'release', 'service', 'url',
  'session_id', 'replay_id', 'trace_id', 'error_group_id', 'metadata', 'source', 'created_at',
] as const;

export function createFeedbackRepo(db: Db) {
  const s = {
    insert: db.prepare(
      `INSERT INTO feedback (project_id, ${COLUMNS.join(', ')}, updated_at) VALUES (@project_id, ${COLUMNS.map((c) => '@' + c).join(', ')}, @created_at)`,
    ),
    get: db.prepare('SELECT * FROM feedback WHERE project_id = ? AND id = ?'),
    updateStatus: db.prepare('UPDATE feedback SET status = ?, updated_at = ? WHERE project_id = ? AND id = ?'),
    countSince: db.prepare('SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM feedback WHERE project_id = ? AND created_at > ?'),
    nthNewestSince: db.prepare(
      'SELECT created_at FROM feedback WHERE project_id = ? AND created_at > ? ORDER BY created_at DESC LIMIT 1 OFFSET ?',
    ),
    idem: db.prepare('SELECT payload_hash, feedback_id FROM feedback_idempotency WHERE project_id = ? AND key = ?'),
    insertIdem: db.prepare('INSERT INTO feedback_idempotency (project_id, key, payload_hash, feedback_id, created_at) VALUES (?, ?, ?, ?, ?)'),
  };

  // One statement per filter combination, prepared once (compiling SQL per request is a hot-path cost).
  const statements = new Map<string, Statement>();
  const cached = (sql: string): Statement => {
    let st = statements.get(sql);
    if (!st) statements.set(sql, (st = db.prepare(sql)));
    return st;
  };

  return {
    insert(projectId: string, row: FeedbackInsert, idempotency?: { key: string; payloadHash: string }): FeedbackRow {
      db.transaction(() => {
        s.insert.run({ ...row, project_id: Number(projectId), metadata: row.metadata ? JSON.stringify(row.metadata) : null });
        if (idempotency) s.insertIdem.run(Number(projectId), idempotency.key, idempotency.payloadHash, row.id, row.created_at);
      })();
      return fromRow(s.get.get(Number(projectId), row.id));
    },
    get(projectId: string, id: string): FeedbackRow | undefined {
      const r = s.get.get(Number(projectId), id);
      return r ? fromRow(r) : undefined;
    },
    updateStatus(projectId: string, id: string, status: string, now: number): boolean {
      return s.updateStatus.run(status, now, Number(projectId), id).changes > 0;
    },
    /** Records created after `sinceMs`: their number, and the creation time of the oldest. */
    countSince(projectId: string, sinceMs: number): { n: number; oldest: number | null } {
      return s.countSince.get(Number(projectId), sinceMs) as { n: number; oldest: number | null };
    },
    /** created_at of the k-th newest record after `sinceMs` (k from 0), for quota recovery times. */
    nthNewestSince(projectId: string, sinceMs: number, k: number): number | null {
      const r = s.nthNewestSince.get(Number(projectId), sinceMs, k) as { created_at: number } | undefined;
      return r?.created_at ?? null;
    },
    idempotency(projectId: string, key: string): { payload_hash: string; feedback_id: string } | undefined {
      return s.idem.get(Number(projectId), key) as { payload_hash: string; feedback_id: string } | undefined;
    },
    list(projectId: string, f: FeedbackFilter): FeedbackRow[] {
      const where = ['project_id = ?'];
      const args: unknown[] = [Number(projectId)];
      const eq = (col: string, v: string | undefined) => {
        if (v !== undefined) {
          where.push(`${col} = ?`);
          args.push(v);
        }
      };
      if (f.status?.length) {
        where.push(`status IN (${f.status.map(() => '?').join(',')})`);
        args.push(...f.status);
      }
      eq('environment', f.environment);
      eq('release', f.release);
      eq('service', f.service);
      eq('user_id', f.user_id);
      eq('session_id', f.session_id);
      eq('replay_id', f.replay_id);
      eq('trace_id', f.trace_id);
      eq('error_group_id', f.error_group_id);
      // LIKE with every wildcard escaped: a literal, case-insensitive (ASCII) substring match.
      const like = (v: string) => '%' + v.replace(/[\\%_]/g, (c) => '\\' + c) + '%';
      if (f.q) {
        where.push("message LIKE ? ESCAPE '\\'");
        args.push(like(f.q));
      }
      if (f.url) {
        where.push("url LIKE ? ESCAPE '\\'");
        args.push(like(f.url));
      }
      if (f.contact) {
        where.push("(name LIKE ? ESCAPE '\\' OR contact_email LIKE ? ESCAPE '\\' OR user_id LIKE ? ESCAPE '\\')");
        args.push(like(f.contact), like(f.contact), like(f.contact));
      }
      if (f.fromMs !== undefined) {
        where.push('created_at >= ?');
        args.push(f.fromMs);
      }
      if (f.toMs !== undefined) {
        where.push('created_at <= ?');
        args.push(f.toMs);
      }
      if (f.before) {
        where.push('(created_at < ? OR (created_at = ? AND id < ?))');
        args.push(f.before.created_at, f.before.created_at, f.before.id);
      }
      // Rows as arrays, mapped by position: better-sqlite3 builds plain arrays far faster than keyed objects.
      const sql = `SELECT ${ROW_COLUMNS.join(', ')} FROM feedback WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT ?`;
      return (cached(sql).raw(true).all(...args, f.limit) as unknown[][]).map(fromArray);
    },
  };
}

export type FeedbackRepo = ReturnType<typeof createFeedbackRepo>;
