import { randomUUID } from 'node:crypto';
import type { Db } from './db.js';
import type { ErrorEventRecord } from '../domain/telemetry-types.js';
import type { GroupKey } from '../domain/grouping/fingerprint.js';
import { userField, userKeyOf } from '../domain/errors/users.js';

export interface ErrorGroupRow {
  id: string;
  project_id: string;
  seq: number;
  short_id: string;
  fingerprint: string;
  grouping_method: string;
  type: string;
  title: string;
  culprit: string;
  level: string;
  service_name: string;
  environment: string;
  status: 'unresolved' | 'resolved' | 'ignored' | 'muted';
  priority: 'low' | 'medium' | 'high' | 'critical';
  assigned_to: string | null;
  ai_assigned: boolean;
  first_seen: number;
  last_seen: number;
  event_count: number;
  /** Distinct users (error_group_users) of the events counted on the group. */
  user_count: number;
  /** Release of the group's earliest / latest event that named one ('' when none did). */
  first_release: string;
  last_release: string;
  merged_into: string | null;
  merged_at: number | null;
  updated_at: number;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
export function groupFromRow(r: any): ErrorGroupRow {
  return { ...r, project_id: String(r.project_id), ai_assigned: !!r.ai_assigned };
}

const LEVEL_RANK: Record<string, number> = { debug: 0, info: 1, warning: 2, error: 3, fatal: 4 };

/** Sentry-style short id: project slug + base-36 sequence (e.g. CHECKOUT-1A). */
export function shortId(projectSlug: string, seq: number): string {
  const prefix = projectSlug.toUpperCase().replace(/[^A-Z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 16) || 'PROJECT';
  return `${prefix}-${seq.toString(36).toUpperCase()}`;
}

/**
 * The write side of error groups: group lookup by fingerprint, creation, and event recording.
 * A merged duplicate keeps its fingerprint; its later events count on the canonical group
 * (spec, States and transitions).
 */
export function createErrorsIngestRepo(db: Db) {
  const s = {
    byFingerprint: db.prepare('SELECT * FROM error_groups WHERE project_id = ? AND fingerprint = ?'),
    byId: db.prepare('SELECT * FROM error_groups WHERE project_id = ? AND id = ?'),
    nextSeq: db.prepare('SELECT COALESCE(MAX(seq), 0) + 1 AS n FROM error_groups WHERE project_id = ?'),
    insertGroup: db.prepare(`INSERT INTO error_groups (id, project_id, seq, short_id, fingerprint, grouping_method, type, title, culprit, level,
      service_name, environment, first_seen, last_seen, event_count, updated_at)
      VALUES (@id, @project_id, @seq, @short_id, @fingerprint, @grouping_method, @type, @title, @culprit, @level, @service_name, @environment, @ts, @ts, 0, @now)`),
    insertEvent: db.prepare(`INSERT OR IGNORE INTO error_events (project_id, event_id, group_id, fingerprint_group_id, timestamp_ms, received_ms, source, platform,
      level, type, message, title, service_name, environment, release, transaction_name, server_name, trace_id, span_id, tags, user_json, payload)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    bump: db.prepare(`UPDATE error_groups SET event_count = event_count + 1, last_seen = MAX(last_seen, @ts), first_seen = MIN(first_seen, @ts),
      first_release = CASE WHEN @release <> '' AND (first_release = '' OR @ts < first_seen) THEN @release ELSE first_release END,
      last_release = CASE WHEN @release <> '' AND (last_release = '' OR @ts >= last_seen) THEN @release ELSE last_release END,
      user_count = user_count + @new_user,
      level = CASE WHEN @rank > @current_rank THEN @level ELSE level END,
      status = CASE WHEN status = 'resolved' THEN 'unresolved' ELSE status END, updated_at = @now WHERE id = @id`),
    // Rollups kept beside the group in the same transaction (migration 034): reads never scan events.
    dim: db.prepare(`INSERT INTO error_group_dims (group_id, kind, value, event_count, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?)
      ON CONFLICT (group_id, kind, value) DO UPDATE SET event_count = event_count + excluded.event_count, first_seen = MIN(first_seen, excluded.first_seen),
      last_seen = MAX(last_seen, excluded.last_seen)`),
    user: db.prepare('INSERT OR IGNORE INTO error_group_users (group_id, user_key, user_id, first_seen) VALUES (?, ?, ?, ?)'),
    exists: db.prepare('SELECT 1 FROM error_groups WHERE project_id = ? AND id = ?'),
    groupOfEvent: db.prepare('SELECT group_id FROM error_events WHERE project_id = ? AND event_id = ?'),
  };

  const ingest = db.transaction(
    (projectId: string, projectSlug: string, items: { event: ErrorEventRecord; key: GroupKey }[], now: number): ErrorsIngestOutcome => {
      const pid = Number(projectId);
      let inserted = 0;
      const groups: string[] = [];
      const created: GroupChange[] = [];
      const reopened: GroupChange[] = [];
      const dims = dimBatch(s.dim);
      for (const { event: e, key } of items) {
        let g = s.byFingerprint.get(pid, key.fingerprint) as any;
        if (!g) {
          const seq = (s.nextSeq.get(pid) as { n: number }).n;
          const row = {
            id: randomUUID(), project_id: pid, seq, short_id: shortId(projectSlug, seq), fingerprint: key.fingerprint,
            grouping_method: key.method, type: key.type, title: key.title, culprit: key.culprit, level: e.level,
            service_name: e.service_name, environment: e.environment, ts: e.timestamp_ms, now,
          };
          s.insertGroup.run(row);
          g = s.byId.get(pid, row.id);
          created.push(groupChange(g));
        }
        const own = g.id as string;
        const effective = (g.merged_into as string | null) ?? own;
        const info = s.insertEvent.run(
          pid, e.event_id, effective, own, e.timestamp_ms, e.received_ms, e.source, e.platform, e.level,
          e.exceptions.length ? e.exceptions[e.exceptions.length - 1]!.type : key.type, e.message, key.title,
          e.service_name, e.environment, e.release, e.transaction, e.server_name, e.trace_id, e.span_id,
          JSON.stringify(e.tags), e.user ? JSON.stringify(e.user) : null, JSON.stringify(e.payload),
        );
        if (info.changes > 0) {
          inserted++;
          const target = effective === own ? g : (s.byId.get(pid, effective) as any);
          if (target?.status === 'resolved' && !reopened.some((r) => r.groupId === effective)) {
            reopened.push(groupChange(target));
            target.status = 'unresolved';
          }
          const ts = e.timestamp_ms;
          if (e.environment) dims.add(effective, 'environment', e.environment, ts);
          if (e.service_name) dims.add(effective, 'service', e.service_name, ts);
          if (e.release) dims.add(effective, 'release', e.release, ts);
          const userKey = e.user ? userKeyOf(e.user) : null;
          const newUser = userKey !== null && s.user.run(effective, userKey, userField(e.user, 'id') || null, ts).changes > 0 ? 1 : 0;
          s.bump.run({
            id: effective, ts, now, level: e.level, rank: LEVEL_RANK[e.level] ?? 3, current_rank: LEVEL_RANK[target?.level] ?? 3,
            release: e.release, new_user: newUser,
          });
        }
        groups.push(effective);
      }
      dims.flush();
      return { inserted, groups, created, reopened };
    },
  );

  return {
    /** Group and store events in one transaction; a repeated event_id is ignored (SDK retries). */
    ingest(projectId: string, projectSlug: string, items: { event: ErrorEventRecord; key: GroupKey }[], now: number) {
      return ingest(projectId, projectSlug, items, now);
    },
    /** The group an event was counted on, by the SDK's event id. */
    groupOfEvent(projectId: string, eventId: string): string | undefined {
      return (s.groupOfEvent.get(Number(projectId), eventId) as { group_id: string } | undefined)?.group_id;
    },
    exists(projectId: string, groupId: string): boolean {
      return !!s.exists.get(Number(projectId), groupId);
    },
  };
}

/**
 * Environment / service / release counts of one ingest batch, summed per (group, kind, value) and
 * written once each at the end of the transaction: a batch from one service writes a few rows, not
 * three per event.
 */
function dimBatch(upsert: { run(...args: unknown[]): unknown }) {
  const acc = new Map<string, { group: string; kind: string; value: string; n: number; min: number; max: number }>();
  return {
    add(group: string, kind: string, value: string, ts: number) {
      const k = `${group}\u0000${kind}\u0000${value}`;
      const d = acc.get(k);
      if (!d) acc.set(k, { group, kind, value, n: 1, min: ts, max: ts });
      else {
        d.n++;
        if (ts < d.min) d.min = ts;
        if (ts > d.max) d.max = ts;
      }
    },
    flush() {
      for (const d of acc.values()) upsert.run(d.group, d.kind, d.value, d.n, d.min, d.max);
    },
  };
}

/** A group that ingest created or reopened (published as a domain event once committed). */
export interface GroupChange {
  groupId: string;
  shortId: string;
  title: string;
  level: string;
  service: string;
  environment: string;
}

export interface ErrorsIngestOutcome {
  inserted: number;
  groups: string[];
  created: GroupChange[];
  reopened: GroupChange[];
}

function groupChange(g: any): GroupChange {
  return { groupId: g.id, shortId: g.short_id, title: g.title, level: g.level, service: g.service_name ?? '', environment: g.environment ?? '' };
}

export type ErrorsIngestRepo = ReturnType<typeof createErrorsIngestRepo>;
