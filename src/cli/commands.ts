/**
 * `sightline <tag> <verb> --flag value`: one command per catalogue operation, derived from its
 * descriptor (flags from the input schema, help from summary/description/scopes). Every call goes
 * through the TypeScript client (src/client), so the CLI and the client cannot drift apart.
 */
import { readFile } from 'node:fs/promises';
import { fieldLocations, type AnyOperation } from '../../operations/define.js';
import { catalogue } from '../../operations/index.js';
import { toJsonSchema, type JsonSchema } from '../core/json-schema.js';
import { createClient, DEFAULT_BASE_URL, paginationOf, SightlineError, SightlineInputError, type ClientOptions } from '../client/index.js';
import { renderCsv, renderHuman, renderJsonl, rowKeys, answerRows } from './format.js';
import { renderChart } from './chart.js';
import { runTail, TAILS } from './tail.js';
import { UsageError } from './usage-error.js';
import { AI_CLI_EXTENSIONS } from './ai.js';

// ---- io and options ------------------------------------------------------------------------------

export interface CliOutput {
  write(chunk: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface CliIO {
  stdout: CliOutput;
  stderr: CliOutput;
  stdin: AsyncIterable<string | Buffer>;
  env: Record<string, string | undefined>;
}

export interface StoredToken {
  accessToken: string;
  baseUrl: string;
}

/** A command of the CLI itself (server, login), listed in the top-level help. */
export interface LifecycleCommand {
  name: string;
  summary: string;
}

/**
 * Extra CLI behaviour for one operation, keyed by operationId (spec: the agent-observation quality
 * gate, `export --format jsonl`, the revenue events kind filter). An entry whose operation is not in
 * the catalogue is ignored, so entries can be written before their operation exists.
 */
export interface CliExtension {
  /** Flags only the CLI understands; they are not sent to the API. */
  flags?: Record<string, { kind: 'string' | 'number' | 'boolean'; description: string }>;
  /** Turn CLI-only flags into API input before the call. */
  input?(input: Record<string, unknown>, flags: Record<string, unknown>): Record<string, unknown>;
  /**
   * Print the result and return the exit code; return undefined to fall back to the default
   * output. Called once with the whole result (with `--all`: `{ data: every row }`).
   */
  render?(result: unknown, ctx: { flags: Record<string, unknown>; json: boolean; io: CliIO }): number | undefined | Promise<number | undefined>;
}

/** Wired behaviours, keyed by operationId. */
export const CLI_EXTENSIONS: Record<string, CliExtension> = { ...AI_CLI_EXTENSIONS };

export interface CliOptions {
  operations?: readonly AnyOperation[];
  io?: CliIO;
  lifecycle?: readonly LifecycleCommand[];
  extensions?: Record<string, CliExtension>;
  /** Where a stored `sightline login` token comes from (default: src/cli/login.ts when present). */
  loadStoredToken?: (env: CliIO['env']) => Promise<StoredToken | null>;
  /** Passed to the client (tests). */
  fetch?: ClientOptions['fetch'];
  sleep?: ClientOptions['sleep'];
  /** The clock relative times are shown against (tests). */
  now?: () => number;
  /** Ends long-running commands (`logs tail`); the binary wires it to Ctrl-C. */
  signal?: AbortSignal;
}

export const EXIT_OK = 0;
export const EXIT_API_ERROR = 1;
export const EXIT_USAGE = 2;


function processIO(): CliIO {
  return { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env };
}

// ---- names ------------------------------------------------------------------------------------

/** camelCase / snake_case → kebab-case: project_id → project-id, listRelatedTraces → list-related-traces. */
export const kebab = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, '$1-$2').replace(/_/g, '-').toLowerCase();
const norm = (s: string) => s.toLowerCase().replace(/[-_]/g, '');

export interface CommandIndex {
  /** tag → verb → operation, in catalogue order. */
  tags: Map<string, Map<string, AnyOperation>>;
}

export function indexCommands(operations: readonly AnyOperation[]): CommandIndex {
  const tags = new Map<string, Map<string, AnyOperation>>();
  for (const op of operations) {
    const [tag, ...rest] = op.operationId.split('.');
    const verbs = tags.get(tag!) ?? new Map<string, AnyOperation>();
    verbs.set(rest.join('.'), op);
    tags.set(tag!, verbs);
  }
  return { tags };
}

/** Accepts the operationId word (`apiKeys`, `listRelatedTraces`) or its kebab form (`api-keys`). */
function lookup<T>(map: Map<string, T>, word: string): [string, T] | undefined {
  const exact = map.get(word);
  if (exact !== undefined) return [word, exact];
  for (const [k, v] of map) if (norm(k) === norm(word)) return [k, v];
  return undefined;
}

// ---- flags derived from the input schema -------------------------------------------------------------

type Kind = 'string' | 'integer' | 'number' | 'boolean' | 'array' | 'json' | 'any';

export interface FlagSpec {
  field: string;
  flag: string;
  kind: Kind;
  item?: Kind;
  enum?: string[];
  nullable: boolean;
  required: boolean;
  description?: string;
  default?: unknown;
  location: 'path' | 'query' | 'body' | 'header';
  header?: string;
}

function typeOf(js: JsonSchema): { kind: Kind; nullable: boolean; enum?: string[]; item?: Kind } {
  const variants = (js.anyOf ?? js.oneOf) as JsonSchema[] | undefined;
  if (Array.isArray(variants)) {
    const nonNull = variants.filter((v) => v.type !== 'null');
    const nullable = nonNull.length < variants.length;
    if (nonNull.length === 1) return { ...typeOf(nonNull[0]!), nullable: nullable || typeOf(nonNull[0]!).nullable };
    const enums = nonNull.every((v) => Array.isArray(v.enum) || v.const !== undefined)
      ? nonNull.flatMap((v) => (Array.isArray(v.enum) ? (v.enum as unknown[]) : [v.const])).map(String)
      : undefined;
    return enums ? { kind: 'string', nullable, enum: enums } : { kind: 'any', nullable };
  }
  let type = js.type as string | string[] | undefined;
  let nullable = false;
  if (Array.isArray(type)) {
    nullable = type.includes('null');
    const rest = type.filter((t) => t !== 'null');
    type = rest.length === 1 ? rest[0] : undefined;
  }
  const enumValues = Array.isArray(js.enum) ? (js.enum as unknown[]).map(String) : js.const !== undefined ? [String(js.const)] : undefined;
  switch (type) {
    case 'integer':
    case 'number':
    case 'boolean':
      return { kind: type, nullable };
    case 'string':
      return { kind: 'string', nullable, enum: enumValues };
    case 'array': {
      const items = (js.items ?? {}) as JsonSchema;
      const it = typeOf(items);
      return { kind: 'array', nullable, item: it.kind === 'array' ? 'json' : it.kind, enum: it.enum };
    }
    case 'object':
      return { kind: 'json', nullable };
    default:
      return enumValues ? { kind: 'string', nullable, enum: enumValues } : { kind: 'any', nullable };
  }
}

const RESERVED = new Set(['help', 'json', 'all', 'body', 'output', 'columns', 'debug']);

export const OUTPUTS = ['table', 'json', 'jsonl', 'csv'] as const;
export type OutputMode = (typeof OUTPUTS)[number];

/** The flags of an operation: one per input field, in schema order. */
export function flagsOf(op: AnyOperation): FlagSpec[] {
  const schema = toJsonSchema(op.input, 'input');
  const props = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  const where = fieldLocations(op);
  const headerOf = Object.fromEntries(Object.entries(op.headerInputs ?? {}).map(([h, f]) => [f, h]));
  return Object.entries(props).map(([field, js]) => {
    const t = typeOf(js);
    const location = where.path.includes(field) ? 'path' : headerOf[field] ? 'header' : where.body.includes(field) ? 'body' : 'query';
    return {
      field,
      flag: kebab(field),
      kind: t.kind,
      item: t.item,
      enum: t.enum,
      nullable: t.nullable,
      // project_id: the client uses the credential's project when it is left out.
      required: required.has(field) && field !== 'project_id',
      description: typeof js.description === 'string' ? js.description : undefined,
      default: js.default,
      location,
      header: headerOf[field],
    };
  });
}

function typeLabel(f: Pick<FlagSpec, 'kind' | 'item' | 'enum' | 'nullable'>): string {
  const base =
    f.kind === 'array'
      ? `${f.enum ? f.enum.join('|') : f.item ?? 'string'}[,…]`
      : f.enum
        ? f.enum.join('|')
        : f.kind === 'json'
          ? 'json'
          : f.kind === 'any'
            ? 'value'
            : f.kind;
  return f.nullable ? `${base}|null` : base;
}

function coerce(flag: string, kind: Kind, raw: string, nullable: boolean): unknown {
  if (nullable && raw === 'null' && kind !== 'string') return null;
  switch (kind) {
    case 'string':
      return raw;
    case 'integer':
      if (!/^-?\d+$/.test(raw.trim())) throw new UsageError(`--${flag} expects an integer, got ${JSON.stringify(raw)}.`);
      return Number(raw);
    case 'number': {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n)) throw new UsageError(`--${flag} expects a number, got ${JSON.stringify(raw)}.`);
      return n;
    }
    case 'boolean':
      if (/^(true|1|yes)$/i.test(raw)) return true;
      if (/^(false|0|no)$/i.test(raw)) return false;
      throw new UsageError(`--${flag} expects true or false, got ${JSON.stringify(raw)}.`);
    case 'json':
      try {
        return JSON.parse(raw);
      } catch {
        throw new UsageError(`--${flag} expects JSON, e.g. --${flag} '{"key":"value"}'.`);
      }
    default:
      try {
        return JSON.parse(raw);
      } catch {
        return raw;
      }
  }
}

