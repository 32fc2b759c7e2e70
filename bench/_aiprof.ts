import { openDatabase } from '../src/storage/db.js';
import { createAiRepo } from '../src/storage/ai-repo.js';
import { emptyDraft, finalizeObservation } from '../src/domain/ai/observation.js';
import { rng } from './lib.js';
const DAY = 86_400_000;
const models = ['gpt-4o-mini', 'gpt-4o', 'claude-sonnet-4-20250514', 'gemini-2.5-flash'];
function seed(dbFile: string, projectId: string, n: number, toMs: number): number {
  const db = openDatabase(dbFile);
  const repo = createAiRepo(db);
  const rand = rng(42);
  const t0 = performance.now();
  const CHUNK = 5000;
  for (let done = 0; done < n; done += CHUNK) {
    const rows: ReturnType<typeof finalizeObservation>[] = [];
    for (let i = done; i < Math.min(n, done + CHUNK); i++) {
      const r = rand();
      const type = r < 0.55 ? 'generation' : r < 0.8 ? 'tool_call' : r < 0.95 ? 'agent_step' : 'retrieval';
      const gen = type === 'generation';
      const started = toMs - 30 * DAY + Math.floor(rand() * 30 * DAY);
      rows.push(
        finalizeObservation(
          emptyDraft({
            observation_id: `seed-${i}`,
            trace_id: `t${Math.floor(i / 8)}`,
            parent_observation_id: i % 8 ? `seed-${i - (i % 8)}` : '',
            // Sessions are short: 20 concurrent sessions per 15-minute slot.
            session_id: `s${Math.floor((started - (toMs - 30 * DAY)) / 900_000)}-${Math.floor(rand() * 20)}`,
            user_id: `u${Math.floor(rand() * 5_000)}`,
            agent_id: `agent-${Math.floor(rand() * 5)}`,
            workflow_id: `wf-${Math.floor(rand() * 3)}`,
            observation_type: type,
            operation: gen ? 'chat' : '',
            status: rand() < 0.03 ? 'error' : 'ok',
            model: gen ? models[Math.floor(rand() * models.length)]! : '',
            provider: gen && rand() < 0.9 ? 'openai' : '',
            started_ms: started,
            ended_ms: started + Math.floor(rand() * 3000),
            prompt_tokens: gen && rand() < 0.95 ? 200 + Math.floor(rand() * 800) : null,
            completion_tokens: gen ? 20 + Math.floor(rand() * 200) : null,
            environment: rand() < 0.8 ? 'production' : 'staging',
            release: `r${Math.floor(rand() * 4)}`,
            input: gen && rand() < 0.9 ? { system: rand() < 0.7 ? 'sys' : undefined, messages: [{ role: 'user', content: 'q' }] } : null,
            output: gen && rand() < 0.92 ? { messages: [{ role: 'assistant', content: 'a' }] } : null,
          }),
          { receivedMs: toMs, projectPrivacy: false },
        ),
      );
    }
    db.transaction(() => repo.writeObservations(projectId, rows))();
  }
  const secs = (performance.now() - t0) / 1000;
  db.close();
  return n / secs;
}


const file = process.argv[2]!; const n = Number(process.argv[3]);
const to = Date.parse('2026-11-20T00:00:00Z');
if (n > 0) console.log('seed rows/s', seed(file, '1', n, to));
const db = openDatabase(file); const ai = createAiRepo(db);
const t = (l: string, f: () => any) => { const a = performance.now(); const c = process.cpuUsage(); const r = f(); const u = process.cpuUsage(c); console.log(l, "wall", (performance.now()-a).toFixed(1), "cpu", ((u.user+u.system)/1000).toFixed(1)); return r; };
const from = to - 30 * DAY + 1234, toMs = to + 60_000;
for (let k = 0; k < 3; k++) {
  t('usage', () => ai.usage('1', from, toMs));
  t('usageBy model', () => ai.usageBy('1', from, toMs, 'model', 10));
  t('usageBy provider', () => ai.usageBy('1', from, toMs, 'provider', 10));
  t('parties session', () => ai.parties('1', 'session', from, toMs, 10));
  t('parties user', () => ai.parties('1', 'user', from, toMs, 10));
  t('qualitySums', () => ai.qualitySums('1', from, toMs, {}));
  t('qualitySums env', () => ai.qualitySums('1', from, toMs, { environment: 'production' }));
  t('scoreCounts', () => ai.scoreCounts('1', from, toMs, {}));
}
