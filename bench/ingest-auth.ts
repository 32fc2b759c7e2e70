/**
 * Ingest authentication per request, in this process: the key and project looked up on every request
 * (before: sha-256 of the secret, the key by hash, the project by id, a principal built) against
 * ingestIdentity through the short key cache (a hit checks two counters, one of them SQLite's
 * `PRAGMA data_version`). Rounds alternate old and new in the same run; CPU µs per call
 * (process.cpuUsage), with the load average.
 *
 *   npx tsx bench/ingest-auth.ts [calls-per-round=20000] [rounds=5]
 */
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSightline } from '../src/server.js';
import { bootstrapOrganization } from '../src/core/bootstrap.js';
import { ingestIdentity } from '../src/ingest/auth.js';
import { hashSecret } from '../src/domain/identity/secrets.js';
import { holdsScope } from '../src/core/scopes.js';
import type { Services } from '../src/core/services.js';

const N = Number(process.argv[2] ?? 20_000);
const ROUNDS = Number(process.argv[3] ?? 5);

/** ingestIdentity as it was before the key cache. */
function before(services: Services, secret: string, now: number) {
  const key = services.identity.apiKeyBySecretHash(hashSecret(secret));
  if (!key || (key.expires_at !== null && key.expires_at <= now)) throw new Error('invalid');
  if (!holdsScope(key.scopes, 'events:ingest')) throw new Error('scope');
  const project = services.identity.projectById(key.project_id);
  if (!project) throw new Error('project');
  return { project, principal: { kind: 'api_key' as const, keyId: key.id, projectId: key.project_id, orgId: project.org_id, scopes: key.scopes } };
}

const dir = mkdtempSync(join(tmpdir(), 'sl-bench-auth-'));
const s = createSightline({ dbFile: join(dir, 'bench.db'), port: 0, host: '127.0.0.1' });
const boot = bootstrapOrganization(s.services, { now: Date.now() });
const variants = { before, 'key cache': ingestIdentity } as const;
const results: Record<string, number[]> = { before: [], 'key cache': [] };
let sink = 0;
for (let r = 0; r < ROUNDS + 1; r++) {
  for (const [name, fn] of r % 2 ? Object.entries(variants).reverse() : Object.entries(variants)) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < N; i++) sink += fn(s.services, boot.ingest_key, Date.now()).project.id.length;
    const c = process.cpuUsage(c0);
    if (r > 0) results[name]!.push((c.user + c.system) / N); // round 0 warms up
  }
}
await s.close();
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
console.log(`ingest authentication, ${N} calls per round, ${ROUNDS} rounds alternated, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')} (sink ${sink % 7})\n`);
console.log('| variant | CPU µs per request (median) | per round |');
console.log('|---|---:|---|');
for (const [name, a] of Object.entries(results)) console.log(`| ${name} | ${med(a).toFixed(2)} | ${a.map((x) => x.toFixed(2)).join(', ')} |`);
