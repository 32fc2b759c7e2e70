import { parseArgs } from 'node:util';
import type { BootstrapResult } from '../core/bootstrap.js';
import { loadConfig } from '../core/config.js';
import { runCommands, type LifecycleCommand } from './commands.js';

// The server and storage load only for the commands that need them, so `sightline <tag> <verb>` stays quick.
const loadServer = () => import('../server.js');
const loadBootstrap = () => import('../core/bootstrap.js');

/** Commands of the CLI itself, dispatched before the `<tag> <verb>` commands derived from the catalogue. */
export const LIFECYCLE: readonly LifecycleCommand[] = [
  { name: 'start', summary: 'run the server (REST, OpenAPI, MCP, ingestion); sets up an empty database' },
  { name: 'init', summary: 'create an organization, project and keys, print them (--json for scripts)' },
  { name: 'mcp', summary: 'serve the MCP tools over stdio for a local assistant' },
  { name: 'login', summary: 'sign in with OAuth and store the token for later commands' },
  { name: 'logout', summary: 'forget the stored token' },
  { name: 'completion', summary: 'print a shell completion script: completion bash|zsh|fish' },
  { name: 'backup', summary: 'copy the live database to a file, consistent, without stopping: backup <file>' },
  { name: 'restore', summary: 'replace the database with a backup (the server must be stopped): restore <file>' },
  { name: 'migrate', summary: 'copy the SQLite database\'s spans and logs into ClickHouse (SIGHTLINE_CLICKHOUSE_URL or --url): migrate --to-clickhouse' },
  { name: 'connector run', summary: 'run a remote-access connector in your network: connector run --server <url> --state <file> --profiles <file> [--enroll <code>]' },
  { name: 'releases gate', summary: 'CI release gate: wait for the health verdict, print it as JSON, exit 3 on regressed' },
];

function snippets(base: string, ingest: string, mcp: string, r: BootstrapResult): string {
  const host = new URL(ingest);
  const dsn = `${host.protocol}//${r.ingest_key}@${host.host}${host.pathname}/${r.project_id}`;
  return [
    '',
    `  Sightline is running at ${base}`,
    '',
    `  organization   ${r.organization_id}`,
    `  project        ${r.project_id}`,
    `  owner          ${r.owner_email}${r.owner_password ? `  password: ${r.owner_password}` : ''}`,
    `  ingest key     ${r.ingest_key}   (events:ingest only: sends telemetry, cannot read it)`,
    `  admin key      ${r.admin_key}   (*: every scope; keep it secret)`,
    '',
    '  These secrets are shown once; only their hashes are stored.',
    '',
    `  Sentry DSN     ${dsn}`,
    `  OTLP endpoint  ${ingest}   (OTEL_EXPORTER_OTLP_ENDPOINT; header x-service-key=<ingest key>)`,
    `  MCP server     ${mcp}`,
    `  Try it         curl -H 'x-service-key: ${r.admin_key}' ${base}/v1/projects/${r.project_id}/feedback`,
    '',
  ].join('\n');
}

async function start(): Promise<number> {
  const [{ createSightline }, { bootstrapOrganization }] = await Promise.all([loadServer(), loadBootstrap()]);
  const s = createSightline();
  let created: BootstrapResult | null = null;
  // Checked and created in one write transaction: processes starting together over one database
  // (docker-compose.yml starts three) create one first organization between them.
  created = s.services.atomic(() => (s.services.identity.isEmpty() ? bootstrapOrganization(s.services, { now: Date.now() }) : null));
  await s.listen();
  if (created) process.stdout.write(snippets(s.config.baseUrl, s.config.ingestUrl, s.config.mcpUrl, created) + '\n');
  else s.log.info({ url: s.config.baseUrl, db: s.config.dbFile }, 'Sightline is running');
  // Graceful stop: no new connections, in-flight requests and their ingest writes finish, then exit.
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    s.log.info({ signal }, 'shutting down: finishing in-flight requests');
    await s.close();
    s.log.info('stopped');
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
  return new Promise<number>(() => {});
}

