/**
 * Micro-bench of the AI span write path (issue 13), in one process without HTTP: the bench's
 * OTLP/protobuf batches of GenAI spans are decoded once, then written again and again (fresh span
 * ids each round) through the plain span writer and through the writer with the AI decorator
 * (src/storage/ai-spans.ts), each in its own database. Prints spans/s for both, CPU µs per span (every
 * span of the batches is an observation) and the ratio.
 *
 *   BENCH_AI_SPANS=100000 npx tsx bench/ai-write.ts          (add --cpu-prof via node to profile)
 *
 * BENCH_AI_PREFILL=150000 writes that many spans first, unmeasured (random-key structures cost more
 * in a bigger store); BENCH_AI_CHECKPOINT=worker runs WAL checkpoints on a worker thread as the
 * server does (src/storage/wal-checkpointer.ts; default: SQLite's automatic checkpoint in the
 * commits). Besides process CPU it prints the main thread's CPU per span (Linux).
 *
 * BENCH_AI_PREPARED=on|off: the server's split between a decode worker and the main thread. Every
 * round's spans are built first, unmeasured, with (`on`) or without (`off`) their AI observations
 * mapped as the decode worker maps them (src/domain/ai/prepared.ts), and serialized; the measured
 * loop deserializes them (as a slice arriving from a worker) and writes them: the main thread's work.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ExportTraceServiceRequest } from '../src/ingest/otlp/schema.js';
import { decodeTraces } from '../src/ingest/otlp/decode.js';
import { migrate, openDatabase } from '../src/storage/db.js';
import { createSqliteTelemetryWriter } from '../src/storage/sqlite-telemetry-store.js';
import { withLogRollups } from '../src/storage/log-rollups.js';
import { withAgentObservations } from '../src/storage/ai-spans.js';
import { createAiRepo } from '../src/storage/ai-repo.js';
import type { SpanRecord } from '../src/domain/telemetry-types.js';
import { readFileSync } from 'node:fs';
import { startWalCheckpointer } from '../src/storage/wal-checkpointer.js';
import { attr } from './lib.js';
import { serialize, deserialize } from 'node:v8';
import { attachPrepared, prepareObservation, type PreparedSlice } from '../src/domain/ai/prepared.js';

const TOTAL = Number(process.env.BENCH_AI_SPANS ?? 100_000);
const MODE = process.env.BENCH_AI_MODE ?? 'both'; // plain | ai | both
const PREFILL = Number(process.env.BENCH_AI_PREFILL ?? 0);
const CHECKPOINT_WORKER = process.env.BENCH_AI_CHECKPOINT === 'worker';
const PREPARED = process.env.BENCH_AI_PREPARED; // on | off | unset (spans handed over as built)

/** CPU µs used so far by this process's main thread (Linux /proc; 0 elsewhere). */
function mainThreadCpuUs(): number {
  try {
    const f = readFileSync(`/proc/${process.pid}/task/${process.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(f[11]) + Number(f[12])) * 10_000; // clock ticks of 10 ms
  } catch {
    return 0;
  }
}
const BATCH = 512;
const models = ['gpt-4o-mini', 'gpt-4o', 'claude-sonnet-4-20250514', 'gemini-2.5-flash'];
const resource = { attributes: [attr('service.name', 'agent'), attr('service.version', '3.1.0'), attr('deployment.environment.name', 'production')] };

function batch(seed: number): SpanRecord[] {
  const now = BigInt(Date.now()) * 1_000_000n;
  const spans = [];
  for (let i = 0; i < BATCH; i += 4) {
    const traceId = randomBytes(16);
    const root = randomBytes(8);
    const start = now - BigInt(i) * 1_000_000n;
    const conv = attr('gen_ai.conversation.id', `conv-${seed}-${i % 64}`);
    const user = attr('user.id', `u-${i % 97}`);
    const mk = (spanId: Buffer, parent: Buffer | null, name: string, attributes: ReturnType<typeof attr>[], ms: number) => ({
      traceId, spanId, parentSpanId: parent ?? Buffer.alloc(0), name, kind: 1,
      startTimeUnixNano: start.toString(), endTimeUnixNano: (start + BigInt(ms * 1_000_000)).toString(),
      attributes: [conv, user, ...attributes], status: { code: 1 },
    });
    const model = models[(seed + i) % models.length]!;
    const chat = (n: number) => [
      attr('gen_ai.operation.name', 'chat'), attr('gen_ai.provider.name', 'openai'), attr('gen_ai.request.model', model),
      attr('gen_ai.usage.input_tokens', 300 + n), attr('gen_ai.usage.output_tokens', 40 + (n % 50)),
      attr('gen_ai.system_instructions', '[{"type":"text","content":"You are a helpful agent."}]'),
      attr('gen_ai.input.messages', `[{"role":"user","parts":[{"type":"text","content":"Question ${n} about order ${seed}"}]}]`),
      attr('gen_ai.output.messages', `[{"role":"assistant","parts":[{"type":"text","content":"Answer ${n}"}]}]`),
    ];
    spans.push(
      mk(root, null, 'invoke_agent support', [attr('gen_ai.operation.name', 'invoke_agent'), attr('gen_ai.agent.id', 'support')], 900),
      mk(randomBytes(8), root, `chat ${model}`, chat(i), 400),
      mk(randomBytes(8), root, 'execute_tool lookup', [attr('gen_ai.operation.name', 'execute_tool'), attr('gen_ai.tool.name', 'lookup'), attr('gen_ai.tool.call.arguments', '{"id":1}')], 50),
      mk(randomBytes(8), root, `chat ${model}`, chat(i + 1), 300),
    );
  }
  const msg = ExportTraceServiceRequest.fromObject({ resourceSpans: [{ resource, scopeSpans: [{ scope: { name: 'bench-agent', version: '1' }, spans }] }] });
  return decodeTraces(Buffer.from(ExportTraceServiceRequest.encode(msg).finish()), 'protobuf').records;
}

/** Spans per second of wall time and per second of this process's CPU time (steadier on a loaded machine), main thread CPU µs per span. */
async function run(withAi: boolean, batches: SpanRecord[][]): Promise<{ wall: number; cpu: number; mainUs: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'sightline-bench-aiw-'));
  const db = openDatabase(join(dir, 'b.db'));
  migrate(db);
  const checkpointer = CHECKPOINT_WORKER ? startWalCheckpointer(db, join(dir, 'b.db')) : null;
  const plain = withLogRollups(db, createSqliteTelemetryWriter(db));
  const writer = withAi ? withAgentObservations(db, createAiRepo(db), plain) : plain;
  let round = 0;
  const nextSpans = () => {
    const b = batches[round % batches.length]!;
    // Fresh ids each round, so every write is an insert (ids differ per round, parents kept consistent).
    const suffix = (round++).toString(16).padStart(5, '0');
    return b.map((s) => ({ ...s, span_id: suffix + s.span_id.slice(5), parent_span_id: s.parent_span_id ? suffix + s.parent_span_id.slice(5) : s.parent_span_id, trace_id: suffix + s.trace_id.slice(5) }));
  };
  const write = (spans: SpanRecord[]) => {
    db.transaction(() => writer.insertSpans('1', spans, 'otlp', Date.now()))();
    return spans.length;
  };
  const writeOne = () => write(nextSpans());
  for (let p = 0; p < PREFILL; ) p += writeOne();
  // BENCH_AI_PREPARED: the measured rounds built (and mapped on "the worker") beforehand.
  const slices: Buffer[] = [];
  if (PREPARED) {
    for (let p = 0; p < TOTAL; ) {
      const spans = nextSpans();
      const t = Date.now();
      const ai = PREPARED === 'on' ? { source: 'otlp', rows: spans.map((sp) => prepareObservation(sp, 'otlp', t)) } : undefined;
      slices.push(serialize({ spans, ai }));
      p += spans.length;
    }
  }
  let next = 0;
  const measuredOne = () => {
    if (!PREPARED) return writeOne();
    const s = deserialize(slices[next++]!) as { spans: SpanRecord[]; ai?: PreparedSlice };
    if (s.ai) attachPrepared(s.spans, s.ai);
    return write(s.spans);
  };
  let n = 0;
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const m0 = mainThreadCpuUs();
  while (n < TOTAL) {
    n += measuredOne();
    // Let the checkpoint worker's messages in (the server's event loop turns between batches too).
    if (checkpointer) await new Promise((r) => setImmediate(r));
  }
  const secs = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  const mainUs = (mainThreadCpuUs() - m0) / n;
  await checkpointer?.stop();
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return { wall: n / secs, cpu: n / ((c.user + c.system) / 1e6), mainUs };
}

const batches = Array.from({ length: 8 }, (_, i) => batch(i));
const fmt = (r: { wall: number; cpu: number; mainUs: number }) =>
  `${Math.round(r.wall).toLocaleString('en-US')} spans/s wall, ${Math.round(r.cpu).toLocaleString('en-US')} spans per CPU-second (${(1e6 / r.cpu).toFixed(0)} µs CPU per span, main thread ${r.mainUs.toFixed(0)})`;
const plain = MODE !== 'ai' ? await run(false, batches) : null;
const ai = MODE !== 'plain' ? await run(true, batches) : null;
if (plain) console.log(`plain span writer:     ${fmt(plain)}`);
if (ai) console.log(`with AI observations:  ${fmt(ai)}`);
if (plain && ai) console.log(`AI decorator cost:     ${(plain.cpu / ai.cpu).toFixed(2)}× a plain span write (CPU)`);
