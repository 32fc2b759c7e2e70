/**
 * AI observations mapped on the decode worker (src/domain/ai/prepared.ts) store exactly what the
 * writer stores when it maps the spans itself: every table the AI decorator writes (observations,
 * id levels, trace ranges, scores, rollups, sessions, users) and the spans, row for row, for varied
 * spans — current and older GenAI names, OpenInference, Langfuse attributes, evaluation events, a tool
 * call, an HTTP span between a step and its generation, a span asking for privacy, plain spans — with
 * the project's privacy mode off and on. The slices cross a structured clone as between threads.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { serialize, deserialize } from 'node:v8';
import { ExportTraceServiceRequest } from '../../src/ingest/otlp/schema.js';
import { processJob, type IngestSlice } from '../../src/ingest/process.js';
import { ingestLimitsFromEnv } from '../../src/ingest/limits.js';
import { migrate, openDatabase, type Db } from '../../src/storage/db.js';
import { createSqliteTelemetryWriter } from '../../src/storage/sqlite-telemetry-store.js';
import { withLogRollups } from '../../src/storage/log-rollups.js';
import { withAgentObservations } from '../../src/storage/ai-spans.js';
import { createAiRepo } from '../../src/storage/ai-repo.js';
import { attachPrepared, packRow, takePrepared, unpackRow } from '../../src/domain/ai/prepared.js';
import { emptyDraft, finalizeObservation, FLAG_COLUMNS, type ObservationRow } from '../../src/domain/ai/observation.js';
import { attr } from '../../bench/lib.js';

const dir = mkdtempSync(join(tmpdir(), 'sightline-ai-prepared-'));
const dbs: Db[] = [];
afterAll(() => {
  for (const db of dbs) db.close();
  rmSync(dir, { recursive: true, force: true });
});

function store(name: string, privacy: boolean) {
  const db = openDatabase(join(dir, `${name}.db`));
  migrate(db);
  dbs.push(db);
  const ai = createAiRepo(db);
  if (privacy) ai.setPrivacyMode('1', true, 1);
  return { db, writer: withAgentObservations(db, ai, withLogRollups(db, createSqliteTelemetryWriter(db))) };
}

let seed = 7;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const int = (n: number) => Math.floor(rnd() * n);

/** OTLP/protobuf bodies of agent traces with varied AI (and non-AI) spans. */
function body(n: number): Uint8Array {
  const now = BigInt(Date.parse('2026-11-20T10:00:00Z')) * 1_000_000n;
  const spans = [];
  for (let i = 0; i < n; i++) {
    const traceId = randomBytes(16);
    const root = randomBytes(8);
    const http = randomBytes(8);
    const start = now + BigInt(int(3_600_000)) * 1_000_000n;
    const common = [attr('gen_ai.conversation.id', `conv-${int(5)}`), attr('user.id', `u-${int(4)}`)];
    const mk = (spanId: Buffer, parent: Buffer | null, name: string, attributes: ReturnType<typeof attr>[], ms: number, extra: object = {}) => ({
      traceId, spanId, parentSpanId: parent ?? Buffer.alloc(0), name, kind: 1,
      startTimeUnixNano: start.toString(), endTimeUnixNano: (start + BigInt(ms * 1_000_000)).toString(),
      attributes: name.startsWith('POST') || name.startsWith('SELECT') ? attributes : [...common, ...attributes], status: { code: int(5) === 0 ? 2 : 1 }, ...extra,
    });
    const model = ['gpt-4o-mini', 'claude-sonnet-4-20250514', 'unknown-model'][int(3)]!;
    spans.push(
      mk(root, null, 'invoke_agent support', [attr('gen_ai.operation.name', 'invoke_agent'), attr('gen_ai.agent.id', 'support')], 900),
      mk(http, root, 'POST /v1/chat', [attr('http.request.method', 'POST')], 500),
      mk(randomBytes(8), http, `chat ${model}`, [
        attr('gen_ai.operation.name', 'chat'), attr('gen_ai.provider.name', 'openai'), attr('gen_ai.request.model', model),
        attr('gen_ai.usage.input_tokens', 100 + int(300)), attr('gen_ai.usage.output_tokens', int(80)),
        attr('gen_ai.system_instructions', '[{"type":"text","content":"Be brief."}]'),
        attr('gen_ai.input.messages', `[{"role":"user","parts":[{"type":"text","content":"Question ${i}"}]}]`),
        attr('gen_ai.output.messages', `[{"role":"assistant","parts":[{"type":"text","content":"Answer ${i}"}]}]`),
        ...(int(4) === 0 ? [attr('sightline.privacy_mode', true)] : []),
      ], 400, {
        events: [{ name: 'gen_ai.evaluation.result', timeUnixNano: (start + 1_000_000n).toString(), attributes: [attr('gen_ai.evaluation.name', 'relevance'), attr('gen_ai.evaluation.score.value', rnd())] }],
      }),
      mk(randomBytes(8), root, 'chat legacy', [
        attr('gen_ai.system', 'openai'), attr('gen_ai.request.model', 'gpt-4o'), attr('gen_ai.prompt.0.role', 'user'), attr('gen_ai.prompt.0.content', `Hi ${i}`),
        attr('gen_ai.completion.0.role', 'assistant'), attr('gen_ai.completion.0.content', 'Hello'), attr('gen_ai.usage.prompt_tokens', 12),
      ], 200),
      mk(randomBytes(8), root, 'execute_tool lookup', [attr('gen_ai.operation.name', 'execute_tool'), attr('gen_ai.tool.name', 'lookup'), attr('gen_ai.tool.call.arguments', '{"id":1}'), attr('gen_ai.tool.call.result', '{"ok":true}')], 50),
      mk(randomBytes(8), root, 'llm', [
        attr('openinference.span.kind', 'LLM'), attr('llm.model_name', 'gpt-4o-mini'), attr('llm.input_messages.0.message.role', 'user'),
        attr('llm.input_messages.0.message.content', 'OI question'), attr('llm.output_messages.0.message.role', 'assistant'), attr('llm.output_messages.0.message.content', 'OI answer'),
        attr('llm.token_count.prompt', 5), attr('llm.token_count.completion', 3),
      ], 100),
      mk(randomBytes(8), root, 'generation', [attr('langfuse.observation.type', 'generation'), attr('langfuse.observation.input', '"lf in"'), attr('langfuse.observation.output', '"lf out"'), attr('langfuse.session.id', 'lf-s'), attr('langfuse.observation.level', int(2) ? 'DEFAULT' : 'ERROR')], 100),
      mk(randomBytes(8), root, 'SELECT orders', [attr('db.system', 'sqlite')], 10),
    );
  }
  const resource = { attributes: [attr('service.name', 'agent'), attr('service.version', '3.1.0'), attr('deployment.environment.name', 'production')] };
  const msg = ExportTraceServiceRequest.fromObject({ resourceSpans: [{ resource, scopeSpans: [{ scope: { name: 'eq', version: '1' }, spans }] }] });
  return ExportTraceServiceRequest.encode(msg).finish();
}