async function init(argv: string[]): Promise<number> {
  const [{ createSightline }, { bootstrapOrganization }] = await Promise.all([loadServer(), loadBootstrap()]);
  const { values } = parseArgs({
    args: argv,
    options: { json: { type: 'boolean' }, org: { type: 'string' }, project: { type: 'string' }, email: { type: 'string' } },
    strict: true,
  });
  const s = createSightline({}, { logger: undefined });
  try {
    const r = bootstrapOrganization(s.services, { org: values.org, project: values.project, email: values.email, now: Date.now() });
    if (values.json) process.stdout.write(JSON.stringify({ ...r, base_url: s.config.baseUrl }) + '\n');
    else process.stdout.write(snippets(s.config.baseUrl, s.config.ingestUrl, s.config.mcpUrl, r) + '\n');
  } finally {
    s.db.close();
  }
  return 0;
}

/**
 * Backup and restore copy the SQLite file only. With SIGHTLINE_DATABASE_URL or SIGHTLINE_CLICKHOUSE_URL
 * set, what a user means by their data is in PostgreSQL and ClickHouse, and a process's SQLite file holds
 * nothing the processes share: the command refuses, saying what to back up instead, unless
 * `--sqlite-only` says the file alone is meant.
 */
function scaleOutRefusal(config: { databaseUrl: string | null; clickhouseUrl: string | null }, verb: 'backup' | 'restore', sqliteOnly: boolean | undefined): string | null {
  if (sqliteOnly || (!config.databaseUrl && !config.clickhouseUrl)) return null;
  const where = [config.databaseUrl ? 'control data in PostgreSQL (SIGHTLINE_DATABASE_URL): pg_dump' : '', config.clickhouseUrl ? "telemetry in ClickHouse (SIGHTLINE_CLICKHOUSE_URL): its BACKUP command or a copy of its data directory with the server stopped (18.16: ALTER TABLE … FREEZE)" : '']
    .filter(Boolean)
    .join('; ');
  return `sightline: ${verb} copies the SQLite file (SIGHTLINE_DB) only, and this configuration keeps its data elsewhere — ${where}. Back those up with their own tools. To ${verb} the SQLite file alone anyway, add --sqlite-only.\n`;
}

/** `sightline backup <file>`: VACUUM INTO from the configured database (SIGHTLINE_DB), live. */
async function backup(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: { json: { type: 'boolean' }, 'sqlite-only': { type: 'boolean' } }, allowPositionals: true, strict: true });
  if (positionals.length !== 1) {
    process.stderr.write('sightline: usage: sightline backup <file> [--json] [--sqlite-only]   (the database is SIGHTLINE_DB)\n');
    return 2;
  }
  const { backupDatabase } = await import('../storage/backup.js');
  const config = loadConfig(process.env);
  const refused = scaleOutRefusal(config, 'backup', values['sqlite-only']);
  if (refused) {
    process.stderr.write(refused);
    return 2;
  }
  const r = backupDatabase(config.dbFile, positionals[0]!);
  if (values.json) process.stdout.write(JSON.stringify({ source: config.dbFile, ...r }) + '\n');
  else process.stdout.write(`backed up ${config.dbFile} to ${r.file}: ${r.bytes} bytes, schema version ${r.schemaVersion}, ${r.ms} ms\n`);
  return 0;
}

