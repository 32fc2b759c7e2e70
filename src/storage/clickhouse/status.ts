/**
 * What system.status and /readyz say about the ClickHouse store (issue 20): whether it answers, its
 * version, the schema version applied, rows and bytes on disk per table, and background mutations
 * (retention deletes) still running. Runs on 18.16 and current releases (system.parts.bytes_on_disk).
 */
import type { ChEngine } from './client.js';
import { CH_MIGRATIONS } from './schema.js';

export interface ClickHouseStatus {
  reachable: boolean;
  error?: string;
  version?: string;
  schema?: { version: number; latest: number };
  tables?: Record<string, { rows: number; bytes: number }>;
  mutations_pending?: number;
}

const withTimeout = <T>(p: Promise<T>, ms: number): Promise<T> => {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
};

/** One round of queries; an unreachable or failing server gives `reachable: false` with the error. */
export async function clickHouseStatus(engine: ChEngine, timeoutMs = 2000): Promise<ClickHouseStatus> {
  try {
    const [[v], parts, [m], [mut]] = await withTimeout(
      Promise.all([
        engine.query<{ v: string }>('SELECT version() AS v'),
        engine.query<{ table: string; rows: number; bytes: number }>(
          'SELECT table, sum(rows) AS rows, sum(bytes_on_disk) AS bytes FROM system.parts WHERE database = currentDatabase() AND active GROUP BY table ORDER BY table',
        ),
        engine.query<{ v: number }>('SELECT max(version) AS v FROM sightline_migrations'),
        engine.query<{ n: number }>('SELECT count() AS n FROM system.mutations WHERE database = currentDatabase() AND is_done = 0'),
      ]),
      timeoutMs,
    );
    return {
      reachable: true,
      version: v?.v ?? '',
      schema: { version: Number(m?.v ?? 0), latest: Math.max(0, ...CH_MIGRATIONS.map((x) => x.version)) },
      tables: Object.fromEntries(parts.filter((p) => p.table !== 'sightline_migrations').map((p) => [p.table, { rows: Number(p.rows), bytes: Number(p.bytes) }])),
      mutations_pending: Number(mut?.n ?? 0),
    };
  } catch (err) {
    return { reachable: false, error: (err as Error).message.slice(0, 300) };
  }
}
