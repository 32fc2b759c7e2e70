import { defineConfig } from 'vitest/config';
import { chdbMissing, clickHouseServerMissing } from './test/support/clickhouse.js';
import { postgresMissing } from './test/support/postgres.js';

/**
 * Issue 20: these files also run with telemetry in ClickHouse — on Debian's clickhouse-server 18.16
 * (scripts/install-clickhouse.sh installs it; the scale-out project) — and must answer exactly as on
 * SQLite; the storage files among them on chdb too. A project whose engine is missing is left out, saying why.
 */
const CLICKHOUSE_FILES = [
  'test/operations/traces.*.test.ts',
  'test/queries/traces.test.ts',
  'test/operations/errors.traces-commits.test.ts',
  'test/storage/clickhouse-*.test.ts',
  'test/operations/logs.*.test.ts',
  'test/operations/observability.summary.test.ts',
  'test/operations/metrics.*.test.ts',
  'test/queries/metrics.test.ts',
  'test/operations/events.*.test.ts',
  'test/ingest/posthog.test.ts',
  'test/operations/revenue.test.ts',
  'test/ai/*.test.ts',
  // Release health (ClickHouse migration 10): the operations, the CLI's gate and the end-to-end run.
  'test/operations/releases.test.ts',
  'test/cli/release-gate.test.ts',
  'test/e2e/releases.test.ts',
];

/**
 * On chdb (ClickHouse 26 in-process, one engine per process: a fresh process per file) only the
 * ClickHouse storage files: the stores, two servers on one database, retention, migrate, and the
 * randomized equivalence files comparing every read with SQLite's — what proves the SQL on a current
 * release. The operation tests run on 18.16 (scale-out) and SQLite; running them on chdb too cost
 * about a minute and a half of the suite's ten.
 */
const CHDB_FILES = ['test/storage/clickhouse-*.test.ts'];

/**
 * Issue 20, the scale-out project: the ClickHouse files and the tests of every domain whose control
 * data moved run with control data in PostgreSQL (a fresh database per test server on the local
 * PostgreSQL) and spans and logs in the private clickhouse-server — every face (REST, MCP, CLI, OAuth,
 * pages) and the multi-process test.
 */
const SCALE_OUT_FILES = [
  ...CLICKHOUSE_FILES,
  // (minus the randomized equivalence files below: they compare telemetry reads only, control
  // data does not enter them, and chdb runs them; the operation tests prove the same SQL on 18.16)
  'test/operations/feedback.*.test.ts',
  'test/operations/errors.*.test.ts',
  'test/errors-context/*.test.ts',
  'test/storage/error-batch-groups.test.ts',
  'test/ingest/sentry/**/*.test.ts',
  'test/operations/deployments.test.ts',
  'test/http/api-keys.test.ts',
  'test/http/rate-limit-shared.test.ts',
  'test/http/rate-limit.test.ts',
  // Nothing the processes share is left in a process's SQLite file.
  'test/storage/scale-out-sqlite.test.ts',
  // The faces over the scale-out stores: the examples with the real SDKs, MCP Code Mode, an agent's
  // tasks end to end, and the log and summary queries.
  'test/examples.test.ts',
  'test/mcp/execute.test.ts',
  'test/e2e/agent-tasks.test.ts',
  'test/queries/logs.test.ts',
  'test/queries/summary.test.ts',
  'test/oauth/**/*.test.ts',
  'test/status/**/*.test.ts',
  'test/automations/**/*.test.ts',
  'test/remote/**/*.test.ts',
  'test/threads/**/*.test.ts',
  'test/agent/**/*.test.ts',
  // PostgreSQL migration 5: the revenue ledger, webhook idempotency and the analytics state.
  'test/operations/revenue*.test.ts',
  'test/ingest/stripe*.test.ts',
  // PostgreSQL migration 6: release-health sessions, replays, check-ins, ingest outcomes (Langfuse
  // trace info and fixer dispatches: test/ai, test/automations above).
  'test/ingest/http.test.ts',
  'test/ingest/limits.test.ts',
  'test/e2e/sdk-ingest.test.ts',
  // The proxy of docker-compose.yml (deploy/nginx.conf) in front of three processes.
  'test/deploy/*.test.ts',
  // Every operation's input fuzzed (schema-drawn and hostile values): on these stores it found a NUL
  // that PostgreSQL text cannot hold and a subnormal number 18.16 cannot parse, both 500s.
  'test/security/fuzz.test.ts',
];

const pgMissing = await postgresMissing();
const scaleOutMissing = clickHouseServerMissing() ?? pgMissing;
if (scaleOutMissing) console.log(`[vitest] project scale-out skipped: ${scaleOutMissing}`);

// clickhouse-server 18.16 with control data in SQLite: only when the scale-out project (the same
// files on 18.16, control data in PostgreSQL) cannot run — running both would double the suite's time.
const engines: { name: string; mode: string; missing: string | null; globalSetup?: string[] }[] = [
  {
    name: 'clickhouse-18',
    mode: 'server',
    missing: clickHouseServerMissing() ?? (scaleOutMissing ? null : 'the scale-out project runs these files on clickhouse-server 18.16 with PostgreSQL'),
    globalSetup: ['test/support/clickhouse-global.ts'],
  },
  { name: 'clickhouse-chdb', mode: 'chdb', missing: chdbMissing() },
];
for (const e of engines) if (e.missing) console.log(`[vitest] project ${e.name} skipped: ${e.missing}`);

export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    // Test files share their worker's module cache (no file mocks modules or leaves globals behind):
    // importing the server's modules once per worker instead of once per file saves about 40 % of the time.
    isolate: false,
    projects: [
      { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'], exclude: ['test/storage/clickhouse-*.test.ts', 'test/deploy/*.test.ts', '**/node_modules/**'] } },
      ...engines
        .filter((e) => !e.missing)
        .map((e) => ({
          extends: true as const,
          test: {
            name: e.name,
            include: e.mode === 'chdb' ? CHDB_FILES : CLICKHOUSE_FILES,
            env: { SIGHTLINE_TEST_CLICKHOUSE: e.mode },
            ...(e.globalSetup ? { globalSetup: e.globalSetup } : {}),
            // chdb is one embedded engine per process: each file gets a fresh process.
            ...(e.mode === 'chdb' ? { isolate: true } : {}),
          },
        })),
      ...(scaleOutMissing
        ? []
        : [
            {
              extends: true as const,
              test: {
                name: 'scale-out',
                include: SCALE_OUT_FILES,
                exclude: ['test/storage/clickhouse-equivalence.test.ts', 'test/storage/clickhouse-capture-equivalence.test.ts', 'test/storage/clickhouse-logs-equivalence.test.ts', 'test/storage/clickhouse-metrics-equivalence.test.ts', 'test/storage/clickhouse-ai-equivalence.test.ts', 'test/storage/clickhouse-errors-equivalence.test.ts', '**/node_modules/**'],
                // Internal errors (a 500's cause) are printed: a failure here says which store refused what.
                env: { SIGHTLINE_TEST_CLICKHOUSE: 'server', SIGHTLINE_TEST_POSTGRES: '1', SIGHTLINE_TEST_LOG_LEVEL: 'error' },
                globalSetup: ['test/support/clickhouse-global.ts'],
              },
            },
          ]),
    ],
  },
});
