/**
 * Why this file: the automation run engine. Schedules and event-triggered runs are jobs of the shared
 * DB-backed scheduler (src/core/scheduler.ts), so a restart (even SIGKILL) loses no due run, and a
 * run's results commit together with its job (never twice). A script step runs in the MCP sandbox
 * (src/mcp/execute.ts) with a project-bound principal `automation:<run id>` whose scopes come from the
 * capability manifest; every call goes through the host function below, which refuses operations
 * outside the manifest and hidden ones, and turns risky writes into outputs that wait for approval
 * (or, in a preview, into records of what would have been done).
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Core } from './invoke.js';
import { principalHolds, type ApiKeyPrincipal, type Principal } from './principal.js';
import type { DomainEvent } from './events.js';
import type { JobRow } from './scheduler.js';
import type { AutomationRow, OutputRow, RunRow } from '../storage/automations-repo.js';
import { AUTOMATION_EVENTS, eventPayload, matches, nextFire, type AutomationConfig, type Step } from '../domain/automations/config.js';
import { BUILTIN_CAPABILITIES, type CapabilityManifest } from '../domain/automations/templates.js';

/** One operation call's answer, as the sandbox bridge carries it (sandbox/executor.ts HostCallResult). */
export type HostCallResult = { ok: true; value: unknown } | { ok: false; error: { status: number; code: string; message: string; param?: string } };
export type HostCall = (operationId: string, input: unknown) => Promise<HostCallResult>;

/** What a script step got back from the sandbox (src/mcp/execute.ts ExecuteOutput, the part used here). */
export interface ScriptOutcome {
  result: unknown;
  logs: string[];
  calls: { operationId: string; status: number; ms: number }[];
  error: { name: string; message: string } | null;
}

/**
 * The faces the engine runs through, handed in by the server (core may not import faces): the MCP
 * sandbox runner and the in-process caller that goes through core.invoke without hidden operations.
 */
export interface AutomationDeps {
  caller(principal: Principal): HostCall;
  /** Runs a Code Mode script; `signal` stops it where it is (the sandbox worker is replaced). */
  runScript(code: string, operations: string[], call: HostCall, limits: { wallClockMs: number; maxCalls: number }, signal?: AbortSignal): Promise<ScriptOutcome>;
}

export const TICK_JOB = 'automation.tick';
export const RUN_JOB = 'automation.run';
const DAY = 86_400_000;

export type RunMode = 'live' | 'preview';

/** What is left of a run's limits (config.limits: time and calls for the whole run). */
interface RunBudget {
  deadline: number;
  callsLeft: number;
}

/** An output before it is stored (a preview keeps it in memory only). */
export interface PendingOutput {
  id: string;
  kind: 'summary' | 'triage_verdict' | 'patch' | 'message' | 'write';
  content: Record<string, unknown>;
  content_hash: string;
  needs_approval: boolean;
  status: string;
  detail: Record<string, unknown> | null;
}

export interface StepRecord {
  name: string;
  type: Step['type'];
  status: 'completed' | 'failed' | 'skipped' | 'cancelled';
  started_at: number;
  ended_at: number;
  duration_ms: number;
  logs: string[];
  calls: { operation_id: string; status: number; ms: number; recorded?: boolean }[];
  result: unknown;
  error: string | null;
}

export interface RunExecution {
  status: 'completed' | 'failed' | 'cancelled';
  steps: StepRecord[];
  outputs: PendingOutput[];
  error: string | null;
}

/** Canonical JSON (sorted keys), so a content hash does not depend on key order. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v ?? null);
}
export const contentHash = (content: unknown) => 'sha256:' + createHash('sha256').update(canonicalJson(content)).digest('hex');

/** The principal a run calls operations with: project-bound, scopes from its capability. */
export function runPrincipal(core: Core, projectId: string, runId: string, cap: CapabilityManifest): ApiKeyPrincipal {
  const project = core.services.identity.projectById(projectId)!;
  const scopes = new Set<string>();
  for (const id of cap.operations) for (const s of core.operations.get(id)?.scopes ?? []) scopes.add(s);
  return { kind: 'api_key', keyId: `automation:${runId}`, projectId, orgId: project.org_id, scopes: [...scopes] };
}

export const isAutomationPrincipal = (p: { kind: string; keyId?: string }) => p.kind === 'api_key' && typeof p.keyId === 'string' && p.keyId.startsWith('automation:');

