/**
 * Chat threads and their messages (operations/threads.ts, `ask`). Messages are append-only: a
 * message gets the thread's next `sequence` and is never changed; appending the same message id,
 * or the same source plus external message id, again returns the stored message (idempotent).
 */
import { randomUUID } from 'node:crypto';
import type { Db } from './db.js';

export interface ThreadRow {
  id: string;
  project_id: string;
  title: string;
  source: string;
  created_by: string;
  external_thread_id: string | null;
  incident_id: string | null;
  model_id: string | null;
  archived_at: number | null;
  last_message_at: number | null;
  message_count: number;
  created_at: number;
  updated_at: number;
}

export const MESSAGE_ROLES = ['user', 'assistant', 'system'] as const;
export type MessageRole = (typeof MESSAGE_ROLES)[number];

export interface MessageRow {
  id: string;
  thread_id: string;
  sequence: number;
  role: MessageRole;
  source: string;
  text: string;
  external_message_id: string | null;
  author_name: string | null;
  author_image: string | null;
  author_user_id: string | null;
  author_key_id: string | null;
  answered_by: string | null;
  created_at: number;
}

export type NewMessage = Omit<MessageRow, 'id' | 'thread_id' | 'sequence' | 'created_at'> & { id?: string };

export type ArchiveFilter = 'active' | 'archived' | 'all';

/* eslint-disable @typescript-eslint/no-explicit-any */
const threadFrom = (r: any): ThreadRow => ({ ...r, project_id: String(r.project_id) });

/** `%`, `_` and `\` match themselves in a LIKE pattern (ESCAPE '\'). */
const likeEscape = (q: string) => q.replace(/[\\%_]/g, (c) => `\\${c}`);

