/**
 * `sightline releases gate`: the release gate a CI job runs after a deploy. It finds the release
 * (the given `--version`, else the one serving now) of a service and environment, waits until its
 * health comparison leaves `insufficient_data` or `--wait` ends, prints a JSON report and exits
 * non-zero on `regressed` (and, with `--fail-on-insufficient-data`, when the data stayed insufficient).
 */
import { parseArgs } from 'node:util';
import { createClient, SightlineError } from '../client/index.js';
import { credentials, EXIT_API_ERROR, EXIT_OK, EXIT_USAGE, formatApiError, type CliIO, type StoredToken } from './commands.js';

export const EXIT_REGRESSED = 3;
export const EXIT_INSUFFICIENT = 4;

export const GATE_HELP = `sightline releases gate — fail a CI job when a release regressed

Usage
  sightline releases gate --service <name> --environment <name> [--version <v>] [--wait 15m]

Flags
  --service <name>              service.name of the release (required)
  --environment <name>          environment ("" for none) (required)
  --version <v>                 the release to judge (default: the release serving now); waits for it to appear
  --wait <duration>             keep checking until the comparison leaves insufficient_data, at most this long
                                (e.g. 90s, 15m, 1h; default 0: check once)
  --interval <duration>         time between checks while waiting (default 30s)
  --fail-on-insufficient-data   exit 4 when the data is still insufficient (or the release was not found) at the end
  --project-id <id>             project (default: the key's project)

Prints one JSON report on stdout. Exit codes: 0 passed (improved, unchanged, or insufficient_data without
--fail-on-insufficient-data), 1 API error, 2 usage error, 3 regressed, 4 insufficient data or release not
found with --fail-on-insufficient-data.`;

/** "90s", "15m", "1h", "1h30m" or plain seconds → milliseconds. */
export function parseDuration(text: string): number {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Number(t) * 1000;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let ms = 0;
  let m: RegExpExecArray | null;
  let end = 0;
  while ((m = re.exec(t))) {
    ms += Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
    end = re.lastIndex;
  }
  if (!t || end !== t.length) throw new Error(`not a duration: ${JSON.stringify(text)} (use e.g. 90s, 15m, 1h)`);
  return ms;
}

export interface GateOptions {
  io?: CliIO;
  loadStoredToken?: (env: CliIO['env']) => Promise<StoredToken | null>;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  fetch?: typeof fetch;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
export async function releaseGate(argv: string[], opts: GateOptions = {}): Promise<number> {
  const io: CliIO = opts.io ?? { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env };
  const now = opts.now ?? Date.now;
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const complain = (s: string) => io.stderr.write(s.endsWith('\n') ? s : s + '\n');

  let values: Record<string, string | boolean | undefined>;
  let waitMs: number;
  let intervalMs: number;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        service: { type: 'string' },
        environment: { type: 'string' },
        version: { type: 'string' },
        wait: { type: 'string' },
        interval: { type: 'string' },
        'fail-on-insufficient-data': { type: 'boolean' },
        'project-id': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
    if (values.help) {
      io.stdout.write(GATE_HELP + '\n');
      return EXIT_OK;
    }
    if (typeof values.service !== 'string' || typeof values.environment !== 'string') throw new Error('--service and --environment are required');
    waitMs = parseDuration((values.wait as string | undefined) ?? '0');
    intervalMs = Math.max(1, parseDuration((values.interval as string | undefined) ?? '30s'));
  } catch (err) {
    complain(`sightline releases gate: ${(err as Error).message}\nRun \`sightline releases gate --help\` for its flags.`);
    return EXIT_USAGE;
  }

  const failInsufficient = values['fail-on-insufficient-data'] === true;
  const service = values.service as string;
  const environment = values.environment as string;
  const version = values.version as string | undefined;
  const project = values['project-id'] ? { project_id: values['project-id'] as string } : {};
  const started = now();
  const deadline = started + waitMs;
  let checks = 0;

  try {
    const client = createClient({ ...(await credentials(io, opts.loadStoredToken ?? (async () => null))), fetch: opts.fetch });
    let detail: any = null;
    for (;;) {
      checks++;
      const page: any = await client.request('releases.list', { ...project, service_name: service, environment, limit: 100 });
      const rows: any[] = page.data;
      const item = version !== undefined ? rows.find((r) => r.version === version) : (rows.find((r) => r.is_current) ?? rows[0]);
      detail = item ? await client.request('releases.get', { ...project, release_id: item.id }) : null;
      const comparison = detail?.health.comparison;
      const settled = detail && (comparison !== 'insufficient_data' || detail.health.decided_by === 'no_previous_release');
      if (settled || now() + intervalMs > deadline) break;
      await sleep(intervalMs);
    }

    const waited = Math.round((now() - started) / 1000);
    if (!detail) {
      const code = failInsufficient ? EXIT_INSUFFICIENT : EXIT_OK;
      io.stdout.write(
        JSON.stringify({ result: code ? 'fail' : 'pass', exit_code: code, comparison: null, reason: 'release_not_found', service, environment, version: version ?? null, checks, waited_seconds: waited }, null, 2) + '\n',
      );
      return code;
    }
    const h = detail.health;
    const code = h.comparison === 'regressed' ? EXIT_REGRESSED : h.comparison === 'insufficient_data' && failInsufficient ? EXIT_INSUFFICIENT : EXIT_OK;
    const r = detail.release;
    const report = {
      result: code ? 'fail' : 'pass',
      exit_code: code,
      comparison: h.comparison,
      decided_by: h.decided_by,
      release: { id: r.id, service_name: r.service_name, environment: r.environment, version: r.version, confidence: r.confidence, started_at: r.started_at, is_current: r.is_current, commit_sha: r.commit_sha },
      previous_release: detail.previous_release ? { id: detail.previous_release.id, version: detail.previous_release.version } : null,
      window: h.window,
      previous_window: h.previous_window,
      current: h.current,
      previous: h.previous,
      deltas: h.deltas,
      new_issues: h.new_issues,
      checks,
      waited_seconds: waited,
    };
    io.stdout.write(JSON.stringify(report, null, 2) + '\n');
    return code;
  } catch (err) {
    if (err instanceof SightlineError) {
      complain(formatApiError(err));
      return EXIT_API_ERROR;
    }
    if (err instanceof Error && err.constructor.name === 'UsageError') {
      complain(`sightline releases gate: ${err.message}`);
      return EXIT_USAGE;
    }
    throw err;
  }
}