interface ParsedArgs {
  input: Record<string, unknown>;
  /** Values of extension flags. */
  extra: Record<string, unknown>;
  output: OutputMode;
  columns?: string[];
  debug: boolean;
  all: boolean;
  help: boolean;
  body?: string;
}

function parseFlags(argv: string[], flags: FlagSpec[], ext: CliExtension | undefined): ParsedArgs {
  const byFlag = new Map<string, FlagSpec>();
  for (const f of flags) byFlag.set(f.flag, f);
  const extFlags = new Map(Object.entries(ext?.flags ?? {}).map(([name, spec]) => [kebab(name), { name, ...spec }]));
  const out: ParsedArgs = { input: {}, extra: {}, output: 'table', debug: false, all: false, help: false };
  const isFlagToken = (t: string | undefined) => t !== undefined && t.startsWith('--') && t.length > 2;

  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === '-h' || token === '--help') {
      out.help = true;
      continue;
    }
    if (!token.startsWith('--') || token === '--') {
      throw new UsageError(`Unexpected argument ${JSON.stringify(token)}: every input is a --flag.`);
    }
    const eq = token.indexOf('=');
    const rawName = token.slice(2, eq === -1 ? undefined : eq);
    const name = kebab(rawName);
    const inline = eq === -1 ? undefined : token.slice(eq + 1);
    const takeValue = (): string => {
      if (inline !== undefined) return inline;
      const next = argv[i + 1];
      if (next === undefined || (isFlagToken(next) && next !== '-')) throw new UsageError(`--${name} needs a value.`);
      i++;
      return next;
    };
    const takeBoolean = (): boolean => {
      if (inline !== undefined) return coerce(name, 'boolean', inline, false) as boolean;
      const next = argv[i + 1];
      if (next !== undefined && /^(true|false)$/i.test(next)) {
        i++;
        return /^true$/i.test(next);
      }
      return true;
    };

    const ef = extFlags.get(name);
    if (ef) {
      out.extra[ef.name] = ef.kind === 'boolean' ? takeBoolean() : coerce(name, ef.kind === 'number' ? 'number' : 'string', takeValue(), false);
      continue;
    }
    const spec = byFlag.get(name);
    if (spec && !RESERVED.has(name)) {
      if (spec.kind === 'boolean') {
        out.input[spec.field] = takeBoolean();
      } else if (spec.kind === 'array') {
        const raw = takeValue();
        const items = spec.item === 'json' ? [coerce(name, 'json', raw, false)] : raw.split(',').map((s) => s.trim()).filter(Boolean);
        const coerced = spec.item === 'json' ? items : items.map((s) => coerce(name, spec.item ?? 'string', s as string, false));
        const prior = out.input[spec.field];
        out.input[spec.field] = [...(Array.isArray(prior) ? prior : []), ...coerced];
      } else {
        out.input[spec.field] = coerce(name, spec.kind, takeValue(), spec.nullable);
      }
      continue;
    }
    if (name.startsWith('no-')) {
      const negated = byFlag.get(name.slice(3));
      if (negated?.kind === 'boolean' && inline === undefined) {
        out.input[negated.field] = false;
        continue;
      }
    }
    switch (name) {
      case 'json':
        if (inline === undefined || coerce(name, 'boolean', inline, false)) out.output = 'json';
        continue;
      case 'output': {
        const mode = takeValue();
        if (!(OUTPUTS as readonly string[]).includes(mode)) throw new UsageError(`--output expects one of ${OUTPUTS.join(', ')}, got ${JSON.stringify(mode)}.`);
        out.output = mode as OutputMode;
        continue;
      }
      case 'columns':
        out.columns = takeValue()
          .split(',')
          .map((c) => c.trim())
          .filter(Boolean);
        continue;
      case 'debug':
        out.debug = inline === undefined ? true : (coerce(name, 'boolean', inline, false) as boolean);
        continue;
      case 'all':
        out.all = inline === undefined ? true : (coerce(name, 'boolean', inline, false) as boolean);
        continue;
      case 'body':
        out.body = takeValue();
        continue;
    }
    const close = [...byFlag.keys(), ...extFlags.keys()].filter((k) => k.includes(name) || name.includes(k));
    throw new UsageError(`Unknown flag --${rawName}.${close.length ? ` Did you mean ${close.map((c) => `--${c}`).join(' or ')}?` : ''}`);
  }
  return out;
}

