import { randomUUID } from 'node:crypto';
import type { Db } from './db.js';
import { createSqliteErrorEventsReader, type ErrorEventsReader } from './error-events-read.js';
import { DEFAULT_SETTINGS, type AgentSettingsValues } from '../domain/agent/settings.js';

/**
 * Storage of the in-project agent's state (migration 030): settings, memory, skills, signals, daily
 * usage, conversations, channels and deliveries, and watch marks. Project ids are the text form
 * handlers use; organization rows (memory and skills of `organization` scope) are keyed by org id.
 */

/* eslint-disable @typescript-eslint/no-explicit-any */
export interface MemoryRow {
  id: string;
  project_id: string | null;
  org_id: string;
  scope: 'project' | 'organization';
  kind: string;
  content: string;
  norm: string;
  replaces_id: string | null;
  retired_at: number | null;
  created_at: number;
}
export interface SkillRow {
  id: string;
  project_id: string | null;
  org_id: string;
  scope: 'project' | 'organization';
  name: string;
  description: string;
  content: string;
  created_at: number;
  updated_at: number;
}
export interface SignalRow {
  id: string;
  project_id: string;
  source: string;
  subject: string;
  title: string;
  action: 'investigate' | 'attach_to_existing' | 'ignore';
  severity: 'sev1' | 'sev2' | 'sev3' | 'sev4';
  reason: string;
  skill: string | null;
  status: string;
  alert: string | null;
  answer: string | null;
  conversation_id: string | null;
  created_at: number;
  updated_at: number;
}
export interface ConversationRow {
  id: string;
  project_id: string;
  kind: string;
  title: string;
  thread_id: string | null;
  signal_id: string | null;
  status: string;
  answered_by: string;
  started_at: number;
  ended_at: number | null;
}
export interface ChannelRow {
  id: string;
  project_id: string;
  name: string;
  kind: 'slack' | 'webhook';
  url: string;
  secret: string | null;
  created_at: number;
}
export interface DeliveryRow {
  id: string;
  project_id: string;
  channel_id: string;
  title: string;
  message: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: number;
  delivered_at: number | null;
}
export interface UsageRow {
  units: number;
  wakes: number;
  alerts_posted: number;
}

const pid = <T extends { project_id: unknown }>(r: T | undefined): T | undefined => (r ? { ...r, project_id: r.project_id === null ? null : String(r.project_id) } : undefined);

