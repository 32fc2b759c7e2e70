/**
 * Why this file: automations' records (configs, runs, outputs, approvals, capability manifests,
 * skills) in SQLite, behind one repository so handlers and the run engine never see the db handle.
 */
import type { Db } from './db.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
export type AutomationState = 'draft' | 'enabled' | 'paused';
export type RunStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';

export interface AutomationRow {
  id: string;
  project_id: string;
  name: string;
  description: string;
  template_id: string | null;
  state: AutomationState;
  config: any;
  created_at: number;
  updated_at: number;
}

export interface RunRow {
  id: string;
  project_id: string;
  automation_id: string;
  trigger: string;
  dedupe_key: string;
  status: RunStatus;
  input: any;
  steps: any[];
  error: string | null;
  attempts: number;
  created_at: number;
  started_at: number | null;
  ended_at: number | null;
}

export interface OutputRow {
  id: string;
  project_id: string;
  run_id: string;
  automation_id: string;
  kind: string;
  content: any;
  content_hash: string;
  needs_approval: boolean;
  status: string;
  detail: any;
  created_at: number;
  updated_at: number;
}

export interface ApprovalRow {
  id: string;
  project_id: string;
  run_id: string;
  output_id: string;
  content_hash: string;
  decision: 'approved' | 'rejected';
  decided_by: string;
  note: string | null;
  created_at: number;
}

export interface CapabilityRow {
  id: string;
  project_id: string;
  name: string;
  description: string;
  operations: string[];
  risk: 'read' | 'write';
  approval: 'required' | 'not_required';
  created_at: number;
  updated_at: number;
}

export interface SkillRow {
  id: string;
  project_id: string;
  name: string;
  description: string;
  content: string;
  created_at: number;
  updated_at: number;
}

const automation = (r: any): AutomationRow => ({ ...r, config: JSON.parse(r.config) });
const run = (r: any): RunRow => ({ ...r, input: JSON.parse(r.input), steps: JSON.parse(r.steps) });
const output = (r: any): OutputRow => ({ ...r, content: JSON.parse(r.content), detail: r.detail === null ? null : JSON.parse(r.detail), needs_approval: !!r.needs_approval });
const capability = (r: any): CapabilityRow => ({ ...r, operations: JSON.parse(r.operations) });