export interface AutomationEngine {
  register(): void;
  /** Arms (or disarms) the schedule of an automation after create/update. */
  sync(a: AutomationRow): void;
  remove(a: AutomationRow): void;
  triggerManual(a: AutomationRow, input: unknown, now: number): RunRow;
  cancel(projectId: string, runId: string, now: number): boolean;
  capability(projectId: string, name: string): CapabilityManifest | null;
  capabilities(projectId: string): CapabilityManifest[];
  operation(id: string): { operationId: string; sensitive: boolean; risk: string } | undefined;
  /** Runs the steps; nothing is stored here. `caller`: a preview's caller, whose scopes bound the run's. */
  execute(a: { id: string; project_id: string; config: AutomationConfig }, run: { id: string; trigger: string; input: unknown }, mode: RunMode, signal?: AbortSignal, caller?: Principal): Promise<RunExecution>;
  /** Applies an approved output: a write is invoked, a message is sent. Returns the new status and detail. */
  apply(projectId: string, output: OutputRow, now: number): Promise<{ status: string; detail: Record<string, unknown> | null }>;
  /** Events an automation would have been triggered by in [from, to]. */
  pastTriggers(projectId: string, config: AutomationConfig, from: number, to: number, caller: Principal): Promise<{ at: string; key: string; event: Record<string, unknown> | null }[]>;
}

