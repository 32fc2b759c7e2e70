import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { createHttpEngine, type ChEngine } from '../../src/storage/clickhouse/client.js';
import { migrateClickHouse } from '../../src/storage/clickhouse/schema.js';
import { openDatabase, type Db } from '../../src/storage/db.js';
import { createChdbEngine, dropDatabase } from './clickhouse.js';

/** The ClickHouse engine of this test project (SIGHTLINE_TEST_CLICKHOUSE: server or chdb), or null outside those projects. */
export const chMode = process.env.SIGHTLINE_TEST_CLICKHOUSE === 'server' || process.env.SIGHTLINE_TEST_CLICKHOUSE === 'chdb' ? process.env.SIGHTLINE_TEST_CLICKHOUSE : null;

/** A new engine on a fresh database of the test project's ClickHouse (chdb: the process's engine). */
export function newChEngine(): ChEngine {
  if (chMode === 'server') return createHttpEngine(`${process.env.SIGHTLINE_TEST_CLICKHOUSE_URL}/u_${process.pid}_${Math.random().toString(36).slice(2)}`);
  return createChdbEngine();
}

/**
 * For a describe block of store tests: a migrated ClickHouse database of the project's engine and a
 * SQLite file for the write batcher, made before its tests and dropped after them.
 */
export function useChStore(): { readonly engine: ChEngine; readonly db: Db } {
  let engine: ChEngine;
  let db: Db;
  let dir: string;
  beforeAll(async () => {
    engine = newChEngine();
    await migrateClickHouse(engine);
    dir = mkdtempSync(join(tmpdir(), 'sightline-ch-store-'));
    db = openDatabase(join(dir, 't.db'));
  });
  afterAll(async () => {
    if (chMode === 'server') await dropDatabase(process.env.SIGHTLINE_TEST_CLICKHOUSE_URL!, (engine as ReturnType<typeof createHttpEngine>).database);
    await engine.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    get engine() {
      return engine;
    },
    get db() {
      return db;
    },
  };
}