export function createAutomationsRepo(db: Db) {
  const st = {
    insert: db.prepare('INSERT INTO automations (id, project_id, name, description, template_id, state, config, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    get: db.prepare('SELECT * FROM automations WHERE project_id = ? AND id = ?'),
    getAny: db.prepare('SELECT * FROM automations WHERE id = ?'),
    list: db.prepare('SELECT * FROM automations WHERE project_id = ? AND (? IS NULL OR state = ?) ORDER BY created_at, id LIMIT ? OFFSET ?'),
    count: db.prepare('SELECT count(*) FROM automations WHERE project_id = ? AND (? IS NULL OR state = ?)').pluck(),
    enabledAll: db.prepare("SELECT * FROM automations WHERE project_id = ? AND state = 'enabled'"),
    update: db.prepare('UPDATE automations SET name = ?, description = ?, state = ?, config = ?, updated_at = ? WHERE project_id = ? AND id = ?'),
    del: db.prepare('DELETE FROM automations WHERE project_id = ? AND id = ?'),
    delRuns: db.prepare('DELETE FROM automation_runs WHERE automation_id = ?'),
    delOutputs: db.prepare('DELETE FROM automation_outputs WHERE automation_id = ?'),
    delApprovals: db.prepare('DELETE FROM automation_approvals WHERE run_id IN (SELECT id FROM automation_runs WHERE automation_id = ?)'),
    runInsert: db.prepare(
      `INSERT OR IGNORE INTO automation_runs (id, project_id, automation_id, trigger, dedupe_key, status, input, created_at) VALUES (?, ?, ?, ?, ?, 'queued', ?, ?)`,
    ),
    runGet: db.prepare('SELECT * FROM automation_runs WHERE project_id = ? AND id = ?'),
    runGetAny: db.prepare('SELECT * FROM automation_runs WHERE id = ?'),
    runs: db.prepare('SELECT * FROM automation_runs WHERE project_id = ? AND automation_id = ? AND (? IS NULL OR status = ?) ORDER BY created_at DESC, id LIMIT ? OFFSET ?'),
    runsCount: db.prepare('SELECT count(*) FROM automation_runs WHERE project_id = ? AND automation_id = ? AND (? IS NULL OR status = ?)').pluck(),
    running: db.prepare("SELECT count(*) FROM automation_runs WHERE project_id = ? AND status = 'running'").pluck(),
    runStart: db.prepare("UPDATE automation_runs SET status = 'running', started_at = ?, attempts = attempts + 1 WHERE id = ? AND status IN ('queued', 'running')"),
    runFinish: db.prepare("UPDATE automation_runs SET status = ?, steps = ?, error = ?, ended_at = ? WHERE id = ? AND status IN ('queued', 'running')"),
    runSteps: db.prepare('UPDATE automation_runs SET steps = ? WHERE id = ?'),
    runCancel: db.prepare("UPDATE automation_runs SET status = 'cancelled', error = ?, ended_at = ? WHERE project_id = ? AND id = ? AND status IN ('queued', 'running')"),
    outInsert: db.prepare(
      'INSERT INTO automation_outputs (id, project_id, run_id, automation_id, kind, content, content_hash, needs_approval, status, detail, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    outs: db.prepare('SELECT * FROM automation_outputs WHERE project_id = ? AND run_id = ? ORDER BY created_at, rowid'),
    outGet: db.prepare('SELECT * FROM automation_outputs WHERE project_id = ? AND id = ?'),
    outStatus: db.prepare('UPDATE automation_outputs SET status = ?, detail = ?, updated_at = ? WHERE project_id = ? AND id = ?'),
    apprInsert: db.prepare('INSERT INTO automation_approvals (id, project_id, run_id, output_id, content_hash, decision, decided_by, note, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    apprs: db.prepare('SELECT * FROM automation_approvals WHERE project_id = ? AND run_id = ? ORDER BY created_at, rowid'),
    capUpsert: db.prepare(
      `INSERT INTO automation_capabilities (id, project_id, name, description, operations, risk, approval, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (project_id, name) DO UPDATE SET description = excluded.description, operations = excluded.operations, risk = excluded.risk, approval = excluded.approval, updated_at = excluded.updated_at`,
    ),
    caps: db.prepare('SELECT * FROM automation_capabilities WHERE project_id = ? ORDER BY name'),
    capByName: db.prepare('SELECT * FROM automation_capabilities WHERE project_id = ? AND name = ?'),
    skillUpsert: db.prepare(
      `INSERT INTO automation_skills (id, project_id, name, description, content, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (project_id, name) DO UPDATE SET description = excluded.description, content = excluded.content, updated_at = excluded.updated_at`,
    ),
    skills: db.prepare('SELECT * FROM automation_skills WHERE project_id = ? ORDER BY name'),
    skillGet: db.prepare('SELECT * FROM automation_skills WHERE project_id = ? AND id = ?'),
    skillByName: db.prepare('SELECT * FROM automation_skills WHERE project_id = ? AND name = ?'),
    skillDel: db.prepare('DELETE FROM automation_skills WHERE project_id = ? AND id = ?'),
  };
  const atomic = <T>(fn: () => T): T => db.transaction(fn)();

  return {
    atomic,
    create(a: AutomationRow): AutomationRow {
      st.insert.run(a.id, a.project_id, a.name, a.description, a.template_id, a.state, JSON.stringify(a.config), a.created_at, a.updated_at);
      return a;
    },
    get(projectId: string, id: string): AutomationRow | null {
      const r = st.get.get(projectId, id);
      return r ? automation(r) : null;
    },
    getAny(id: string): AutomationRow | null {
      const r = st.getAny.get(id);
      return r ? automation(r) : null;
    },
    list(projectId: string, state: string | null, limit: number, offset: number) {
      return { rows: st.list.all(projectId, state, state, limit, offset).map(automation), total: st.count.get(projectId, state, state) as number };
    },
    enabled(projectId: string): AutomationRow[] {
      return st.enabledAll.all(projectId).map(automation);
    },
    update(a: AutomationRow): void {
      st.update.run(a.name, a.description, a.state, JSON.stringify(a.config), a.updated_at, a.project_id, a.id);
    },
    /** The automation, its runs, outputs and approvals. */
    delete(projectId: string, id: string): boolean {
      return atomic(() => {
        st.delApprovals.run(id);
        st.delOutputs.run(id);
        st.delRuns.run(id);
        return st.del.run(projectId, id).changes > 0;
      });
    },
    /** Creates a queued run unless one with this dedupe key exists; true when created. */
    createRun(r: { id: string; project_id: string; automation_id: string; trigger: string; dedupe_key: string; input: unknown; created_at: number }): boolean {
      return st.runInsert.run(r.id, r.project_id, r.automation_id, r.trigger, r.dedupe_key, JSON.stringify(r.input ?? null), r.created_at).changes > 0;
    },
    run(projectId: string, id: string): RunRow | null {
      const r = st.runGet.get(projectId, id);
      return r ? run(r) : null;
    },
    runAny(id: string): RunRow | null {
      const r = st.runGetAny.get(id);
      return r ? run(r) : null;
    },
    runs(projectId: string, automationId: string, status: string | null, limit: number, offset: number) {
      return { rows: st.runs.all(projectId, automationId, status, status, limit, offset).map(run), total: st.runsCount.get(projectId, automationId, status, status) as number };
    },
    runningCount(projectId: string): number {
      return st.running.get(projectId) as number;
    },
    startRun(id: string, now: number): boolean {
      return st.runStart.run(now, id).changes > 0;
    },
    finishRun(id: string, status: RunStatus, steps: unknown[], error: string | null, now: number): boolean {
      return st.runFinish.run(status, JSON.stringify(steps), error, now, id).changes > 0;
    },
    setRunSteps(id: string, steps: unknown[]): void {
      st.runSteps.run(JSON.stringify(steps), id);
    },
    cancelRun(projectId: string, id: string, reason: string, now: number): boolean {
      return st.runCancel.run(reason, now, projectId, id).changes > 0;
    },
    addOutput(o: OutputRow): void {
      st.outInsert.run(o.id, o.project_id, o.run_id, o.automation_id, o.kind, JSON.stringify(o.content), o.content_hash, o.needs_approval ? 1 : 0, o.status, o.detail === null ? null : JSON.stringify(o.detail), o.created_at, o.updated_at);
    },
    outputs(projectId: string, runId: string): OutputRow[] {
      return st.outs.all(projectId, runId).map(output);
    },
    output(projectId: string, id: string): OutputRow | null {
      const r = st.outGet.get(projectId, id);
      return r ? output(r) : null;
    },
    setOutputStatus(projectId: string, id: string, status: string, detail: unknown, now: number): void {
      st.outStatus.run(status, detail === null || detail === undefined ? null : JSON.stringify(detail), now, projectId, id);
    },
    addApproval(a: ApprovalRow): void {
      st.apprInsert.run(a.id, a.project_id, a.run_id, a.output_id, a.content_hash, a.decision, a.decided_by, a.note, a.created_at);
    },
    approvals(projectId: string, runId: string): ApprovalRow[] {
      return st.apprs.all(projectId, runId) as ApprovalRow[];
    },
    upsertCapability(c: CapabilityRow): CapabilityRow {
      st.capUpsert.run(c.id, c.project_id, c.name, c.description, JSON.stringify(c.operations), c.risk, c.approval, c.created_at, c.updated_at);
      return capability(st.capByName.get(c.project_id, c.name));
    },
    capabilities(projectId: string): CapabilityRow[] {
      return st.caps.all(projectId).map(capability);
    },
    capability(projectId: string, name: string): CapabilityRow | null {
      const r = st.capByName.get(projectId, name);
      return r ? capability(r) : null;
    },
    upsertSkill(s: SkillRow): { skill: SkillRow; created: boolean } {
      const before = st.skillByName.get(s.project_id, s.name);
      st.skillUpsert.run(s.id, s.project_id, s.name, s.description, s.content, s.created_at, s.updated_at);
      return { skill: st.skillByName.get(s.project_id, s.name) as SkillRow, created: !before };
    },
    skills(projectId: string): SkillRow[] {
      return st.skills.all(projectId) as SkillRow[];
    },
    skill(projectId: string, id: string): SkillRow | null {
      return (st.skillGet.get(projectId, id) as SkillRow | undefined) ?? null;
    },
    skillByName(projectId: string, name: string): SkillRow | null {
      return (st.skillByName.get(projectId, name) as SkillRow | undefined) ?? null;
    },
    deleteSkill(projectId: string, id: string): boolean {
      return st.skillDel.run(projectId, id).changes > 0;
    },
  };
}

export type AutomationsRepo = ReturnType<typeof createAutomationsRepo>;
