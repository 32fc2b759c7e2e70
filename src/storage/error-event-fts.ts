import type { EventQueryTerm } from '../domain/errors/event-query.js';

/**
 * events.search's prefilter over the trigram index of error events (migration 057).
 *
 * A free-text term (`word`, `"a phrase"`) or a `message:` / `title:` value holds on an event only
 * when the event's message, title or type holds the term's text as a substring (SQLite folding ASCII
 * case, compileEventTerms); such an event then holds every 3-character piece of that text in the
 * index, which folds case over all of Unicode (a fold of each character on its own, so of ASCII-
 * lowered text too). So the events the expression below finds are a superset of the answer, and
 * the search keeps its exact predicate on them: the answer is the scan's.
 *
 * Only terms that must hold narrow: negated terms, and a text shorter than 3 characters (no
 * trigram), or a `*` value with no 3-character piece between its wildcards, are left to the exact
 * predicate alone. Null when no term narrows (the search then reads the window as before).
 */
export function errorEventFtsExpr(terms: readonly EventQueryTerm[]): string | null {
  const parts: string[] = [];
  for (const t of terms) {
    if (t.negated) continue;
    if (t.kind === 'text') {
      const e = piecesExpr([t.text.toLowerCase()]);
      if (e) parts.push(e);
    } else if (t.kind === 'contains') {
      // Values are alternatives (OR): each must narrow, else the term does not.
      const alts = t.values.map((v) => piecesExpr(v.includes('*') ? v.split('*') : [v.toLowerCase()]));
      if (alts.length && alts.every((a) => a !== null)) parts.push(alts.length === 1 ? alts[0]! : `(${alts.join(' OR ')})`);
    }
  }
  return parts.length ? parts.join(' AND ') : null;
}

/** The AND of the distinct trigrams of texts (each an FTS5 string), or null when they have none. */
function piecesExpr(texts: readonly string[]): string | null {
  const grams = new Set<string>();
  for (const text of texts) {
    // NUL never goes into an FTS5 query string: such a text is left to the exact predicate.
    if (text.includes('\u0000')) continue;
    const cp = [...text];
    for (let i = 0; i + 3 <= cp.length; i++) grams.add(cp.slice(i, i + 3).join(''));
  }
  if (!grams.size) return null;
  return `(${[...grams].map((g) => `"${g.replace(/"/g, '""')}"`).join(' AND ')})`;
}

/**
 * Candidates of an expression: the index rowids of events in a project (bound: expression, the
 * index rows to read at most, project id, then the window's ends when given, then a limit) — the
 * index's rows, newest first, then their ids' rows by rowid (CROSS JOIN: the planner otherwise
 * walked every id of the project), never an event row.
 */
export const ftsCandidatesSql = (from: boolean, to: boolean) =>
  `SELECT c.r FROM (SELECT rowid AS r FROM error_events_fts WHERE error_events_fts MATCH ? ORDER BY rowid DESC LIMIT ?) c CROSS JOIN error_event_fts_ids i ON i.id = c.r
    WHERE i.project_id = ?${from ? ' AND i.timestamp_ms >= ?' : ''}${to ? ' AND i.timestamp_ms <= ?' : ''} LIMIT ?`;

/** How many of an expression's index rows there are, up to a limit (bound: expression, limit). */
export const FTS_ROWS_SQL = 'SELECT COUNT(*) FROM (SELECT 1 FROM error_events_fts WHERE error_events_fts MATCH ? LIMIT ?)';

/** The event ids of candidates given as a JSON array of index rowids (integers: nothing but numbers goes through JavaScript). */
export const CANDIDATE_EVENTS_SQL = 'SELECT event_id FROM error_event_fts_ids WHERE id IN (SELECT value FROM json_each(?))';
