import { z } from 'zod';
import { defineOperation } from './define.js';
import { ForbiddenError } from '../src/core/errors.js';
import { projectId } from './shared.js';

const requestRow = z.object({ operation: z.string().describe('operationId, or METHOD and route for endpoints outside the catalogue (ingest, OAuth, MCP).'), status: z.number().int(), count: z.number() });

/** What both scale-out stores report: whether they answer, their version, the schema version applied and the latest known. */
const storeStatus = z.object({
  reachable: z.boolean(),
  error: z.string().optional(),
  version: z.string().optional(),
  schema: z.object({ version: z.number().int(), latest: z.number().int() }).optional(),
});

export const status = defineOperation({
  operationId: 'system.status',
  tag: 'system',
  summary: "The server's own health and figures: readiness, database size, requests, ingest counts",
  description:
    'Server-wide figures, the same as GET /metrics exposes in Prometheus format: readiness checks (database writable, migrations applied, sandbox pool), uptime, database and WAL size with free pages and schema version, the ClickHouse store and PostgreSQL when configured (reachable, version, schema; for ClickHouse rows and bytes per table), ingest writes waiting for commit, requests answered by operation and status since start, telemetry items stored by signal and outcome, and the other self-metric gauges. Asked through a project, the figures are server-wide, so only its organization\'s owners (OAuth) and keys holding `*` may read them.',
  method: 'GET',
  path: '/v1/projects/{project_id}/system/status',
  scopes: ['project:write'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId }),
  output: z.object({
    ready: z.boolean(),
    checks: z.record(z.string(), z.object({ ok: z.boolean(), detail: z.string().optional() })),
    uptime_seconds: z.number().int(),
    database: z.object({
      file: z.string(),
      db_bytes: z.number().int(),
      wal_bytes: z.number().int(),
      page_size: z.number().int(),
      page_count: z.number().int(),
      freelist_pages: z.number().int(),
      schema: z.object({ version: z.number().int(), latest: z.number().int(), pending: z.number().int() }),
    }),
    write_queue_depth: z.number().int(),
    clickhouse: storeStatus
      .extend({
        tables: z.record(z.string(), z.object({ rows: z.number(), bytes: z.number() })).optional().describe('Rows and bytes on disk per table (spans, trace_chunks, entry_operations).'),
        mutations_pending: z.number().int().optional().describe('Retention deletes still running in the background.'),
      })
      .nullable()
      .describe('The ClickHouse store when SIGHTLINE_CLICKHOUSE_URL is set (null otherwise): reachable, version, schema, rows and bytes per table.'),
    postgres: storeStatus
      .nullable()
      .describe('PostgreSQL when control data is there (SIGHTLINE_DATABASE_URL; null otherwise): reachable, server version, schema version applied and the latest this code knows.'),
    retention: z
      .object({
        started_at: z.number(),
        ms: z.number(),
        expired: z.record(z.string(), z.number()),
        trimmed: z.record(z.string(), z.number()),
        reclaimed_pages: z.number(),
        budget: z.object({ max_bytes: z.number(), used_bytes: z.number(), state: z.enum(['off', 'ok', 'trimmed', 'over_budget']) }),
      })
      .nullable()
      .describe('The last expiry pass (null before the first): rows deleted by retention and by the disk budget, pages returned to the file system.'),
    requests: z.array(requestRow).describe('Most frequent first.'),
    ingest: z.array(z.object({ signal: z.string(), outcome: z.string(), count: z.number() })),
    gauges: z.record(z.string(), z.unknown()).describe('Other self-metric gauges (sandbox pool, retention progress…) by name.'),
  }),
  errors: [{ status: 403, code: 'owner_required', when: 'the credential is not an organization owner or a `*` key' }],
  example: {},
  display: { columns: ['operation', 'status', 'count'] },
  async handler(_input, { principal, services, project }) {
    const owner = principal.kind === 'api_key' ? principal.scopes.includes('*') : principal.roles[project!.orgId] === 'owner';
    if (!owner) throw new ForbiddenError('owner_required', 'system.status shows server-wide figures: it needs an organization owner or a key holding `*`.');
    if (!services.serverStatus) throw new ForbiddenError('owner_required', 'This process runs no server.');
    return (await services.serverStatus()) as never;
  },
});