async function readBody(src: string, io: CliIO): Promise<Record<string, unknown>> {
  let text: string;
  if (src === '-') {
    const chunks: string[] = [];
    for await (const c of io.stdin) chunks.push(typeof c === 'string' ? c : c.toString('utf8'));
    text = chunks.join('');
  } else if (src.startsWith('@')) {
    try {
      text = await readFile(src.slice(1), 'utf8');
    } catch (err) {
      throw new UsageError(`--body ${src}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}).`);
    }
  } else {
    text = src;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError(`--body ${src === '-' ? '- (stdin)' : src.startsWith('@') ? src : '<inline>'} is not valid JSON.`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new UsageError('--body must hold a JSON object of input fields.');
  return value as Record<string, unknown>;
}

// ---- help --------------------------------------------------------------------------------------

const COMMON_FLAGS: Array<[string, string]> = [
  ['--output <mode>', 'table (default; charts for series), json, jsonl (one row a line) or csv'],
  ['--json', 'same as --output json'],
  ['--columns <a,b,c>', 'the table or CSV columns to show, in order (default: the operation\'s own choice)'],
  ['--debug', 'on an error, also print the request id and how long the call took'],
  ['--all', 'follow pagination (offset or cursor) and print every row; paginated lists only'],
  ['--body <src>', 'input fields as one JSON object: @file.json, - (stdin) or inline JSON; flags override it'],
  ['-h, --help', 'this help'],
];

function columns(rows: Array<[string, string]>, indent = '  '): string {
  const w = Math.min(34, Math.max(0, ...rows.map(([a]) => a.length)));
  return rows.map(([a, b]) => (b ? `${indent}${a.padEnd(w)}  ${b}` : `${indent}${a}`)).join('\n');
}

export function topHelp(index: CommandIndex, lifecycle: readonly LifecycleCommand[]): string {
  const tags = [...index.tags.entries()].sort(([a], [b]) => a.localeCompare(b));
  return [
    'sightline: every Sightline API operation as a command, plus the server itself.',
    '',
    'Usage',
    '  sightline <tag> <verb> [--flag value ...] [--output table|json|jsonl|csv] [--all] [--body @file.json|-]',
    '  sightline <tag> --help          the verbs of a tag',
    '  sightline <tag> <verb> --help   the flags of an operation',
    ...(lifecycle.length ? ['', 'Commands', columns(lifecycle.map((c) => [c.name, c.summary]))] : []),
    '',
    'Operations (tag: verbs)',
    columns(tags.map(([tag, verbs]) => [kebab(tag), [...[...verbs.keys()].map(kebab), ...(TAILS[tag] ? ['tail'] : [])].join(', ')])),
    '',
    'Follow new records as they arrive: `sightline logs tail`, `sightline errors tail` (Ctrl-C to stop).',
    'Shell completions: `sightline completion bash|zsh|fish`.',
    'camelCase forms (`apiKeys list`) are accepted too.',
    '',
    'Credentials',
    columns([
      ['SIGHTLINE_API_KEY', 'a project API key (sent as x-service-key)'],
      ['SIGHTLINE_URL', `the server (default ${DEFAULT_BASE_URL})`],
      ['', 'without an API key, the token stored by `sightline login` is used'],
    ]),
    '',
    'Exit codes: 0 ok, 1 API error, 2 usage error.',
    '',
  ].join('\n');
}

export function tagHelp(tag: string, verbs: Map<string, AnyOperation>): string {
  const tail = TAILS[tag];
  return [
    `sightline ${kebab(tag)} <verb> [flags]`,
    '',
    columns([
      ...[...verbs.entries()].map(([verb, op]): [string, string] => [
        kebab(verb),
        `${op.summary}  [${op.scopes.length ? op.scopes.join(' + ') : 'any credential'}${op.sensitive ? '; hidden from MCP' : ''}]`,
      ]),
      ...(tail ? [['tail', `${tail.summary}  [CLI; follows ${tail.operationId}]`] as [string, string]] : []),
    ]),
    '',
    `Run \`sightline ${kebab(tag)} <verb> --help\` for the flags of one operation.`,
    '',
  ].join('\n');
}

function exampleLine(tag: string, verb: string, op: AnyOperation, flags: FlagSpec[]): string | undefined {
  if (!op.example) return undefined;
  const quote = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
  const parts = [`sightline ${kebab(tag)} ${kebab(verb)}`];
  for (const [field, value] of Object.entries(op.example)) {
    const f = flags.find((x) => x.field === field);
    if (!f) continue;
    if (f.kind === 'boolean') parts.push(value ? `--${f.flag}` : `--no-${f.flag}`);
    else if (Array.isArray(value) && f.kind === 'array' && f.item !== 'json') parts.push(`--${f.flag} ${quote(value.join(','))}`);
    else parts.push(`--${f.flag} ${quote(typeof value === 'object' ? JSON.stringify(value) : String(value))}`);
  }
  return parts.join(' ');
}

export function operationHelp(tag: string, verb: string, op: AnyOperation, ext?: CliExtension): string {
  const flags = flagsOf(op);
  const paged = paginationOf(op);
  const rows: Array<[string, string]> = flags.map((f) => {
    const notes: string[] = [];
    if (f.required) notes.push('(required)');
    if (f.description) notes.push(f.description);
    if (f.default !== undefined && !(f.description ?? '').includes('default')) notes.push(`(default ${JSON.stringify(f.default)})`);
    if (f.field === 'project_id' && !f.description) notes.push('default: the credential\'s project');
    if (f.location === 'header') notes.push(`[sent as the ${f.header} header]`);
    if (f.kind === 'array') notes.push('[repeat the flag or separate with commas]');
    const name = f.kind === 'boolean' ? `--${f.flag}, --no-${f.flag}` : `--${f.flag} <${typeLabel(f)}>`;
    return [name, notes.join(' ')];
  });
  for (const [name, spec] of Object.entries(ext?.flags ?? {})) {
    rows.push([spec.kind === 'boolean' ? `--${kebab(name)}` : `--${kebab(name)} <${spec.kind}>`, `${spec.description} [CLI only]`]);
  }
  const example = exampleLine(tag, verb, op, flags);
  return [
    `sightline ${kebab(tag)} ${kebab(verb)}: ${op.summary}`,
    '',
    op.description,
    '',
    `  ${op.method} ${op.path}   (operationId ${op.operationId})`,
    `  Scopes: ${op.scopes.length ? op.scopes.join(' and ') + (op.scopes.length > 1 ? ' (all required)' : '') : 'any valid credential'}`,
    `  Risk: ${op.risk}${op.sensitive ? '; sensitive: hidden from the MCP tool server' : ''}${paged ? `; ${paged} pagination (--all follows it)` : ''}`,
    '',
    'Flags',
    rows.length ? columns(rows) : '  (none)',
    '',
    'Common flags',
    columns(paged ? COMMON_FLAGS : COMMON_FLAGS.filter(([f]) => f !== '--all')),
    ...(example ? ['', 'Example', `  ${example}`] : []),
    '',
  ].join('\n');
}

// ---- credentials ---------------------------------------------------------------------------------

async function defaultLoadStoredToken(env: CliIO['env']): Promise<StoredToken | null> {
  // `sightline login` (src/cli/login.ts) may not be part of this build: tolerate its absence.
  const specifier = './login.js';
  let mod: { loadStoredToken?: (env: CliIO['env']) => Promise<StoredToken | null> };
  try {
    mod = await import(specifier);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || /Cannot find module|Failed to load url/i.test(String(err))) return null;
    throw err;
  }
  return typeof mod.loadStoredToken === 'function' ? mod.loadStoredToken(env) : null;
}

const sameOrigin = (a: string, b: string) => {
  try {
    const x = new URL(a);
    const y = new URL(b);
    return x.origin === y.origin && x.pathname.replace(/\/+$/, '') === y.pathname.replace(/\/+$/, '');
  } catch {
    return false;
  }
};

export async function credentials(io: CliIO, load: (env: CliIO['env']) => Promise<StoredToken | null>): Promise<Pick<ClientOptions, 'baseUrl' | 'apiKey' | 'accessToken'>> {
  const url = io.env.SIGHTLINE_URL?.trim() || undefined;
  const apiKey = io.env.SIGHTLINE_API_KEY?.trim();
  if (apiKey) return { baseUrl: url ?? DEFAULT_BASE_URL, apiKey };
  const token = await load(io.env);
  // A token goes only to the server it was issued by.
  if (token && (!url || sameOrigin(url, token.baseUrl))) return { baseUrl: token.baseUrl, accessToken: token.accessToken };
  throw new UsageError(
    token
      ? `The stored login is for ${token.baseUrl}, not SIGHTLINE_URL=${url}: run \`sightline login\` for it or set SIGHTLINE_API_KEY.`
      : 'No credential: set SIGHTLINE_API_KEY (and SIGHTLINE_URL), or run `sightline login`.',
    'Run `sightline --help` for the credential settings.',
  );
}

// ---- running -------------------------------------------------------------------------------------

/** Colour only on a terminal, and never with NO_COLOR set (no-color.org). */
export function useColour(io: CliIO): boolean {
  return !!io.stdout.isTTY && !('NO_COLOR' in io.env && io.env.NO_COLOR !== undefined && io.env.NO_COLOR !== '');
}

export function outWidth(io: CliIO): number {
  const fromEnv = Number(io.env.COLUMNS);
  return io.stdout.columns || (Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : 120);
}

/**
 * An API error for a person, on one screen: what went wrong, the flag at fault, what to do, and
 * where it is documented; `debug` adds the request id and how long the call took.
 */
export function formatApiError(err: SightlineError, debug?: { elapsedMs: number }): string {
  const head = err.status ? `error ${err.status} ${err.code}: ${err.message}` : `error: ${err.message}`;
  const details: string[] = [];
  if (err.param) details.push(`flag:    --${kebab(err.param)}${err.param.includes('_') || /[A-Z]/.test(err.param) ? ` (field ${err.param})` : ''}`);
  if (err.hint) details.push(`hint:    ${err.hint}`);
  if (err.retryAfter !== undefined && err.status === 429) details.push(`retry:   after ${err.retryAfter} s`);
  if (err.status === 401) details.push('fix:     check SIGHTLINE_API_KEY, or run `sightline login` again');
  if (err.docUrl) details.push(`docs:    ${err.docUrl}`);
  if (debug) {
    details.push(`request: ${err.requestId ?? '(no request id: the server was not reached)'}`);
    details.push(`took:    ${Math.round(debug.elapsedMs)} ms`);
  } else if (err.requestId) details.push(`request: ${err.requestId}  (--debug for timing)`);
  return details.length ? `${head}\n  ${details.join('\n  ')}` : head;
}

function nextPageHint(kind: 'offset' | 'cursor', page: Record<string, unknown>, sent: Record<string, unknown>): string | undefined {
  if (kind === 'cursor') return typeof page.next_cursor === 'string' ? `more rows: --cursor ${page.next_cursor}  (or --all)` : undefined;
  const data = Array.isArray(page.data) ? page.data : [];
  const offset = Number(page.offset ?? sent.offset ?? 0);
  const limit = Number(page.limit ?? sent.limit ?? data.length);
  const total = typeof page.total === 'number' ? page.total : undefined;
  const more = typeof page.has_more === 'boolean' ? page.has_more : total !== undefined ? offset + limit < total : false;
  if (!more || !data.length) return undefined;
  return `rows ${offset + 1}–${offset + data.length}${total !== undefined ? ` of ${total}` : ''}; next page: --offset ${offset + limit}  (or --all)`;
}

/**
 * Runs `<tag> <verb> [flags]` (argv without the program name). Returns the exit code:
 * 0 ok, 1 API error, 2 usage error.
 */
export async function runCommands(argv: string[], opts: CliOptions = {}): Promise<number> {
  const io = opts.io ?? processIO();
  const operations = opts.operations ?? catalogue;
  const extensions = opts.extensions ?? CLI_EXTENSIONS;
  const index = indexCommands(operations);
  const lifecycle = opts.lifecycle ?? [];
  const say = (s: string) => io.stdout.write(s.endsWith('\n') ? s : s + '\n');
  const complain = (s: string) => io.stderr.write(s.endsWith('\n') ? s : s + '\n');

  const [tagWord, verbWord, ...rest] = argv;
  if (tagWord === undefined) {
    complain(topHelp(index, lifecycle));
    return EXIT_USAGE;
  }
  if (tagWord === '--help' || tagWord === '-h' || tagWord === 'help') {
    say(topHelp(index, lifecycle));
    return EXIT_OK;
  }
  const tag = lookup(index.tags, tagWord);
  if (!tag) {
    complain(`sightline: unknown command ${JSON.stringify(tagWord)}.\nRun \`sightline --help\` for the commands and tags.`);
    return EXIT_USAGE;
  }
  const [tagName, verbs] = tag;
  if (verbWord === undefined || verbWord === '--help' || verbWord === '-h') {
    if (verbWord === undefined) {
      complain(tagHelp(tagName, verbs));
      return EXIT_USAGE;
    }
    say(tagHelp(tagName, verbs));
    return EXIT_OK;
  }
  if (verbWord === 'tail' && TAILS[tagName] && !verbs.has('tail')) {
    try {
      return await runTail(tagName, rest, { io, operations, fetch: opts.fetch, sleep: opts.sleep, signal: opts.signal, credentials: () => credentials(io, opts.loadStoredToken ?? defaultLoadStoredToken) });
    } catch (err) {
      if (err instanceof UsageError) {
        complain(`sightline: ${err.message}\n${err.hint ?? `Run \`sightline ${kebab(tagName)} tail --help\` for its flags.`}`);
        return EXIT_USAGE;
      }
      if (err instanceof SightlineError) {
        complain(formatApiError(err));
        return EXIT_API_ERROR;
      }
      throw err;
    }
  }
  const found = lookup(verbs, verbWord);
  if (!found) {
    complain(`sightline: ${tagName} has no verb ${JSON.stringify(verbWord)} (verbs: ${[...verbs.keys()].join(', ')}).`);
    return EXIT_USAGE;
  }
  const [verb, op] = found;
  const ext = extensions[op.operationId];
  const usageHint = `Run \`sightline ${kebab(tagName)} ${kebab(verb)} --help\` for its flags.`;
  let startedAt = 0;
  let debug = false;

  let client: ReturnType<typeof createClient> | undefined;
  try {
    const flags = flagsOf(op);
    const args = parseFlags(rest, flags, ext);
    debug = args.debug;
    if (args.help) {
      say(operationHelp(tagName, verb, op, ext));
      return EXIT_OK;
    }
    let input: Record<string, unknown> = { ...(args.body !== undefined ? await readBody(args.body, io) : {}), ...args.input };
    const missing = flags.filter((f) => f.required && input[f.field] === undefined);
    if (missing.length) {
      throw new UsageError(`Missing required flag${missing.length > 1 ? 's' : ''}: ${missing.map((f) => `--${f.flag} <${typeLabel(f)}>`).join(', ')}.`);
    }
    const paged = paginationOf(op);
    if (args.all && !paged) throw new UsageError(`--all: ${op.operationId} is not a paginated list.`);
    if (ext?.input) input = ext.input(input, args.extra);

    client = createClient({ ...(await credentials(io, opts.loadStoredToken ?? defaultLoadStoredToken)), operations, fetch: opts.fetch, sleep: opts.sleep });

    let result: unknown;
    let hint: string | undefined;
    startedAt = performance.now();
    if (args.all && paged) {
      const rows: unknown[] = [];
      let pages = 0;
      let total: number | undefined;
      const progress = (final: boolean) => {
        const text = `fetched ${rows.length}${total !== undefined ? ` of ${total}` : ''} rows (${pages} page${pages === 1 ? '' : 's'})`;
        if (io.stderr.isTTY) io.stderr.write(`\r${text}${final ? '\n' : ''}`);
        else io.stderr.write(`${text}\n`);
      };
      let more = false;
      for await (const page of client.pages(op.operationId, input)) {
        const p = (page ?? {}) as Record<string, unknown>;
        if (Array.isArray(p.data)) rows.push(...p.data);
        if (typeof p.total === 'number') total = p.total;
        pages++;
        // A progress line only for reads longer than one page, on stderr so stdout stays clean.
        more = pages > 1 || (total !== undefined ? rows.length < total : p.next_cursor != null || p.has_more === true);
        if (more) progress(false);
      }
      if (more && io.stderr.isTTY) io.stderr.write('\n');
      result = { data: rows };
    } else {
      result = await client.request(op.operationId, input);
      if (paged && result && typeof result === 'object') hint = nextPageHint(paged, result as Record<string, unknown>, input);
    }

    if (ext?.render) {
      const code = await ext.render(result, { flags: args.extra, json: args.output === 'json', io });
      if (code !== undefined) return code;
    }
    if (args.columns?.length && args.output !== 'json' && args.output !== 'jsonl') {
      const known = rowKeys(answerRows(result));
      const unknown = args.columns.filter((c) => !known.includes(c));
      if (known.length && unknown.length) throw new UsageError(`--columns: no field ${unknown.map((c) => JSON.stringify(c)).join(', ')} in the answer (fields: ${known.join(', ')}).`);
    }
    switch (args.output) {
      case 'json':
        say(JSON.stringify(result, null, 2));
        break;
      case 'jsonl':
        say(renderJsonl(result));
        break;
      case 'csv':
        say(renderCsv(result, args.columns));
        break;
      default: {
        const width = outWidth(io);
        const color = useColour(io);
        const chart = op.display?.chart && !args.columns ? renderChart(result, op.display.chart, { width, color }) : null;
        // A line chart stands for the whole series; bars go under the table of the same rows.
        if (!chart || op.display?.chart?.kind === 'bar') {
          say(renderHuman(result, { width, color, now: (opts.now ?? Date.now)(), columns: args.columns, preferred: op.display?.columns }));
        }
        if (chart) say(chart);
        if (hint) say(hint);
      }
    }
    return EXIT_OK;
  } catch (err) {
    if (err instanceof UsageError) {
      complain(`sightline: ${err.message}\n${err.hint ?? usageHint}`);
      return EXIT_USAGE;
    }
    if (err instanceof SightlineInputError) {
      const flag = err.param ? ` (--${kebab(err.param)})` : '';
      complain(`sightline: ${err.message}${flag}\n${usageHint}`);
      return EXIT_USAGE;
    }
    if (err instanceof SightlineError) {
      complain(formatApiError(err, debug ? { elapsedMs: startedAt ? performance.now() - startedAt : 0 } : undefined));
      return EXIT_API_ERROR;
    }
    throw err;
  }
}
