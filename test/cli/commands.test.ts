/**
 * The derived CLI in-process (runCommands with captured io) against a real server: help generated
 * from the descriptors, flag coercion by field type, bodies from files and stdin, credentials,
 * exit codes, --all over cursor pagination, and the per-operation extension hook.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { catalogue } from '../../operations/index.js';
import { flagsOf, kebab, type CliExtension } from '../../src/cli/commands.js';
import { LIFECYCLE } from '../../src/cli/main.js';
import { runInProcess } from './helpers.js';

const T0 = Date.parse('2026-05-01T08:00:00.000Z');
let clock = T0;
let t: TestServer;
let env: Record<string, string>;
const cli = (argv: string[], opts: Parameters<typeof runInProcess>[2] = {}, e: Record<string, string | undefined> = env) => runInProcess(argv, e, opts);

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  env = { SIGHTLINE_URL: t.url, SIGHTLINE_API_KEY: t.keys.admin };
});
afterAll(() => t.close());

describe('help, generated from the descriptors', () => {
  it('lists every tag with its verbs, and the lifecycle commands, at the top level', async () => {
    const r = await cli(['--help'], { lifecycle: LIFECYCLE });
    expect(r.code).toBe(0);
    // Commands are shown in kebab-case, as gh, stripe and kubectl name theirs.
    const kebab = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
    for (const op of catalogue) {
      const [tag, verb] = op.operationId.split('.') as [string, string];
      expect(r.stdout).toMatch(new RegExp(`^  ${kebab(tag)} +.*(^|[ ,])${kebab(verb)}(,|$)`, 'm'));
    }
    expect(r.stdout).toMatch(/^  api-keys +list, get, create, update, delete$/m);
    expect(r.stdout).toMatch(/^  logs +.*\btail\b/m);
    for (const name of ['start', 'init', 'mcp', 'login', 'logout']) expect(r.stdout).toMatch(new RegExp(`^  ${name} `, 'm'));
    expect(r.stdout).toContain('SIGHTLINE_API_KEY');
  });

  it('lists the verbs of a tag with their summaries and scopes', async () => {
    const r = await cli(['feedback', '--help']);
    expect(r.code).toBe(0);
    for (const op of catalogue.filter((o) => o.tag === 'feedback')) {
      expect(r.stdout).toContain(op.summary);
      expect(r.stdout).toContain(`[${op.scopes.join(' + ')}]`);
    }
  });

  it.each(catalogue.map((op) => [op.operationId, op] as const))('documents every flag of %s with its type, required mark and description', async (_id, op) => {
    const [tag, verb] = op.operationId.split('.') as [string, string];
    const r = await cli([tag, verb, '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(op.summary);
    expect(r.stdout).toContain(op.description);
    expect(r.stdout).toContain(`${op.method} ${op.path}`);
    for (const s of op.scopes) expect(r.stdout).toContain(s);
    if (!op.scopes.length) expect(r.stdout).toContain('any valid credential');
    for (const f of flagsOf(op)) {
      const line = r.stdout.split('\n').find((l) => l.startsWith(`  --${f.flag} `) || l.startsWith(`  --${f.flag},`));
      expect(line, `--${f.flag}`).toBeDefined();
      expect(line!.includes('(required)'), `--${f.flag} required mark`).toBe(f.required);
      if (f.description) expect(line).toContain(f.description);
    }
  });

  it('turns snake_case fields into kebab-case flags and marks only fields without a default as required', () => {
    const create = flagsOf(catalogue.find((o) => o.operationId === 'feedback.create')!);
    expect(create.find((f) => f.field === 'contact_email')!.flag).toBe('contact-email');
    expect(create.filter((f) => f.required).map((f) => f.flag)).toEqual(['message']);
    const list = flagsOf(catalogue.find((o) => o.operationId === 'deployments.list')!);
    expect(list.find((f) => f.field === 'limit')).toMatchObject({ kind: 'integer', required: false, default: 50 });
    expect(kebab('listRelatedTraces')).toBe('list-related-traces');
  });

  it('prints the top-level help on stderr with exit 2 when no command is given', async () => {
    const r = await cli([]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('Operations (tag: verbs)');
    const tagOnly = await cli(['deployments']);
    expect(tagOnly.code).toBe(2);
    expect(tagOnly.stderr).toContain('Record a deployment');
  });
});

describe('flags and input', () => {
  it('coerces booleans, nullable integers and their negation by the field types', async () => {
    const on = await cli(['projects', 'updateSpikeProtection', '--enabled', '--threshold-per-minute', '500', '--json']);
    expect(on.code).toBe(0);
    expect(JSON.parse(on.stdout).spike_protection).toEqual({ enabled: true, threshold_per_minute: 500 });
    const off = await cli(['projects', 'update-spike-protection', '--no-enabled', '--threshold-per-minute=null', '--json']);
    expect(off.code).toBe(0);
    expect(JSON.parse(off.stdout).spike_protection).toEqual({ enabled: false, threshold_per_minute: null });
  });

  it('collects arrays from repeated and comma-separated flags', async () => {
    const r = await cli(['api-keys', 'create', '--label', 'from the cli', '--scopes', 'errors:read,deployments:read', '--scopes', 'read', '--json']);
    expect(r.code).toBe(0);
    const key = JSON.parse(r.stdout);
    expect(key.scopes.sort()).toEqual(['deployments:read', 'errors:read', 'read']);
    expect(key.secret).toMatch(/^sl_/);
  });

  it('parses JSON fields and merges --body from a file, flags taking precedence', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sightline-cli-'));
    const file = join(dir, 'feedback.json');
    writeFileSync(file, JSON.stringify({ message: 'from the file', environment: 'file-env' }));
    const r = await cli(['feedback', 'create', '--body', `@${file}`, '--environment', 'flag-env', '--metadata', '{"plan":"pro","seats":3}', '--json']);
    expect(r.code).toBe(0);
    const { id } = JSON.parse(r.stdout);
    const got = JSON.parse((await cli(['feedback', 'get', '--feedback-id', id, '--json'])).stdout);
    expect(got).toMatchObject({ message: 'from the file', environment: 'flag-env', metadata: { plan: 'pro', seats: 3 } });
  });

  it('reads --body - from stdin', async () => {
    const r = await cli(['deployments', 'create', '--body', '-', '--json'], { stdin: '{"deployment_id":"stdin-1","version":"9.9.9"}' });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ deployment_id: 'stdin-1', version: '9.9.9' });
  });

  it('uses --project-id when given (another tenant\'s project answers 404)', async () => {
    const own = await cli(['projects', 'get', '--project-id', t.projectId, '--json']);
    expect(JSON.parse(own.stdout).id).toBe(t.projectId);
    const other = await cli(['deployments', 'list', '--project-id', t.otherProject.projectId]);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/^error 404 not_found: /);
  });
});

describe('exit codes', () => {
  it.each([
    [['feedback', 'list', '--limit', 'many'], /--limit expects an integer/],
    [['feedback', 'list', '--limit', '2.5'], /--limit expects an integer/],
    [['feedback', 'list', '--nope'], /Unknown flag --nope/],
    [['feedback', 'list', 'positional'], /Unexpected argument "positional"/],
    [['feedback', 'create'], /Missing required flag: --message/],
    [['feedback', 'create', '--message'], /--message needs a value/],
    [['feedback', 'create', '--metadata', '{not json', '--message', 'x'], /--metadata expects JSON/],
    [['feedback', 'create', '--body', '@/nonexistent/file.json'], /cannot read the file/],
    [['feedback', 'get', '--all', '--feedback-id', '00000000-0000-4000-8000-000000000000'], /not a paginated list/],
    [['feedback', 'frobnicate'], /feedback has no verb "frobnicate"/],
    [['frobnicate', 'list'], /unknown command "frobnicate"/],
  ])('exits 2 on a usage error: %j', async (argv, message) => {
    const r = await cli(argv);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe('');
  });

  it('exits 2 when there is no credential at all', async () => {
    const r = await cli(['feedback', 'list'], {}, { SIGHTLINE_URL: t.url });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/No credential: set SIGHTLINE_API_KEY .*`sightline login`/);
    expect(r.stderr).not.toContain('for its flags');
  });

  it('exits 1 with a readable line on an API error', async () => {
    const r = await cli(['feedback', 'list'], {}, { SIGHTLINE_URL: t.url, SIGHTLINE_API_KEY: t.keys.ingest });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error 403 insufficient_scope: This credential lacks the scope this operation needs: errors:read\.\n/);
    expect(r.stderr).toMatch(/^  docs: +http\S+\/docs#\S+$/m);
    expect(r.stderr).toMatch(/^  request: \S+ +\(--debug for timing\)$/m);
    expect(r.stdout).toBe('');
  });

  it('exits 1 with the field named on a validation error from the server', async () => {
    const tooLong = 'z'.repeat(65); // a commit id is at most 64 characters
    const r = await cli(['deployments', 'create', '--deployment-id', 'bad', '--commit-sha', tooLong]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error 400 invalid_parameter: `commit_sha`: .*\n  flag: +--commit-sha \(field commit_sha\)$/m);
    // --debug adds the request id and the time the call took.
    const d = await cli(['deployments', 'create', '--deployment-id', 'bad', '--commit-sha', tooLong, '--debug']);
    expect(d.code).toBe(1);
    expect(d.stderr).toMatch(/^  request: +\S+$/m);
    expect(d.stderr).toMatch(/^  took: +\d+ ms$/m);
  });

  it('exits 1 when the server cannot be reached', async () => {
    const r = await cli(['deployments', 'list'], {}, { SIGHTLINE_URL: 'http://127.0.0.1:1', SIGHTLINE_API_KEY: 'sl_x' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: Could not reach http:\/\/127\.0\.0\.1:1/);
  });
});

describe('credentials', () => {
  it('uses the stored login token as a bearer token when no API key is set', async () => {
    const seen: Array<string | null> = [];
    const f: typeof fetch = async (input, init) => {
      seen.push(new Headers(init?.headers).get('authorization'));
      return fetch(input, init);
    };
    // The server takes an API key as a bearer token, which stands in for an OAuth token here.
    const r = await cli(['projects', 'list', '--json'], { fetch: f, loadStoredToken: async () => ({ accessToken: t.keys.admin, baseUrl: t.url }) }, {});
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).data[0].id).toBe(t.projectId);
    expect(seen).toEqual([`Bearer ${t.keys.admin}`]);
  });

  it('never sends a stored token to another server than the one it came from', async () => {
    let requests = 0;
    const f: typeof fetch = async () => {
      requests++;
      return new Response('{}');
    };
    const r = await cli(['projects', 'list'], { fetch: f, loadStoredToken: async () => ({ accessToken: 'tok', baseUrl: 'http://elsewhere.example' }) }, { SIGHTLINE_URL: t.url });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('stored login is for http://elsewhere.example');
    expect(requests).toBe(0);
  });
});

describe('output', () => {
  it('prints a table of the scalar fields of `data`, fitted to the width, and the next page to ask for', async () => {
    for (let i = 0; i < 3; i++) {
      clock += 1000; // newest first: distinct creation times
      await cli(['deployments', 'create', '--deployment-id', `table-${i}`, '--environment', 'table-env', '--version', `3.${i}.0`]);
    }
    const r = await cli(['deployments', 'list', '--environment', 'table-env', '--limit', '2'], { columns: 100 });
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    // The operation's default columns (display hints in its descriptor), not every field.
    expect(lines[0]).toMatch(/^deployment_id +environment +version +status +created_at$/);
    expect(lines.every((l) => l.length <= 100)).toBe(true);
    expect(r.stdout).toContain('table-2');
    expect(r.stdout).toContain('table-1');
    expect(r.stdout).not.toContain('table-0');
    expect(r.stdout).toContain('total: 3  limit: 2  offset: 0');
    expect(r.stdout).toContain('next page: --offset 2');
  });

  it('prints an object as key/value lines, nested keys dotted', async () => {
    const r = await cli(['projects', 'get']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^id +${t.projectId}$`, 'm'));
    expect(r.stdout).toMatch(/^features\.product_analytics +(true|false)$/m);
  });

  it('follows cursor pagination with --all and reports progress on stderr', async () => {
    clock += 24 * 3600_000;
    for (let i = 0; i < 5; i++) {
      clock += 1000;
      const c = await cli(['feedback', 'create', '--message', `all ${i}`, '--environment', 'all-env']);
      expect(c.code).toBe(0);
    }
    const r = await cli(['feedback', 'list', '--environment', 'all-env', '--limit', '2', '--all', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).data.map((f: { message: string }) => f.message)).toEqual(['all 4', 'all 3', 'all 2', 'all 1', 'all 0']);
    expect(r.stderr.trim().split('\n')).toEqual(['fetched 2 rows (1 page)', 'fetched 4 rows (2 pages)', 'fetched 5 rows (3 pages)']);
  });
});

describe('extension hook', () => {
  it('adds CLI-only flags and output to an operation, and ignores entries for operations that do not exist', async () => {
    const extensions: Record<string, CliExtension> = {
      'deployments.list': {
        flags: { minRows: { kind: 'number', description: 'Fail when fewer rows come back.' } },
        render(result, { flags, io }) {
          const rows = (result as { data: unknown[] }).data.length;
          io.stdout.write(`rows=${rows}\n`);
          return rows < Number(flags.minRows ?? 0) ? 1 : 0;
        },
      },
      'agentObservations.quality': { render: () => 99 },
    };
    const help = await cli(['deployments', 'list', '--help'], { extensions });
    expect(help.stdout).toMatch(/--min-rows <number> +Fail when fewer rows come back\. \[CLI only\]/);
    const pass = await cli(['deployments', 'list', '--environment', 'table-env', '--min-rows', '3'], { extensions });
    expect([pass.code, pass.stdout]).toEqual([0, 'rows=3\n']);
    const fail = await cli(['deployments', 'list', '--environment', 'table-env', '--min-rows', '4'], { extensions });
    expect([fail.code, fail.stdout]).toEqual([1, 'rows=3\n']);
  });
});
