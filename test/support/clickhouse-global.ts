/**
 * Global setup of the `clickhouse-18` test project (vitest.config.ts): one private clickhouse-server
 * for the run; each test server makes a database of its own on it.
 */
import { startClickHouseServer } from './clickhouse.js';

export default async function setup(): Promise<() => Promise<void>> {
  const server = await startClickHouseServer();
  process.env.SIGHTLINE_TEST_CLICKHOUSE_URL = server.url;
  console.log(`clickhouse-server ${server.version} for the ClickHouse test project at ${server.url}`);
  return () => server.stop();
}