const TABLES: [string, string][] = [
  ['agent_observations', 'id'],
  ['agent_obs_ids_new', 'project_id, k, obs'],
  ['agent_obs_traces', 'project_id, trace_id'],
  ['agent_scores', 'score_id'],
  ['agent_obs_1h', 'project_id, hour_ms, dim, value'],
  ['agent_sessions', 'project_id, session_id'],
  ['agent_users', 'project_id, user_id'],
  ['spans', 'rowid'],
];
const snapshot = (db: Db) => Object.fromEntries(TABLES.map(([t, order]) => [t, db.prepare(`SELECT * FROM ${t} ORDER BY ${order}`).all()]));

describe('AI observations mapped on the decode worker', () => {
  it('cross the thread boundary as arrays that unpack to the same row, every field and flag', () => {
    const row = finalizeObservation(
      emptyDraft({ observation_id: 'o1', started_ms: 1.5, ended_ms: 9, observation_type: 'generation', model: 'gpt-4o', provider: 'openai', operation: 'chat', trace_id: 't',
        prompt_tokens: 3, completion_tokens: null, input: { system: 's', messages: [{ role: 'user', content: 'q' }] }, output: { value: 'a' }, tags: ['x'], attributes: { k: 1 } }),
      { receivedMs: 5, projectPrivacy: false },
    );
    const round = (r: ObservationRow) => unpackRow(deserialize(serialize(packRow(r))) as unknown[]);
    expect(round(row)).toEqual(row);
    expect(Object.keys(round(row))).toEqual(Object.keys(row));
    for (const f of FLAG_COLUMNS) {
      const all = { ...row, flags: { ...row.flags } };
      for (const g of FLAG_COLUMNS) all.flags[g] = g === f ? 1 : 0;
      expect(round(all)).toEqual(all);
    }
  });

  for (const [privacy, route] of [[false, 'otlp'], [true, 'otlp'], [false, 'langfuse']] as const) {
    it(`store the same rows as mapped by the writer (project privacy ${privacy ? 'on' : 'off'}, written for ${route})`, () => {
      const t = Date.parse('2026-11-20T12:00:00Z');
      const prepared = store(`prepared-${privacy}-${route}`, privacy);
      const plain = store(`plain-${privacy}-${route}`, privacy);
      let taken = 0;
      let attached = 0;
      for (let round = 0; round < 2; round++) {
        const result = processJob({ kind: 'otlp', signal: 'traces', enc: 'protobuf', body: body(150), receivedMs: t + round, limits: ingestLimitsFromEnv() });
        // As between a decode worker and the main thread.
        const slices = deserialize(serialize(result.slices)) as IngestSlice[];
        const copies = deserialize(serialize(result.slices)) as IngestSlice[];
        expect(slices.some((s) => s.ai?.rows.some(Boolean))).toBe(true);
        for (let i = 0; i < slices.length; i++) {
          const s = slices[i]!;
          if (!s.spans) continue;
          if (s.ai) attachPrepared(s.spans, s.ai);
          attached += s.ai?.rows.filter(Boolean).length ?? 0;
          // Another route than the one prepared for (every span to the Langfuse route is an observation): mapped by the writer.
          prepared.db.transaction(() => prepared.writer.insertSpans('1', s.spans!, route, t + round))();
          taken += s.spans.filter((sp, j) => s.ai?.rows[j] && takePrepared(sp, 'otlp') === undefined).length;
          plain.db.transaction(() => plain.writer.insertSpans('1', copies[i]!.spans!, route, t + round))();
        }
      }
      // Every prepared observation was used by the writer (none left for the span).
      expect(attached).toBeGreaterThan(0);
      expect(taken).toBe(attached);
      const a = snapshot(prepared.db);
      const b = snapshot(plain.db);
      expect((a.agent_observations as unknown[]).length).toBeGreaterThan(900);
      expect((a.agent_scores as unknown[]).length).toBeGreaterThan(0);
      for (const [table] of TABLES) expect(a[table], table).toEqual(b[table]);
    });
  }
});
