import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChEngine } from '../../src/storage/clickhouse/client.js';
import { createSightline, type Sightline } from '../../src/server.js';
import type { AppConfig } from '../../src/core/config.js';
import type { TestServer } from '../helpers/server.js';
import { chMode } from './clickhouse-store-fixture.js';

export interface SecondServer {
  s: Sightline;
  url: string;
  close(): Promise<void>;
}

/**
 * A second Sightline on the stores of `t` (issue 20: another process, or machine, of the same
 * installation), serving HTTP: the same PostgreSQL database with a SQLite file of its own (or, with
 * `sameFile` or without PostgreSQL, `t`'s file), and the same ClickHouse database — its URL, or on
 * chdb the in-process engine, which only its owner closes. `engine` gives another ClickHouse instead
 * (then no URL is passed on).
 */
export async function startSecondServer(t: TestServer, o: { now?: () => number; engine?: ChEngine; sameFile?: boolean } = {}): Promise<SecondServer> {
  const dir = mkdtempSync(join(tmpdir(), 'sightline-second-'));
  const ch = o.engine ?? (chMode === 'chdb' ? t.s.services.clickhouse?.engine : undefined);
  const { clickhouseUrl, ...config } = t.s.config;
  const s = createSightline(
    {
      ...config,
      ...(clickhouseUrl && !o.engine ? { clickhouseUrl } : {}),
      dbFile: t.s.config.databaseUrl && !o.sameFile ? join(dir, 'second.db') : t.dbFile,
      port: 0,
    },
    { ...(o.now ? { now: o.now } : {}), ...(ch ? { clickhouse: { ...ch, close: async () => {} } } : {}) },
  );
  const server = http.createServer(s.app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    s,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A Sightline over `dbFile` and the PostgreSQL database `databaseUrl`, serving HTTP (another process,
 * as far as a test can tell: the adoption and copy tests start one on a file another server wrote).
 */
export async function startServerOn(dbFile: string, databaseUrl: string, config: Partial<AppConfig> = {}): Promise<{ s: Sightline; url: string; stop(): Promise<void> }> {
  const s = createSightline({ logLevel: 'silent', authFailureLimit: { limit: 1_000_000, windowSeconds: 60 }, ...config, dbFile, databaseUrl, port: 0, host: '127.0.0.1' });
  const server = http.createServer(s.app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    s,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async stop() {
      await new Promise<void>((r) => (server.close(() => r()), server.closeAllConnections()));
      await s.close();
    },
  };
}
