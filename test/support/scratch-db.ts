/**
 * A migrated SQLite file in a temporary directory with organization `o` and project 1 (`web`),
 * removed after the file's tests: the fixture of the randomized equivalence tests.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { openDatabase, type Db } from '../../src/storage/db.js';

export function scratchProjectDb(name: string): { db: Db; file: string } {
  const dir = mkdtempSync(join(tmpdir(), `sightline-${name}-`));
  const file = join(dir, `${name}.db`);
  const db = openDatabase(file);
  afterAll(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  db.prepare("INSERT INTO organizations (id, name, created_at) VALUES ('o', 'Org', 0)").run();
  db.prepare("INSERT INTO projects (id, org_id, name, slug, created_at) VALUES (1, 'o', 'web', 'web', 0)").run();
  return { db, file };
}