export function createAgentRepo(db: Db, opts: { errorEvents?: ErrorEventsReader } = {}) {
  const errorEvents = opts.errorEvents ?? createSqliteErrorEventsReader(db);
  const s = {
    settings: db.prepare('SELECT settings FROM agent_settings WHERE project_id = ?'),
    putSettings: db.prepare(`INSERT INTO agent_settings (project_id, settings, updated_at) VALUES (?, ?, ?)
      ON CONFLICT (project_id) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at`),
    memoryVisible: db.prepare(`SELECT * FROM agent_memory WHERE retired_at IS NULL AND ((scope = 'project' AND project_id = ?) OR (scope = 'organization' AND org_id = ?)) ORDER BY created_at, id`),
    memoryById: db.prepare(`SELECT * FROM agent_memory WHERE id = ? AND ((scope = 'project' AND project_id = ?) OR (scope = 'organization' AND org_id = ?))`),
    memoryCountProject: db.prepare(`SELECT count(*) AS n FROM agent_memory WHERE retired_at IS NULL AND scope = 'project' AND project_id = ?`),
    memoryCountOrg: db.prepare(`SELECT count(*) AS n FROM agent_memory WHERE retired_at IS NULL AND scope = 'organization' AND org_id = ?`),
    insertMemory: db.prepare(`INSERT INTO agent_memory (id, project_id, org_id, scope, kind, content, norm, replaces_id, created_at) VALUES (@id, @project_id, @org_id, @scope, @kind, @content, @norm, @replaces_id, @created_at)`),
    retireMemory: db.prepare('UPDATE agent_memory SET retired_at = ? WHERE id = ? AND retired_at IS NULL'),
    skillsVisible: db.prepare(`SELECT * FROM agent_skills WHERE (scope = 'project' AND project_id = ?) OR (scope = 'organization' AND org_id = ?) ORDER BY name, scope DESC`),
    skillById: db.prepare(`SELECT * FROM agent_skills WHERE id = ? AND ((scope = 'project' AND project_id = ?) OR (scope = 'organization' AND org_id = ?))`),
    projectSkill: db.prepare(`SELECT * FROM agent_skills WHERE scope = 'project' AND project_id = ? AND name = ?`),
    orgSkill: db.prepare(`SELECT * FROM agent_skills WHERE scope = 'organization' AND org_id = ? AND name = ?`),
    insertSkill: db.prepare(`INSERT INTO agent_skills (id, project_id, org_id, scope, name, description, content, created_at, updated_at) VALUES (@id, @project_id, @org_id, @scope, @name, @description, @content, @now, @now)`),
    updateSkill: db.prepare('UPDATE agent_skills SET description = ?, content = ?, updated_at = ? WHERE id = ?'),
    deleteSkill: db.prepare('DELETE FROM agent_skills WHERE id = ?'),
    insertSignal: db.prepare(`INSERT INTO agent_signals (id, project_id, source, subject, title, action, severity, reason, skill, status, alert, answer, conversation_id, created_at, updated_at)
      VALUES (@id, @project_id, @source, @subject, @title, @action, @severity, @reason, @skill, @status, NULL, NULL, NULL, @created_at, @created_at)`),
    signal: db.prepare('SELECT * FROM agent_signals WHERE project_id = ? AND id = ?'),
    signals: db.prepare('SELECT * FROM agent_signals WHERE project_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?'),
    signalOfSubject: db.prepare('SELECT * FROM agent_signals WHERE project_id = ? AND subject = ? AND created_at >= ? ORDER BY created_at DESC, rowid DESC LIMIT 1'),
    updateSignal: db.prepare(`UPDATE agent_signals SET status = coalesce(@status, status), alert = coalesce(@alert, alert), answer = coalesce(@answer, answer),
      conversation_id = coalesce(@conversation_id, conversation_id), updated_at = @now WHERE project_id = @project_id AND id = @id`),
    usage: db.prepare('SELECT units, wakes, alerts_posted FROM agent_usage WHERE project_id = ? AND day = ?'),
    addUsage: db.prepare(`INSERT INTO agent_usage (project_id, day, units, wakes, alerts_posted) VALUES (@project_id, @day, @units, @wakes, @alerts)
      ON CONFLICT (project_id, day) DO UPDATE SET units = units + excluded.units, wakes = wakes + excluded.wakes, alerts_posted = alerts_posted + excluded.alerts_posted`),
    insertConversation: db.prepare(`INSERT INTO agent_conversations (id, project_id, kind, title, thread_id, signal_id, status, answered_by, started_at, ended_at)
      VALUES (@id, @project_id, @kind, @title, @thread_id, @signal_id, @status, @answered_by, @started_at, @ended_at)`),
    finishConversation: db.prepare('UPDATE agent_conversations SET status = ?, ended_at = ?, answered_by = coalesce(?, answered_by) WHERE project_id = ? AND id = ?'),
    conversation: db.prepare('SELECT * FROM agent_conversations WHERE project_id = ? AND id = ?'),
    conversations: db.prepare('SELECT * FROM agent_conversations WHERE project_id = ? ORDER BY started_at DESC, rowid DESC LIMIT ?'),
    insertChannel: db.prepare('INSERT INTO agent_channels (id, project_id, name, kind, url, secret, created_at) VALUES (@id, @project_id, @name, @kind, @url, @secret, @created_at)'),
    channel: db.prepare('SELECT * FROM agent_channels WHERE project_id = ? AND id = ?'),
    channels: db.prepare('SELECT * FROM agent_channels WHERE project_id = ? ORDER BY created_at, id'),
    deleteChannel: db.prepare('DELETE FROM agent_channels WHERE project_id = ? AND id = ?'),
    insertDelivery: db.prepare(`INSERT INTO agent_deliveries (id, project_id, channel_id, title, message, status, created_at) VALUES (@id, @project_id, @channel_id, @title, @message, 'pending', @created_at)`),
    delivery: db.prepare('SELECT * FROM agent_deliveries WHERE project_id = ? AND id = ?'),
    deliveries: db.prepare('SELECT * FROM agent_deliveries WHERE project_id = ? AND (? IS NULL OR channel_id = ?) ORDER BY created_at DESC, rowid DESC LIMIT ?'),
    deliveryAttempt: db.prepare('UPDATE agent_deliveries SET status = ?, attempts = attempts + 1, last_status_code = ?, last_error = ?, delivered_at = ? WHERE id = ?'),
    watch: db.prepare('SELECT at FROM agent_watch WHERE project_id = ? AND key = ?'),
    putWatch: db.prepare('INSERT INTO agent_watch (project_id, key, at) VALUES (?, ?, ?) ON CONFLICT (project_id, key) DO UPDATE SET at = excluded.at'),
    projects: db.prepare('SELECT id, org_id FROM projects ORDER BY id'),
    orgOf: db.prepare('SELECT org_id FROM projects WHERE id = ?'),
    recentGroups: db.prepare('SELECT id, project_id, short_id, title FROM error_groups WHERE last_seen >= ? AND merged_into IS NULL'),
  };

  return {
    settings(projectId: string): AgentSettingsValues {
      const r = s.settings.get(projectId) as { settings: string } | undefined;
      return { ...DEFAULT_SETTINGS, ...(r ? (JSON.parse(r.settings) as Partial<AgentSettingsValues>) : {}) };
    },
    putSettings(projectId: string, v: AgentSettingsValues, now: number): void {
      s.putSettings.run(projectId, JSON.stringify(v), now);
    },

    visibleMemory(projectId: string, orgId: string): MemoryRow[] {
      return (s.memoryVisible.all(projectId, orgId) as any[]).map((r) => pid(r)!);
    },
    memory(projectId: string, orgId: string, id: string): MemoryRow | undefined {
      return pid(s.memoryById.get(id, projectId, orgId) as any);
    },
    activeMemoryCount(scope: 'project' | 'organization', projectId: string, orgId: string): number {
      return (scope === 'project' ? (s.memoryCountProject.get(projectId) as any) : (s.memoryCountOrg.get(orgId) as any)).n;
    },
    addMemory(m: Omit<MemoryRow, 'id' | 'retired_at'>): MemoryRow {
      const row = { ...m, id: randomUUID() };
      s.insertMemory.run(row);
      return { ...row, retired_at: null };
    },
    retireMemory(id: string, now: number): boolean {
      return s.retireMemory.run(now, id).changes > 0;
    },

    visibleSkills(projectId: string, orgId: string): SkillRow[] {
      return (s.skillsVisible.all(projectId, orgId) as any[]).map((r) => pid(r)!);
    },
    skill(projectId: string, orgId: string, id: string): SkillRow | undefined {
      return pid(s.skillById.get(id, projectId, orgId) as any);
    },
    /** Creates or updates in place the skill of this name in its scope; `created` tells which. */
    upsertSkill(k: { scope: 'project' | 'organization'; project_id: string; org_id: string; name: string; description: string; content: string }, now: number): { row: SkillRow; created: boolean } {
      const existing = (k.scope === 'project' ? s.projectSkill.get(k.project_id, k.name) : s.orgSkill.get(k.org_id, k.name)) as any;
      if (existing) {
        s.updateSkill.run(k.description, k.content, now, existing.id);
        return { row: pid({ ...existing, description: k.description, content: k.content, updated_at: now })!, created: false };
      }
      const row = { id: randomUUID(), ...k, project_id: k.scope === 'project' ? k.project_id : null, now };
      s.insertSkill.run(row);
      return { row: { id: row.id, project_id: row.project_id, org_id: k.org_id, scope: k.scope, name: k.name, description: k.description, content: k.content, created_at: now, updated_at: now }, created: true };
    },
    deleteSkill(id: string): void {
      s.deleteSkill.run(id);
    },

    addSignal(r: Omit<SignalRow, 'alert' | 'answer' | 'conversation_id' | 'updated_at'>): SignalRow {
      s.insertSignal.run(r);
      return { ...r, alert: null, answer: null, conversation_id: null, updated_at: r.created_at };
    },
    signal(projectId: string, id: string): SignalRow | undefined {
      return pid(s.signal.get(projectId, id) as any);
    },
    signals(projectId: string, limit: number): SignalRow[] {
      return (s.signals.all(projectId, limit) as any[]).map((r) => pid(r)!);
    },
    latestSignalAbout(projectId: string, subject: string, since: number): SignalRow | undefined {
      return pid(s.signalOfSubject.get(projectId, subject, since) as any);
    },
    updateSignal(projectId: string, id: string, patch: { status?: string; alert?: string; answer?: string; conversation_id?: string }, now: number): void {
      s.updateSignal.run({ status: null, alert: null, answer: null, conversation_id: null, ...patch, project_id: projectId, id, now });
    },

    usage(projectId: string, day: number): UsageRow {
      return (s.usage.get(projectId, day) as UsageRow | undefined) ?? { units: 0, wakes: 0, alerts_posted: 0 };
    },
    addUsage(projectId: string, day: number, add: { units?: number; wakes?: number; alerts?: number }): void {
      s.addUsage.run({ project_id: projectId, day, units: add.units ?? 0, wakes: add.wakes ?? 0, alerts: add.alerts ?? 0 });
    },

    addConversation(c: Omit<ConversationRow, 'id'>): string {
      const id = randomUUID();
      s.insertConversation.run({ ...c, id });
      return id;
    },
    finishConversation(projectId: string, id: string, status: string, endedAt: number, answeredBy?: string): boolean {
      return s.finishConversation.run(status, endedAt, answeredBy ?? null, projectId, id).changes > 0;
    },
    conversation(projectId: string, id: string): ConversationRow | undefined {
      return pid(s.conversation.get(projectId, id) as any);
    },
    conversations(projectId: string, limit: number): ConversationRow[] {
      return (s.conversations.all(projectId, limit) as any[]).map((r) => pid(r)!);
    },

    addChannel(c: Omit<ChannelRow, 'id'>): ChannelRow {
      const row = { ...c, id: randomUUID() };
      s.insertChannel.run(row);
      return row;
    },
    channel(projectId: string, id: string): ChannelRow | undefined {
      return pid(s.channel.get(projectId, id) as any);
    },
    channels(projectId: string): ChannelRow[] {
      return (s.channels.all(projectId) as any[]).map((r) => pid(r)!);
    },
    deleteChannel(projectId: string, id: string): boolean {
      return s.deleteChannel.run(projectId, id).changes > 0;
    },

    addDelivery(d: { project_id: string; channel_id: string; title: string; message: string; created_at: number }): string {
      const id = randomUUID();
      s.insertDelivery.run({ ...d, id });
      return id;
    },
    delivery(projectId: string, id: string): DeliveryRow | undefined {
      return pid(s.delivery.get(projectId, id) as any);
    },
    deliveries(projectId: string, channelId: string | null, limit: number): DeliveryRow[] {
      return (s.deliveries.all(projectId, channelId, channelId, limit) as any[]).map((r) => pid(r)!);
    },
    recordAttempt(id: string, status: DeliveryRow['status'], code: number | null, error: string | null, deliveredAt: number | null): void {
      s.deliveryAttempt.run(status, code, error, deliveredAt, id);
    },

    watchMark(projectId: string, key: string): number | null {
      return (s.watch.get(projectId, key) as { at: number } | undefined)?.at ?? null;
    },
    setWatchMark(projectId: string, key: string, at: number): void {
      s.putWatch.run(projectId, key, at);
    },
    orgOf(projectId: string): string | null {
      return (s.orgOf.get(projectId) as { org_id: string } | undefined)?.org_id ?? null;
    },
    projects(): { id: string; org_id: string }[] {
      return (s.projects.all() as any[]).map((r) => ({ id: String(r.id), org_id: r.org_id }));
    },
    /** Error groups (every project) with an event since `since`: the spike detector's candidates. */
    groupsSeenSince(since: number): { id: string; project_id: string; short_id: string; title: string }[] {
      return (s.recentGroups.all(since) as any[]).map((r) => pid(r)!);
    },
    groupEventCount(projectId: string, groupId: string, from: number, to: number): Promise<number> {
      return errorEvents.count(Number(projectId), groupId, from, to);
    },
  };
}

export type AgentRepo = ReturnType<typeof createAgentRepo>;