/** `sightline restore <file>`: refuses while a server runs on the database. */
async function restore(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: { json: { type: 'boolean' }, 'sqlite-only': { type: 'boolean' } }, allowPositionals: true, strict: true });
  if (positionals.length !== 1) {
    process.stderr.write('sightline: usage: sightline restore <file> [--json] [--sqlite-only]   (replaces SIGHTLINE_DB; stop the server first)\n');
    return 2;
  }
  const { restoreDatabase, RestoreRefusedError } = await import('../storage/backup.js');
  const config = loadConfig(process.env);
  const refused = scaleOutRefusal(config, 'restore', values['sqlite-only']);
  if (refused) {
    process.stderr.write(refused);
    return 2;
  }
  try {
    const r = restoreDatabase(positionals[0]!, config.dbFile);
    if (values.json) process.stdout.write(JSON.stringify(r) + '\n');
    else process.stdout.write(`restored ${r.restored} from ${r.from} (${r.bytes} bytes, schema version ${r.schemaVersion})${r.previous ? `; the database it replaced is kept as ${r.previous}` : ''}\n`);
    return 0;
  } catch (err) {
    if (err instanceof RestoreRefusedError) {
      process.stderr.write(`sightline: restore refused: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

/**
 * `sightline migrate --to-clickhouse`: copies the spans and log records of SIGHTLINE_DB into
 * ClickHouse; `--to-postgres`: copies its control tables into PostgreSQL (SIGHTLINE_DATABASE_URL or
 * --url). Stop the server first (rows written during the copy would be missed), then start it with
 * the URL set.
 */
async function migrate(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { 'to-clickhouse': { type: 'boolean' }, 'to-postgres': { type: 'boolean' }, url: { type: 'string' }, json: { type: 'boolean' } }, strict: true });
  if (values['to-postgres']) return migrateToPostgres(values);
  const config = loadConfig(process.env);
  const url = values.url ?? config.clickhouseUrl;
  if (!values['to-clickhouse'] || !url) {
    process.stderr.write('sightline: usage: sightline migrate --to-clickhouse [--url http://host:8123/db] [--json]   (from SIGHTLINE_DB; the URL defaults to SIGHTLINE_CLICKHOUSE_URL)\n');
    return 2;
  }
  const { openDatabase } = await import('../storage/db.js');
  const { createHttpEngine } = await import('../storage/clickhouse/client.js');
  const { copyAgentObservationsToClickHouse, copyCaptureEventsToClickHouse, copyReleaseRollupsToClickHouse, copyErrorEventsToClickHouse, copyLogsToClickHouse, copyMetricPointsToClickHouse, copyMonitorResultsToClickHouse, copySpansToClickHouse, CopyRefusedError } = await import('../storage/clickhouse/migrate.js');
  const { runningServer } = await import('../storage/backup.js');
  const pid = runningServer(config.dbFile);
  if (pid !== null) {
    process.stderr.write(`sightline: migrate refused: a server (pid ${pid}) is running on ${config.dbFile}; stop it first\n`);
    return 1;
  }
  const db = openDatabase(config.dbFile);
  // Error event ids go beside the groups: PostgreSQL's when control data is there.
  const ids = config.databaseUrl ? (await import('../server.js')).openStores(config, () => {}) : db;
  const engine = createHttpEngine(url);
  // Spans, log records, metric points, monitor results, error events, capture events, agent observations and scores, release rollups; each is refused on its own when ClickHouse already holds that kind
  // (a database whose spans were copied by an earlier version still gets its logs copied).
  const refused = (err: unknown) => {
    if (!(err instanceof CopyRefusedError)) throw err;
    process.stderr.write(`sightline: migrate refused: ${err.message}\n`);
    return null;
  };
  try {
    const r = await copySpansToClickHouse(db, engine, { onProgress: (n) => !values.json && process.stderr.write(`\r${n} spans copied`) }).catch(refused);
    const l = await copyLogsToClickHouse(db, engine, { onProgress: (n) => !values.json && process.stderr.write(`\r${n} log records copied`) }).catch(refused);
    const m = await copyMetricPointsToClickHouse(db, engine, { onProgress: (n) => !values.json && process.stderr.write(`\r${n} metric points copied`) }).catch(refused);
    const mr = await copyMonitorResultsToClickHouse(db, engine, { onProgress: (n) => !values.json && process.stderr.write(`\r${n} monitor results copied`) }).catch(refused);
    const e = await copyErrorEventsToClickHouse(db, engine, { ids, onProgress: (n) => !values.json && process.stderr.write(`\r${n} error events copied`) }).catch(refused);
    const ce = await copyCaptureEventsToClickHouse(db, engine, { onProgress: (n) => !values.json && process.stderr.write(`\r${n} capture events copied`) }).catch(refused);
    const ai = await copyAgentObservationsToClickHouse(db, engine, { onProgress: (n) => !values.json && process.stderr.write(`\r${n} agent observations and scores copied`) }).catch(refused);
    const rel = await copyReleaseRollupsToClickHouse(db, engine, { onProgress: (n) => !values.json && process.stderr.write(`\r${n} release rollup and activity rows copied`) }).catch(refused);
    // Refused: nothing copied (a database without monitor results, error events, capture events or AI rows copies none, whatever ClickHouse holds).
    if (!r && !l && !m && !mr?.monitor_results && !mr?.monitors && !e?.error_events && !ce?.capture_events && !ai?.agent_observations && !ai?.agent_scores && !rel?.release_rollups && !rel?.release_activity) return 1;
    if (values.json) {
      const out = { source: config.dbFile, target: url.replace(/\/\/[^@/]*@/, '//'), ...(r ?? {}), ...(l ? { logs: l.logs, log_projects: l.projects, logs_ms: l.ms } : {}),
        ...(m ? { metric_points: m.points, metric_projects: m.projects, metric_points_ms: m.ms } : {}),
        ...(mr ? { monitor_results: mr.monitor_results, monitors: mr.monitors, monitor_results_ms: mr.ms } : {}),
        ...(e ? { error_events: e.error_events, error_event_projects: e.projects, error_events_ms: e.ms } : {}),
        ...(ce ? { capture_events: ce.capture_events, capture_projects: ce.projects, capture_events_ms: ce.ms } : {}),
        ...(ai ? { agent_observations: ai.agent_observations, agent_scores: ai.agent_scores, agent_observations_ms: ai.ms } : {}),
        ...(rel ? { release_rollups: rel.release_rollups, release_activity: rel.release_activity, release_rollups_ms: rel.ms } : {}),
      };
      process.stdout.write(JSON.stringify(out) + '\n');
    } else {
      if (r) process.stdout.write(`\ncopied ${r.spans} spans of ${r.projects} projects from ${config.dbFile} to ClickHouse in ${r.ms} ms\n`);
      if (l) process.stdout.write(`\ncopied ${l.logs} log records of ${l.projects} projects from ${config.dbFile} to ClickHouse in ${l.ms} ms\n`);
      if (m) process.stdout.write(`\ncopied ${m.points} metric points of ${m.projects} projects from ${config.dbFile} to ClickHouse in ${m.ms} ms\n`);
      if (mr) process.stdout.write(`\ncopied ${mr.monitor_results} results of ${mr.monitors} monitors from ${config.dbFile} to ClickHouse in ${mr.ms} ms\n`);
      if (e) process.stdout.write(`\ncopied ${e.error_events} error events of ${e.projects} projects from ${config.dbFile} to ClickHouse in ${e.ms} ms\n`);
      if (ce) process.stdout.write(`\ncopied ${ce.capture_events} capture events of ${ce.projects} projects from ${config.dbFile} to ClickHouse in ${ce.ms} ms\n`);
      if (ai) process.stdout.write(`\ncopied ${ai.agent_observations} agent observations and ${ai.agent_scores} scores from ${config.dbFile} to ClickHouse in ${ai.ms} ms\n`);
      if (rel) process.stdout.write(`\ncopied ${rel.release_rollups} release rollup cells and ${rel.release_activity} activity segments from ${config.dbFile} to ClickHouse in ${rel.ms} ms\n`);
      process.stdout.write('start the server with SIGHTLINE_CLICKHOUSE_URL set\n');
    }
    return 0;
  } finally {
    if (ids !== db) ids.close();
    db.close();
    await engine.close();
  }
}

async function migrateToPostgres(values: { url?: string; json?: boolean; 'to-clickhouse'?: boolean }): Promise<number> {
  const config = loadConfig(process.env);
  const url = values.url ?? config.databaseUrl;
  if (values['to-clickhouse'] || !url) {
    process.stderr.write('sightline: usage: sightline migrate --to-postgres [--url postgres://user@host/db] [--json]   (from SIGHTLINE_DB; the URL defaults to SIGHTLINE_DATABASE_URL)\n');
    return 2;
  }
  const { openDatabase } = await import('../storage/db.js');
  const { openSyncPg } = await import('../storage/postgres/sync-client.js');
  const { copyControlToPostgres, PgCopyRefusedError } = await import('../storage/postgres/migrate.js');
  const { runningServer } = await import('../storage/backup.js');
  const pid = runningServer(config.dbFile);
  if (pid !== null) {
    process.stderr.write(`sightline: migrate refused: a server (pid ${pid}) is running on ${config.dbFile}; stop it first\n`);
    return 1;
  }
  const db = openDatabase(config.dbFile);
  const pg = openSyncPg(url);
  try {
    const r = copyControlToPostgres(db, pg, { onProgress: (table, n) => !values.json && n > 0 && process.stderr.write(`${table}: ${n} rows\n`) });
    if (values.json) process.stdout.write(JSON.stringify({ source: config.dbFile, target: url.replace(/\/\/[^@/]*@/, '//'), ...r }) + '\n');
    else process.stdout.write(`copied ${r.rows} rows of ${r.tables} control tables from ${config.dbFile} to PostgreSQL in ${r.ms} ms; start the server with SIGHTLINE_DATABASE_URL set\n`);
    return 0;
  } catch (err) {
    if (err instanceof PgCopyRefusedError) {
      process.stderr.write(`sightline: migrate refused: ${err.message}\n`);
      return 1;
    }
    throw err;
  } finally {
    db.close();
    pg.close();
  }
}

async function completion(argv: string[]): Promise<number> {
  const [{ completionScript, SHELLS }, { catalogue }] = await Promise.all([import('./completion.js'), import('../../operations/index.js')]);
  const shell = argv[0];
  if (!shell || !(SHELLS as readonly string[]).includes(shell) || argv.length > 1) {
    process.stderr.write(`sightline: usage: sightline completion ${SHELLS.join('|')}\n`);
    return 2;
  }
  process.stdout.write(completionScript(shell as (typeof SHELLS)[number], catalogue, LIFECYCLE.filter((l) => l.name !== 'completion')));
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  try {
    switch (cmd) {
      case 'start':
        return await start();
      case 'init':
        return await init(rest);
      case 'mcp':
        return (await import('../mcp/stdio.js')).runStdio();
      case 'login':
        return await (await import('./login.js')).login(rest);
      case 'logout':
        return await (await import('./login.js')).logout(rest);
      case 'completion':
        return await completion(rest);
      case 'backup':
        return await backup(rest);
      case 'restore':
        return await restore(rest);
      case 'migrate':
        return await migrate(rest);
      case 'connector':
        return await (await import('../remote-connector/cli.js')).connectorCommand(rest);
      case 'releases':
        if (rest[0] === 'gate') return await (await import('./release-gate.js')).releaseGate(rest.slice(1), { loadStoredToken: (await import('./login.js')).loadStoredToken });
        return await runCommands(argv, { lifecycle: LIFECYCLE });
      default:
        // Everything else is `<tag> <verb>` (or help), derived from the catalogue.
        return await runCommands(argv, { lifecycle: LIFECYCLE });
    }
  } catch (err) {
    process.stderr.write(`sightline: ${(err as Error).message}\n`);
    return err instanceof TypeError && /parseArgs|Unknown option/i.test(String(err)) ? 2 : 1;
  }
}

export { loadConfig };
