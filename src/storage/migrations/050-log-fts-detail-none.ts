import type { Migration } from './index.js';

/**
 * Storage per record (issue 22): new logs' full-text rows go to `logs_fts2`, which keeps no token
 * positions (`detail=none`, about 52 bytes less per log record in bench/retention-bytes.ts) and no
 * per-row sizes (`columnsize=0`, 14 bytes: without `contentless_delete`, which needs them, expiry
 * deletes a row by giving its indexed text again, src/storage/retention-repo.ts).
 * `logs_fts` keeps the rows written before (nothing is rewritten) and empties as they expire;
 * searches ask both and check phrases on the rows (src/storage/log-fts.ts).
 */
export const m050LogFtsDetailNone: Migration = {
  version: 50,
  name: 'full-text rows of new logs without positions (logs_fts2, detail=none)',
  sql: `
CREATE VIRTUAL TABLE logs_fts2 USING fts5(body, attrs, content='', columnsize=0, detail=none, tokenize='unicode61');
`,
};
