import { randomUUID } from 'node:crypto';
import type { Db } from './db.js';

export const INCIDENT_STATUSES = ['investigating', 'identified', 'monitoring', 'resolved'] as const;
export type IncidentStatus = (typeof INCIDENT_STATUSES)[number];
export const INCIDENT_IMPACTS = ['none', 'minor', 'major', 'critical'] as const;
export type IncidentImpact = (typeof INCIDENT_IMPACTS)[number];

export interface IncidentRow {
  id: string;
  project_id: string;
  number: number;
  title: string;
  status: IncidentStatus;
  impact: IncidentImpact;
  monitor_id: string | null;
  started_at: number;
  resolved_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface IncidentUpdateRow {
  id: string;
  at_ms: number;
  status: IncidentStatus;
  message: string;
  author: string;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
const fromRow = (r: any): IncidentRow => ({ ...r, project_id: String(r.project_id) });

/** Incidents with a per-project display number (INC-n) and a timeline of updates. */
export function createIncidentsRepo(db: Db) {
  const s = {
    nextNumber: db.prepare('SELECT COALESCE(MAX(number), 0) + 1 AS n FROM incidents WHERE project_id = ?'),
    insert: db.prepare(`INSERT INTO incidents (id, project_id, number, title, status, impact, monitor_id, started_at, resolved_at, created_at, updated_at)
      VALUES (@id, @project_id, @number, @title, @status, @impact, @monitor_id, @started_at, @resolved_at, @now, @now)`),
    get: db.prepare('SELECT * FROM incidents WHERE project_id = ? AND id = ?'),
    byNumber: db.prepare('SELECT * FROM incidents WHERE project_id = ? AND number = ?'),
    list: db.prepare(`SELECT * FROM incidents WHERE project_id = @pid
      AND (@open IS NULL OR (@open = 1 AND resolved_at IS NULL) OR (@open = 0 AND resolved_at IS NOT NULL))
      AND (@monitor IS NULL OR monitor_id = @monitor) AND (@since IS NULL OR resolved_at IS NULL OR resolved_at >= @since)
      ORDER BY started_at DESC, number DESC LIMIT @limit OFFSET @offset`),
    count: db.prepare(`SELECT COUNT(*) AS n FROM incidents WHERE project_id = @pid
      AND (@open IS NULL OR (@open = 1 AND resolved_at IS NULL) OR (@open = 0 AND resolved_at IS NOT NULL))
      AND (@monitor IS NULL OR monitor_id = @monitor) AND (@since IS NULL OR resolved_at IS NULL OR resolved_at >= @since)`),
    update: db.prepare(`UPDATE incidents SET title = @title, status = @status, impact = @impact, resolved_at = @resolved_at, updated_at = @updated_at
      WHERE project_id = @project_id AND id = @id`),
    addUpdate: db.prepare('INSERT INTO incident_updates (id, incident_id, at_ms, status, message, author) VALUES (?, ?, ?, ?, ?, ?)'),
    updates: db.prepare('SELECT id, at_ms, status, message, author FROM incident_updates WHERE incident_id = ? ORDER BY at_ms, rowid'),
    clearMonitor: db.prepare('UPDATE incidents SET monitor_id = NULL WHERE project_id = ? AND monitor_id = ?'),
  };
  const repo = {
    create(projectId: string, i: { title: string; status: IncidentStatus; impact: IncidentImpact; monitor_id: string | null; started_at: number; message: string; author: string }, now: number): IncidentRow {
      const pid = Number(projectId);
      const id = randomUUID();
      const number = (s.nextNumber.get(pid) as { n: number }).n;
      s.insert.run({ id, project_id: pid, number, title: i.title, status: i.status, impact: i.impact, monitor_id: i.monitor_id, started_at: i.started_at, resolved_at: i.status === 'resolved' ? now : null, now });
      s.addUpdate.run(randomUUID(), id, now, i.status, i.message, i.author);
      return repo.get(projectId, id)!;
    },
    get(projectId: string, id: string): IncidentRow | undefined {
      const r = s.get.get(Number(projectId), id);
      return r ? fromRow(r) : undefined;
    },
    byNumber(projectId: string, n: number): IncidentRow | undefined {
      const r = s.byNumber.get(Number(projectId), n);
      return r ? fromRow(r) : undefined;
    },
    list(projectId: string, f: { open?: boolean; monitorId?: string; resolvedSince?: number; limit: number; offset: number }): { rows: IncidentRow[]; total: number } {
      const p = { pid: Number(projectId), open: f.open === undefined ? null : f.open ? 1 : 0, monitor: f.monitorId ?? null, since: f.resolvedSince ?? null };
      return { rows: (s.list.all({ ...p, limit: f.limit, offset: f.offset }) as any[]).map(fromRow), total: (s.count.get(p) as { n: number }).n };
    },
    /** Saves the changed fields and appends a timeline entry. */
    update(row: IncidentRow, entry: { message: string; author: string }, now: number): IncidentRow {
      s.update.run({ ...row, project_id: Number(row.project_id), updated_at: now });
      s.addUpdate.run(randomUUID(), row.id, now, row.status, entry.message, entry.author);
      return repo.get(row.project_id, row.id)!;
    },
    updates(incidentId: string): IncidentUpdateRow[] {
      return s.updates.all(incidentId) as IncidentUpdateRow[];
    },
    forgetMonitor(projectId: string, monitorId: string): void {
      s.clearMonitor.run(Number(projectId), monitorId);
    },
  };
  return repo;
}

export type IncidentsRepo = ReturnType<typeof createIncidentsRepo>;
