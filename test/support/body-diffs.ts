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
