import { defineConfig } from 'vitest/config';
import { chdbMissing, clickHouseServerMissing } from './test/support/clickhouse.js';

/**
 * Issue 20: these files also run with spans and logs in ClickHouse — on Debian's clickhouse-server 18.16
 * (scripts/install-clickhouse.sh installs it) and on chdb (ClickHouse 26 in-process) — and must
 * answer exactly as on SQLite. A project whose engine is missing is left out, saying why.
 */
const CLICKHOUSE_FILES = [
  'test/operations/traces.*.test.ts',
  'test/queries/traces.test.ts',
  'test/operations/errors.traces-commits.test.ts',
  'test/storage/clickhouse-*.test.ts',
  'test/operations/logs.*.test.ts',
  'test/operations/observability.summary.test.ts',
];

const engines: { name: string; mode: string; missing: string | null; globalSetup?: string[] }[] = [
  { name: 'clickhouse-18', mode: 'server', missing: clickHouseServerMissing(), globalSetup: ['test/support/clickhouse-global.ts'] },
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
    projects: [
      { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'], exclude: ['test/storage/clickhouse-*.test.ts', '**/node_modules/**'] } },
      ...engines
        .filter((e) => !e.missing)
        .map((e) => ({
          extends: true as const,
          test: { name: e.name, include: CLICKHOUSE_FILES, env: { SIGHTLINE_TEST_CLICKHOUSE: e.mode }, ...(e.globalSetup ? { globalSetup: e.globalSetup } : {}) },
        })),
    ],
  },
});
