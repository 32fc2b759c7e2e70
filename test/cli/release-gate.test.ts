/**
 * `sightline releases gate` against a running server: the JSON report and every exit code
 * (0 passed, 1 API error, 2 usage, 3 regressed, 4 insufficient data with the flag), waiting until
 * the comparison leaves insufficient_data, and the real binary's wiring.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { deploy, MIN, requests, sendSpans } from '../operations/releases-fixtures.js';
import { EXIT_INSUFFICIENT, EXIT_REGRESSED, parseDuration, releaseGate } from '../../src/cli/release-gate.js';
import { runBin } from './helpers.js';

const T0 = Date.parse('2026-04-01T00:00:00.000Z');
let clock = T0 + 3 * 60 * MIN;
let t: TestServer;
let env: Record<string, string>;

async function gate(argv: string[], opts: { key?: string; sleep?: (ms: number) => Promise<void> } = {}) {
  let stdout = '';
  let stderr = '';
  const code = await releaseGate(argv, {
    io: {
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
      stdin: Readable.from([]),
      env: { ...env, ...(opts.key ? { SIGHTLINE_API_KEY: opts.key } : {}) },
    },
    now: () => clock,
    sleep: opts.sleep ?? (async (ms) => void (clock += ms)),
  });
  return { code, stdout, stderr, report: stdout ? JSON.parse(stdout) : null };
}

/** old serves [0, 60) min, new from 60 min; `prev`/`cur` requests in each hour. */
async function twoReleases(service: string, prev: { n: number; errors?: number; ms?: number }, cur: { n: number; errors?: number; ms?: number }) {
  const s = { service, environment: 'production' };
  await deploy(t, { ...s, version: 'old' }, T0);
  await deploy(t, { ...s, version: 'new' }, T0 + 60 * MIN);
  await sendSpans(t, { ...s, version: 'old' }, requests(T0, T0 + 60 * MIN, prev.n, prev));
  if (cur.n) await sendSpans(t, { ...s, version: 'new' }, requests(T0 + 60 * MIN, T0 + 120 * MIN, cur.n, cur));
}

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  env = { SIGHTLINE_URL: t.url, SIGHTLINE_API_KEY: t.mintKey(['deployments:read', 'errors:read']) };
  await twoReleases('g-bad', { n: 100, ms: 20 }, { n: 100, errors: 10, ms: 20 });
  await twoReleases('g-ok', { n: 100, ms: 20 }, { n: 100, ms: 21 });
  await twoReleases('g-thin', { n: 100 }, { n: 10 });
});
afterAll(() => t.close());

describe('sightline releases gate', () => {
  it('exits 3 on regressed and prints the JSON report with the deciding signal', async () => {
    const r = await gate(['--service', 'g-bad', '--environment', 'production']);
    expect(r.code).toBe(EXIT_REGRESSED);
    expect(r.report).toMatchObject({ result: 'fail', exit_code: 3, comparison: 'regressed', decided_by: 'error_rate', release: { version: 'new', is_current: true }, previous_release: { version: 'old' } });
    expect(r.report.current).toMatchObject({ request_count: 100, error_count: 10 });
    expect(r.report.previous).toMatchObject({ request_count: 100, error_count: 0 });
  });

  it('exits 0 when the release is unchanged, and judges a given --version', async () => {
    const r = await gate(['--service', 'g-ok', '--environment', 'production']);
    expect(r.code).toBe(0);
    expect(r.report).toMatchObject({ result: 'pass', comparison: 'unchanged', decided_by: 'no_threshold_crossed' });
    const old = await gate(['--service', 'g-ok', '--environment', 'production', '--version', 'old']);
    expect(old.report).toMatchObject({ comparison: 'insufficient_data', decided_by: 'no_previous_release', release: { version: 'old' } });
    expect(old.code).toBe(0);
  });

  it('passes insufficient data by default and exits 4 on it with --fail-on-insufficient-data, after waiting', async () => {
    const before = clock;
    const lenient = await gate(['--service', 'g-thin', '--environment', 'production', '--wait', '2m', '--interval', '1m']);
    expect(lenient.code).toBe(0);
    expect(lenient.report).toMatchObject({ comparison: 'insufficient_data', decided_by: 'too_few_requests', checks: 3, waited_seconds: 120 });
    clock = before;
    const strict = await gate(['--service', 'g-thin', '--environment', 'production', '--fail-on-insufficient-data']);
    expect(strict.code).toBe(EXIT_INSUFFICIENT);
    expect(strict.report).toMatchObject({ result: 'fail', exit_code: 4, checks: 1 });
    const missing = await gate(['--service', 'g-thin', '--environment', 'production', '--version', 'nope', '--fail-on-insufficient-data']);
    expect(missing.code).toBe(EXIT_INSUFFICIENT);
    expect(missing.report).toMatchObject({ reason: 'release_not_found' });
  });

  it('waits until the comparison leaves insufficient_data, re-checking while the deploy collects traffic', async () => {
    const s = { service: 'g-wait', environment: 'production' };
    await deploy(t, { ...s, version: 'v1' }, T0);
    await sendSpans(t, { ...s, version: 'v1' }, requests(T0, T0 + 60 * MIN, 1000));
    await deploy(t, { ...s, version: 'v2' }, T0 + 60 * MIN);
    const saved = clock;
    clock = T0 + 61 * MIN; // one minute after the deploy: under 5 minutes
    let sent = 0;
    try {
      const r = await gate(['--service', 'g-wait', '--environment', 'production', '--wait', '15m', '--interval', '5m'], {
        sleep: async (ms) => {
          // Five minutes of traffic arrive while the gate waits, with a tenth failing.
          await sendSpans(t, { ...s, version: 'v2' }, requests(clock, clock + ms, 60, { errors: 6 }));
          sent++;
          clock += ms;
        },
      });
      expect(sent).toBe(1);
      expect(r.report).toMatchObject({ comparison: 'regressed', decided_by: 'error_rate', checks: 2, waited_seconds: 300 });
      expect(r.code).toBe(EXIT_REGRESSED);
    } finally {
      clock = saved;
    }
  });

  it('exits 2 on usage errors and 1 on an API error', async () => {
    expect((await gate(['--environment', 'production'])).code).toBe(2);
    expect((await gate(['--service', 'x', '--environment', 'production', '--wait', 'soon'])).code).toBe(2);
    const denied = await gate(['--service', 'g-bad', '--environment', 'production'], { key: t.mintKey(['deployments:read']) });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain('403');
  });

  it('parses durations', () => {
    expect([parseDuration('90s'), parseDuration('15m'), parseDuration('1h30m'), parseDuration('45')]).toEqual([90_000, 900_000, 5_400_000, 45_000]);
    expect(() => parseDuration('15 minutes')).toThrow();
  });

  it('is wired into the real binary: `sightline releases gate` exits 3 on a regressed release', async () => {
    const r = await runBin(['releases', 'gate', '--service', 'g-bad', '--environment', 'production'], env);
    expect(r.code, r.stderr).toBe(3);
    expect(JSON.parse(r.stdout)).toMatchObject({ comparison: 'regressed' });
  });
});