export function createAutomationEngine(core: Core, deps: AutomationDeps): AutomationEngine {
  const services = core.services;
  const repo = services.automations;
  const now = () => core.now();
  // Runs executing in this process (only the scheduler's leader runs jobs, so this is every live run):
  // the per-project concurrency limit counts these, never a `running` row left by a killed process.
  const controllers = new Map<string, { ac: AbortController; projectId: string }>();
  const liveRuns = (projectId: string) => [...controllers.values()].filter((c) => c.projectId === projectId).length;
  const visible = [...core.operations.values()].filter((o) => !o.sensitive).map((o) => o.operationId);

  const capability = (projectId: string, name: string): CapabilityManifest | null => {
    const own = repo.capability(projectId, name);
    if (own) return { name: own.name, description: own.description, operations: own.operations, risk: own.risk, approval: own.approval, builtin: false };
    return BUILTIN_CAPABILITIES.find((c) => c.name === name) ?? null;
  };

  const output = (kind: PendingOutput['kind'], content: Record<string, unknown>, needsApproval: boolean, status?: string, detail: Record<string, unknown> | null = null): PendingOutput => ({
    id: randomUUID(),
    kind,
    content,
    content_hash: contentHash(content),
    needs_approval: needsApproval,
    status: status ?? (needsApproval ? 'pending_approval' : 'final'),
    detail,
  });

  const budgetStage = (projectId: string): string => {
    try {
      return services.agentState?.context(projectId, now()).usage.stage ?? 'normal';
    } catch {
      return 'normal';
    }
  };

  /** The host function a run's sandbox calls: capability, hidden operations, approval and preview. */
  function hostFor(principal: ApiKeyPrincipal, cap: CapabilityManifest, mode: RunMode, outputs: PendingOutput[], signal?: AbortSignal): { call: HostCall; recorded: Set<number>; count: () => number } {
    const inner = deps.caller(principal);
    let n = 0;
    const recorded = new Set<number>();
    const call: HostCall = async (operationId, input): Promise<HostCallResult> => {
      const i = n++;
      if (signal?.aborted) return { ok: false, error: { status: 409, code: 'run_cancelled', message: `The run was cancelled; ${operationId} was not called.` } };
      const op = core.operations.get(operationId);
      if (op?.sensitive) {
        return { ok: false, error: { status: 403, code: 'capability_denied', message: `${operationId} is hidden (it handles credentials or secrets): automations never call it, whatever capability \`${cap.name}\` lists.` } };
      }
      if (!op || !cap.operations.includes(operationId)) {
        return {
          ok: false,
          error: { status: 403, code: 'capability_denied', message: `${operationId} is outside capability \`${cap.name}\` of this automation, which allows: ${cap.operations.join(', ') || 'nothing'}.` },
        };
      }
      if (op.risk === 'write' && (mode === 'preview' || cap.approval === 'required')) {
        recorded.add(i);
        const o = output('write', { operation_id: operationId, input: (input ?? {}) as Record<string, unknown> }, mode === 'live', mode === 'preview' ? 'dry_run' : undefined);
        outputs.push(o);
        return { ok: true, value: mode === 'preview' ? { dry_run: true, output_id: o.id, operation_id: operationId } : { pending_approval: true, output_id: o.id, operation_id: operationId } };
      }
      return inner(operationId, input);
    };
    return { call, recorded, count: () => n };
  }

  /** Outputs a step's returned value asks for. */
  function outputsFrom(value: unknown, cap: CapabilityManifest, mode: RunMode, automatic: boolean, projectId: string): PendingOutput[] {
    const out: PendingOutput[] = [];
    if (typeof value === 'string') return [output('summary', { text: value }, false)];
    if (!value || typeof value !== 'object') return out;
    const v = value as Record<string, unknown>;
    if (typeof v.summary === 'string') out.push(output('summary', { text: v.summary }, false));
    if (v.verdict && typeof v.verdict === 'object') out.push(output('triage_verdict', v.verdict as Record<string, unknown>, false));
    if (v.patch && typeof v.patch === 'object') {
      const p = v.patch as Record<string, unknown>;
      const content = { diff: String(p.diff ?? ''), title: String(p.title ?? 'Automated fix'), description: String(p.description ?? '') };
      if (mode === 'preview') out.push(output('patch', content, false, 'dry_run'));
      else if (automatic && budgetStage(projectId) !== 'normal') out.push(output('patch', content, false, 'blocked', { reason: `the agent budget stage is \`${budgetStage(projectId)}\`: no automatic fixes or patches` }));
      else out.push(output('patch', content, true));
    }
    if (v.message && typeof v.message === 'object') {
      const m = v.message as Record<string, unknown>;
      const content = { channel_id: String(m.channel_id ?? ''), title: String(m.title ?? ''), text: String(m.text ?? '') };
      if (mode === 'preview') out.push(output('message', content, false, 'dry_run'));
      else out.push(output('message', content, cap.approval === 'required', cap.approval === 'required' ? undefined : 'to_deliver'));
    }
    return out;
  }

  async function runStep(
    step: Step,
    ctx: { projectId: string; cap: CapabilityManifest; principal: ApiKeyPrincipal; config: AutomationConfig; mode: RunMode; automatic: boolean; input: Record<string, unknown>; outputs: PendingOutput[]; signal?: AbortSignal; budget: RunBudget },
  ): Promise<StepRecord> {
    const t0 = now();
    const p0 = performance.now();
    const rec = (r: Partial<StepRecord>): StepRecord => ({
      name: step.name,
      type: step.type,
      status: 'completed',
      started_at: t0,
      ended_at: now(),
      duration_ms: Math.round(performance.now() - p0),
      logs: [],
      calls: [],
      result: null,
      error: null,
      ...r,
    });
    if (step.type === 'agent') {
      if (ctx.mode === 'preview') return rec({ status: 'skipped', logs: [`[preview] would ask the in-project agent: ${step.prompt.slice(0, 500)}`] });
      const stage = budgetStage(ctx.projectId);
      if (ctx.automatic && (stage === 'notify_only' || stage === 'exhausted')) {
        return rec({ status: 'failed', error: `The agent budget stage is \`${stage}\`: automatic runs of agent tasks are paused until the budget resets.` });
      }
      const runner = services.agentRunner;
      if (!runner) return rec({ status: 'failed', error: 'no agent runner configured: agent-task steps need the in-project agent (services.agentRunner).' });
      const skills = step.skills.map((n) => repo.skillByName(ctx.projectId, n)).filter((s) => s !== null);
      try {
        const r = await runner.run({
          projectId: ctx.projectId,
          prompt: step.prompt,
          kind: 'automation',
          scopes: ctx.principal.scopes,
          instructions: skills.map((s) => `## Skill ${s.name}\n${s.content}`).join('\n\n') || undefined,
          signal: ctx.signal,
          now: now(),
        });
        ctx.outputs.push(output('summary', { text: r.text, answered_by: r.answered_by }, false));
        return rec({ result: { text: r.text, answered_by: r.answered_by }, calls: r.tool_calls.flatMap((c) => c.operations.map((o) => ({ operation_id: o, status: c.ok ? 200 : 500, ms: 0 }))) });
      } catch (e) {
        return rec({ status: ctx.signal?.aborted ? 'cancelled' : 'failed', error: `The agent task failed: ${(e as Error).message}` });
      }
    }
    const host = hostFor(ctx.principal, ctx.cap, ctx.mode, ctx.outputs, ctx.signal);
    const code = `const input = ${JSON.stringify(ctx.input)};\n${step.code}`;
    // The run's limits are shared by its steps: what earlier steps used is gone for later ones.
    const exec = deps.runScript(code, visible, host.call, { wallClockMs: Math.max(10, Math.round(ctx.budget.deadline - performance.now())), maxCalls: ctx.budget.callsLeft }, ctx.signal);
    const aborted = new Promise<null>((resolve) => {
      if (ctx.signal?.aborted) resolve(null);
      ctx.signal?.addEventListener('abort', () => resolve(null), { once: true });
    });
    const r = await Promise.race([exec, aborted]);
    if (!r) return rec({ status: 'cancelled', error: 'The run was cancelled while this step ran; its pending calls were refused.' });
    ctx.budget.callsLeft = Math.max(0, ctx.budget.callsLeft - r.calls.length);
    const calls = r.calls.map((c, i) => ({ operation_id: c.operationId, status: c.status, ms: Math.round(c.ms), ...(host.recorded.has(i) ? { recorded: true } : {}) }));
    if (r.error) return rec({ status: 'failed', logs: r.logs, calls, error: `${r.error.name}: ${r.error.message}` });
    ctx.outputs.push(...outputsFrom(r.result, ctx.cap, ctx.mode, ctx.automatic, ctx.projectId));
    return rec({ logs: r.logs, calls, result: r.result });
  }

  const engine: AutomationEngine = {
    capability,
    operation: (id) => core.operations.get(id),
    capabilities(projectId) {
      const own = repo.capabilities(projectId).map((c) => ({ name: c.name, description: c.description, operations: c.operations, risk: c.risk, approval: c.approval, builtin: false }));
      return [...BUILTIN_CAPABILITIES.filter((b) => !own.some((o) => o.name === b.name)), ...own];
    },

    async execute(a, run, mode, signal, caller) {
      const cap = capability(a.project_id, a.config.capability);
      if (!cap) return { status: 'failed', steps: [], outputs: [], error: `The capability \`${a.config.capability}\` does not exist in this project.` };
      const principal = runPrincipal(core, a.project_id, run.id, cap);
      // A preview runs for its caller: it can never read more than the caller could.
      if (caller) principal.scopes = principal.scopes.filter((sc) => principalHolds(caller, principal.orgId, sc));
      const budget: RunBudget = { deadline: performance.now() + a.config.limits.timeout_ms, callsLeft: a.config.limits.max_calls };
      const outputs: PendingOutput[] = [];
      const steps: StepRecord[] = [];
      const base = (run.input && typeof run.input === 'object' ? run.input : {}) as Record<string, unknown>;
      const automatic = run.trigger !== 'manual';
      let previous: unknown = null;
      for (const step of a.config.steps) {
        if (performance.now() >= budget.deadline) {
          return { status: 'failed', steps, outputs, error: `The run used its time limit of ${a.config.limits.timeout_ms} ms before step \`${step.name}\`.` };
        }
        const input = { ...base, trigger: run.trigger, params: a.config.params, previous, now: new Date(now()).toISOString() };
        const rec = await runStep(step, { projectId: a.project_id, cap, principal, config: a.config, mode, automatic, input, outputs, signal, budget });
        steps.push(rec);
        if (rec.status === 'cancelled') return { status: 'cancelled', steps, outputs, error: rec.error };
        if (rec.status === 'failed') return { status: 'failed', steps, outputs, error: `Step \`${step.name}\` failed: ${rec.error}` };
        previous = rec.result;
      }
      return { status: 'completed', steps, outputs, error: null };
    },

    async apply(projectId, o, at) {
      if (o.kind === 'write') {
        const run = repo.run(projectId, o.run_id);
        const a = run ? repo.get(projectId, run.automation_id) : null;
        const cap = a ? capability(projectId, a.config.capability) : null;
        if (!run || !cap) return { status: 'failed', detail: { error: 'The automation or its capability no longer exists.' } };
        const c = o.content as { operation_id: string; input: Record<string, unknown> };
        if (!cap.operations.includes(c.operation_id)) return { status: 'failed', detail: { error: `${c.operation_id} is outside capability \`${cap.name}\`.` } };
        const r = await deps.caller(runPrincipal(core, projectId, run.id, cap))(c.operation_id, c.input);
        return r.ok ? { status: 'applied', detail: { result: (r.value ?? null) as unknown, applied_at: new Date(at).toISOString() } } : { status: 'failed', detail: { error: r.error.message, code: r.error.code } };
      }
      if (o.kind === 'message') return deliver(projectId, o.content as { channel_id: string; title: string; text: string }, at);
      return { status: 'approved', detail: null };
    },

    register() {
      services.scheduler.register(TICK_JOB, (job: JobRow) => {
        const p = job.payload as { project_id: string; automation_id: string };
        const a = repo.get(p.project_id, p.automation_id);
        if (!a || a.state !== 'enabled' || a.config.trigger.type !== 'schedule') return {};
        const trigger = a.config.trigger;
        const fireAt = job.run_at;
        const runId = randomUUID();
        return {
          commit: () => {
            if (repo.createRun({ id: runId, project_id: a.project_id, automation_id: a.id, trigger: 'schedule', dedupe_key: `schedule:${fireAt}`, input: { scheduled_for: new Date(fireAt).toISOString() }, created_at: now() })) {
              services.scheduler.enqueue(RUN_JOB, runId, { project_id: a.project_id, run_id: runId }, now(), { maxAttempts: 3 });
            }
          },
          // Missed fire times are caught up one by one, at most a day back.
          nextRunAt: nextFire(trigger, Math.max(fireAt, now() - DAY)),
        };
      });

      services.scheduler.register(RUN_JOB, async (job: JobRow) => {
        const p = job.payload as { project_id: string; run_id: string };
        const run = repo.run(p.project_id, p.run_id);
        if (!run || (run.status !== 'queued' && run.status !== 'running')) return {};
        const a = repo.get(p.project_id, run.automation_id);
        if (!a) return {};
        if (liveRuns(p.project_id) >= services.config.automations.concurrencyPerProject) {
          return { nextRunAt: now() + 5000 }; // per-project concurrency limit: try again shortly
        }
        repo.startRun(run.id, now());
        const ac = new AbortController();
        controllers.set(run.id, { ac, projectId: p.project_id });
        let r: RunExecution;
        try {
          r = await engine.execute(a, run, 'live', ac.signal);
        } finally {
          controllers.delete(run.id);
        }
        if (run.status === 'running') r.steps.unshift({ name: 'resume', type: 'script', status: 'completed', started_at: now(), ended_at: now(), duration_ms: 0, logs: ['[warn] the previous attempt was interrupted (restart); the run started again'], calls: [], result: null, error: null });
        const toDeliver: PendingOutput[] = [];
        return {
          commit: () => {
            if (!repo.finishRun(run.id, r.status, r.steps, r.error, now())) {
              repo.setRunSteps(run.id, r.steps); // cancelled meanwhile: keep what ran, drop its outputs
              return;
            }
            for (const o of r.outputs) {
              repo.addOutput({ ...o, project_id: a.project_id, run_id: run.id, automation_id: a.id, created_at: now(), updated_at: now() });
              if (o.status === 'to_deliver') toDeliver.push(o);
            }
            return () => {
              for (const o of toDeliver) {
                const d = deliver(a.project_id, o.content as { channel_id: string; title: string; text: string }, now());
                repo.setOutputStatus(a.project_id, o.id, d.status, d.detail, now());
              }
            };
          },
        };
      });

      for (const type of AUTOMATION_EVENTS) {
        services.events.subscribe(type, (e: DomainEvent) => onEvent(e));
      }
    },

    sync(a) {
      if (a.state === 'enabled' && a.config.trigger.type === 'schedule') {
        const existing = services.scheduler.get(TICK_JOB, a.id);
        const next = nextFire(a.config.trigger, now());
        if (!existing || existing.run_at !== next) services.scheduler.enqueue(TICK_JOB, a.id, { project_id: a.project_id, automation_id: a.id }, next, { maxAttempts: 100 });
      } else {
        services.scheduler.cancel(TICK_JOB, a.id);
      }
    },

    remove(a) {
      services.scheduler.cancel(TICK_JOB, a.id);
    },

    triggerManual(a, input, at) {
      const id = randomUUID();
      services.atomic(() => {
        repo.createRun({ id, project_id: a.project_id, automation_id: a.id, trigger: 'manual', dedupe_key: `manual:${id}`, input: { input: input ?? null }, created_at: at });
        services.scheduler.enqueue(RUN_JOB, id, { project_id: a.project_id, run_id: id }, at, { maxAttempts: 3 });
      });
      return repo.run(a.project_id, id)!;
    },

    cancel(projectId, runId, at) {
      const done = services.atomic(() => {
        const ok = repo.cancelRun(projectId, runId, 'Cancelled by request.', at);
        // A run executing here keeps its job: the job's commit records the cancelled steps.
        if (ok && !controllers.has(runId)) services.scheduler.cancel(RUN_JOB, runId);
        return ok;
      });
      controllers.get(runId)?.ac.abort();
      return done;
    },

    async pastTriggers(projectId, config, from, to, caller) {
      const t = config.trigger;
      if (t.type === 'manual') return [];
      if (t.type === 'schedule') {
        const out: { at: string; key: string; event: null }[] = [];
        for (let x = nextFire(t, from - 1); x <= to && out.length < 100; x = nextFire(t, x)) out.push({ at: new Date(x).toISOString(), key: `schedule:${x}`, event: null });
        return out;
      }
      // Past events are read as the caller: a preview shows nothing the caller could not read.
      const call = deps.caller(caller);
      const events: DomainEvent[] = [];
      if (t.event === 'error.group.created') {
        const r = await call('errors.list', { project_id: projectId, from: new Date(from).toISOString(), to: new Date(to).toISOString(), status: 'all', sort: 'first_seen', limit: 100 });
        for (const g of r.ok ? ((r.value as { data: Record<string, any>[] }).data ?? []) : []) {
          const at = Date.parse(g.first_seen);
          if (at >= from && at <= to) events.push({ type: 'error.group.created', projectId, at, groupId: g.id, shortId: g.short_id, title: g.title, level: g.level, service: g.service ?? '', environment: g.environment ?? '' });
        }
      } else if (t.event === 'feedback.received') {
        const r = await call('feedback.list', { project_id: projectId, limit: 100 });
        for (const f of r.ok ? ((r.value as { data: Record<string, any>[] }).data ?? []) : []) {
          const at = Date.parse(f.created_at);
          if (at >= from && at <= to) events.push({ type: 'feedback.received', projectId, at, feedbackId: f.id, message: f.message, errorGroupId: f.error_group_id ?? null });
        }
      }
      return events
        .map((e) => ({ e, p: eventPayload(e as never) }))
        .filter(({ p }) => matches(config.conditions, p.event))
        .map(({ e, p }) => ({ at: new Date(e.at).toISOString(), key: p.key, event: p.event }));
    },
  };

  function deliver(projectId: string, m: { channel_id: string; title: string; text: string }, at: number): { status: string; detail: Record<string, unknown> } {
    const state = services.agentState;
    if (!state) return { status: 'undelivered', detail: { reason: 'no channel service configured: messages go out through the in-project agent (services.agentState), which is not set up on this server' } };
    if (!m.channel_id) return { status: 'undelivered', detail: { reason: 'the message names no channel (set params.channel_id)' } };
    try {
      const id = state.sendToChannel(projectId, m.channel_id, { title: m.title, text: m.text }, at);
      return { status: 'delivered', detail: { delivery_id: id } };
    } catch (e) {
      return { status: 'undelivered', detail: { reason: (e as Error).message } };
    }
  }

  function onEvent(e: DomainEvent): void {
    const automations = repo.enabled(e.projectId).filter((a) => a.config.trigger.type === 'event' && a.config.trigger.event === e.type);
    if (!automations.length) return;
    const p = eventPayload(e as never);
    services.atomic(() => {
      for (const a of automations) {
        if (!matches(a.config.conditions, p.event)) continue;
        const id = randomUUID();
        // Once per event: the dedupe key is unique per automation, so a replayed event adds nothing.
        if (repo.createRun({ id, project_id: a.project_id, automation_id: a.id, trigger: 'event', dedupe_key: `event:${p.key}`, input: { event: p.event }, created_at: now() })) {
          services.scheduler.enqueue(RUN_JOB, id, { project_id: a.project_id, run_id: id }, now(), { maxAttempts: 3 });
        }
      }
    });
  }

  return engine;
}