export function createThreadsRepo(db: Db) {
  const archived = `(@archived = 'all' OR (@archived = 'active' AND archived_at IS NULL) OR (@archived = 'archived' AND archived_at IS NOT NULL))`;
  const s = {
    insert: db.prepare(`INSERT INTO chat_threads (id, project_id, title, source, created_by, external_thread_id, incident_id, model_id, created_at, updated_at)
      VALUES (@id, @project_id, @title, @source, @created_by, @external_thread_id, @incident_id, @model_id, @now, @now)`),
    get: db.prepare('SELECT * FROM chat_threads WHERE project_id = ? AND id = ?'),
    byExternal: db.prepare('SELECT * FROM chat_threads WHERE project_id = ? AND source = ? AND external_thread_id = ?'),
    list: db.prepare(`SELECT * FROM chat_threads WHERE project_id = @pid AND ${archived} AND (@incident IS NULL OR incident_id = @incident)
      ORDER BY COALESCE(last_message_at, created_at) DESC, created_at DESC, id LIMIT @limit OFFSET @offset`),
    count: db.prepare(`SELECT COUNT(*) AS n FROM chat_threads WHERE project_id = @pid AND ${archived} AND (@incident IS NULL OR incident_id = @incident)`),
    search: db.prepare(`SELECT t.* FROM chat_threads t WHERE t.project_id = @pid AND ${archived.replaceAll('archived_at', 't.archived_at')}
      AND (t.title LIKE @pattern ESCAPE '\\' OR EXISTS (SELECT 1 FROM chat_messages m WHERE m.thread_id = t.id AND m.text LIKE @pattern ESCAPE '\\'))
      ORDER BY COALESCE(t.last_message_at, t.created_at) DESC, t.id LIMIT @limit`),
    firstMatch: db.prepare(`SELECT * FROM chat_messages WHERE thread_id = ? AND text LIKE ? ESCAPE '\\' ORDER BY sequence LIMIT 1`),
    setArchived: db.prepare('UPDATE chat_threads SET archived_at = ?, updated_at = ? WHERE project_id = ? AND id = ?'),
    remove: db.prepare('DELETE FROM chat_threads WHERE project_id = ? AND id = ?'),
    removeMessages: db.prepare('DELETE FROM chat_messages WHERE thread_id = ?'),
    messages: db.prepare('SELECT * FROM chat_messages WHERE thread_id = ? AND sequence > ? ORDER BY sequence LIMIT ?'),
    lastMessages: db.prepare('SELECT * FROM (SELECT * FROM chat_messages WHERE thread_id = ? ORDER BY sequence DESC LIMIT ?) ORDER BY sequence'),
    messageById: db.prepare('SELECT * FROM chat_messages WHERE thread_id = ? AND id = ?'),
    messageByExternal: db.prepare('SELECT * FROM chat_messages WHERE thread_id = ? AND source = ? AND external_message_id = ?'),
    nextSequence: db.prepare('SELECT COALESCE(MAX(sequence), 0) + 1 AS n FROM chat_messages WHERE thread_id = ?'),
    insertMessage: db.prepare(`INSERT INTO chat_messages (thread_id, id, sequence, role, source, text, external_message_id, author_name, author_image, author_user_id, author_key_id, answered_by, created_at)
      VALUES (@thread_id, @id, @sequence, @role, @source, @text, @external_message_id, @author_name, @author_image, @author_user_id, @author_key_id, @answered_by, @created_at)`),
    touch: db.prepare(`UPDATE chat_threads SET last_message_at = @now, updated_at = @now, message_count = message_count + 1,
      model_id = COALESCE(@model_id, model_id) WHERE id = @id`),
  };

  const repo = {
    create(projectId: string, t: { title: string; source: string; created_by: string; external_thread_id: string | null; incident_id: string | null; model_id: string | null }, now: number): ThreadRow {
      const id = randomUUID();
      s.insert.run({ id, project_id: Number(projectId), ...t, now });
      return repo.get(projectId, id)!;
    },
    get(projectId: string, id: string): ThreadRow | undefined {
      const r = s.get.get(Number(projectId), id);
      return r ? threadFrom(r) : undefined;
    },
    byExternal(projectId: string, source: string, externalId: string): ThreadRow | undefined {
      const r = s.byExternal.get(Number(projectId), source, externalId);
      return r ? threadFrom(r) : undefined;
    },
    list(projectId: string, f: { archived: ArchiveFilter; incidentId: string | null; limit: number; offset: number }): { rows: ThreadRow[]; total: number } {
      const p = { pid: Number(projectId), archived: f.archived, incident: f.incidentId };
      return { rows: (s.list.all({ ...p, limit: f.limit, offset: f.offset }) as any[]).map(threadFrom), total: (s.count.get(p) as { n: number }).n };
    },
    /** Threads whose title or any message contains `q` (case-insensitive), with the first matching message. */
    search(projectId: string, q: string, f: { archived: ArchiveFilter; limit: number }): { thread: ThreadRow; match: MessageRow | null }[] {
      const pattern = `%${likeEscape(q)}%`;
      const rows = (s.search.all({ pid: Number(projectId), archived: f.archived, pattern, limit: f.limit }) as any[]).map(threadFrom);
      return rows.map((thread) => ({ thread, match: (s.firstMatch.get(thread.id, pattern) as MessageRow | undefined) ?? null }));
    },
    setArchived(projectId: string, id: string, at: number | null, now: number): void {
      s.setArchived.run(at, now, Number(projectId), id);
    },
    remove(projectId: string, id: string): void {
      db.transaction(() => {
        s.removeMessages.run(id);
        s.remove.run(Number(projectId), id);
      })();
    },
    /** Messages after `afterSequence`, in sequence order. */
    messages(threadId: string, afterSequence: number, limit: number): MessageRow[] {
      return s.messages.all(threadId, afterSequence, limit) as MessageRow[];
    },
    /** The newest `n` messages, oldest first (the agent's view of the conversation so far). */
    lastMessages(threadId: string, n: number): MessageRow[] {
      return s.lastMessages.all(threadId, n) as MessageRow[];
    },
    /** The message an append would repeat: the same id, or the same source plus external message id. */
    findReplay(threadId: string, m: { id?: string; source: string; external_message_id: string | null }): MessageRow | undefined {
      if (m.id) {
        const r = s.messageById.get(threadId, m.id) as MessageRow | undefined;
        if (r) return r;
      }
      if (m.external_message_id) return s.messageByExternal.get(threadId, m.source, m.external_message_id) as MessageRow | undefined;
      return undefined;
    },
    /** Appends with the next sequence, or returns the stored message on a replay (`replayed`). */
    append(threadId: string, m: NewMessage, now: number): { message: MessageRow; replayed: boolean } {
      return db.transaction(() => {
        const existing = repo.findReplay(threadId, m);
        if (existing) return { message: existing, replayed: true };
        const id = m.id ?? randomUUID();
        const sequence = (s.nextSequence.get(threadId) as { n: number }).n;
        s.insertMessage.run({ ...m, id, thread_id: threadId, sequence, created_at: now });
        s.touch.run({ id: threadId, now, model_id: m.role === 'assistant' ? m.answered_by : null });
        return { message: s.messageById.get(threadId, id) as MessageRow, replayed: false };
      })();
    },
  };
  return repo;
}

export type ThreadsRepo = ReturnType<typeof createThreadsRepo>;
