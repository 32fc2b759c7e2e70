import { expect } from 'vitest';
import { api, type TestServer } from '../helpers/server.js';

/**
 * Differences between two answers (the equivalence tests: SQLite's and ClickHouse's), as paths with
 * both values: arrays by length and element, objects by keys and value, numbers by `sameNumber`
 * (default: equal, NaN to NaN), anything else exactly.
 */
export function bodyDiffs(x: unknown, y: unknown, sameNumber: (x: number, y: number, path: string) => boolean = (a, b) => a === b || Object.is(a, b), path = '', out: string[] = []): string[] {
  if (typeof x === 'number' && typeof y === 'number') {
    if (!sameNumber(x, y, path)) out.push(`${path}: ${x} != ${y}`);
  } else if (Array.isArray(x) && Array.isArray(y)) {
    if (x.length !== y.length) out.push(`${path}: length ${x.length} != ${y.length}`);
    else x.forEach((v, i) => bodyDiffs(v, y[i], sameNumber, `${path}[${i}]`, out));
  } else if (x && y && typeof x === 'object' && typeof y === 'object') {
    const kx = Object.keys(x).sort();
    const ky = Object.keys(y).sort();
    if (kx.join() !== ky.join()) out.push(`${path}: keys ${kx} != ${ky}`);
    else for (const k of kx) bodyDiffs((x as Record<string, unknown>)[k], (y as Record<string, unknown>)[k], sameNumber, `${path}.${k}`, out);
  } else if (x !== y) out.push(`${path}: ${JSON.stringify(x)} != ${JSON.stringify(y)}`);
  return out;
}

/** Numbers equal up to 1e-9 relative (sums whose order differs between engines). */
export const nearlySame = (x: number, y: number) => x === y || Math.abs(x - y) <= 1e-9 * Math.max(1, Math.abs(x));

/**
 * GETs every path on two test servers (SQLite's and ClickHouse's, each under its own project) and
 * expects the same status and body (numbers by `nearlySame`). Returns how many answered 200 and how
 * many answers `nonEmpty` says hold data.
 */
export async function compareOnBoth(
  a: TestServer,
  b: TestServer,
  paths: readonly string[],
  nonEmpty: (body: any) => boolean, // eslint-disable-line @typescript-eslint/no-explicit-any
): Promise<{ ok: number; nonEmpty: number }> {
  const out = { ok: 0, nonEmpty: 0 };
  for (const p of paths) {
    const x = await api(a, 'GET', `/v1/projects/${a.projectId}${p}`, { key: a.keys.admin });
    const y = await api(b, 'GET', `/v1/projects/${b.projectId}${p}`, { key: b.keys.admin });
    expect(y.status, p).toBe(x.status);
    expect(bodyDiffs(x.body, y.body, nearlySame), p).toEqual([]);
    if (x.status === 200) out.ok++;
    if (nonEmpty(x.body)) out.nonEmpty++;
  }
  return out;
}
