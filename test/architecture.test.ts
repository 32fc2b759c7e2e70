/**
 * Imports run one way (architecture.md, rule 6): faces → src/core → operations → src/domain and
 * src/storage. Domain and storage import no face, core or operation; the sandbox imports nothing
 * of the project at all (it reaches operations only through the bridge it is handed).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const FACES = ['src/http', 'src/mcp', 'src/cli', 'src/client', 'src/ingest', 'src/oauth'];

function files(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(join(ROOT, p)).isDirectory()) return files(p);
    return /\.(ts|mjs)$/.test(name) ? [p] : [];
  });
}

/** Project-relative targets of a file's relative imports (static and dynamic). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const specs = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]!);
  return specs.map((s) => relative(ROOT, resolve(ROOT, dirname(file), s)));
}

const within = (target: string, areas: string[]) => areas.some((a) => target === a || target.startsWith(a + '/'));

const RULES: { area: string; allowed: string[] }[] = [
  { area: 'src/domain', allowed: ['src/domain'] },
  { area: 'src/storage', allowed: ['src/storage', 'src/domain'] },
  { area: 'sandbox', allowed: ['sandbox'] },
  { area: 'operations', allowed: ['operations', 'src/core', 'src/domain', 'src/storage'] },
  { area: 'src/core', allowed: ['src/core', 'operations', 'src/domain', 'src/storage'] },
];

describe('import direction', () => {
  for (const rule of RULES) {
    it(`${rule.area} imports only ${rule.allowed.join(', ')}`, () => {
      const offending = files(rule.area).flatMap((f) => importsOf(f).filter((t) => !within(t, rule.allowed)).map((t) => `${f} → ${t}`));
      expect(offending).toEqual([]);
    });
  }

  it('no layer below the faces imports a face', () => {
    const below = ['src/domain', 'src/storage', 'src/core', 'operations', 'sandbox'].flatMap(files);
    const offending = below.flatMap((f) => importsOf(f).filter((t) => within(t, FACES)).map((t) => `${f} → ${t}`));
    expect(offending).toEqual([]);
  });
});
