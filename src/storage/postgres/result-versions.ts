/**
 * The revenue result cache's shared versions (issue 20, several processes): one row per project in
 * `revenue_result_versions` (PostgreSQL migration 5), moved by every revenue write, whichever process
 * made it, and read before each cached computation, so a result kept by one process is not served
 * after another process wrote revenue (domain/revenue/result-cache.ts). Inside a transaction the bump
 * commits with the writes; outside one it commits at once.
 */
import type { SharedVersions } from '../../domain/revenue/result-cache.js';
import type { SyncPg } from './sync-client.js';

export function pgResultVersions(pg: SyncPg): SharedVersions {
  return {
    bump(projectId) {
      pg.query(
        'INSERT INTO revenue_result_versions (project_id, v) VALUES ($1, 1) ON CONFLICT (project_id) DO UPDATE SET v = revenue_result_versions.v + 1',
        [Number(projectId)],
      );
    },
    version(projectId) {
      return Number(pg.queryArrays('SELECT v FROM revenue_result_versions WHERE project_id = $1', [Number(projectId)]).rows[0]?.[0] ?? 0);
    },
  };
}
