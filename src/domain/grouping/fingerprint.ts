/**
 * Error grouping: ErrorEventRecord → GroupKey. Pure; no I/O.
 *
 * Rules, first match wins:
 *  1. `sdk_fingerprint`  — the SDK sent `fingerprint`; entries are used verbatim except variables:
 *     `{{ default }}` expands to the default components (rules 2–4), plus `{{ transaction }}`,
 *     `{{ type }}` / `{{ error.type }}`, `{{ error.value }}`, `{{ message }}`, `{{ level }}`,
 *     `{{ function }}`, `{{ module }}`. `['{{ default }}']` alone therefore equals default grouping.
 *  2. `exception_frames` — the innermost exception (the LAST of `exceptions`): its type plus its in-app
 *     frames (in_app === true; when no frame is marked in_app, every frame that is not obviously
 *     node_modules / node: internals / native / browser extensions), each as `function (module-or-file)`,
 *     without line or column numbers, consecutive duplicates (recursion) collapsed.
 *  3. `exception_type`   — an exception without usable frames: type + normalizeMessage(value).
 *  4. `message`          — normalizeMessage(message). An exception with no type whose value equals the
 *     message is the synthetic stack the JS SDKs attach to captureMessage (attachStacktrace); such events
 *     are message events.
 *
 * The fingerprint is the sha256 (hex) of JSON.stringify(components).
 */
import { createHash } from 'node:crypto';
import type { ErrorEventRecord, ExceptionValue, StackFrame } from '../telemetry-types.js';

export interface GroupKey {
  /** sha256 hex of the components */
  fingerprint: string;
  /** human-readable parts */
  components: string[];
  method: 'sdk_fingerprint' | 'exception_frames' | 'exception_type' | 'message';
  /** exception type; 'message' for message events; 'Error' for an exception without a type */
  type: string;
  title: string;
  culprit: string;
}

const TITLE_MAX = 200;

// ---------------------------------------------------------------------------------------------------------
// message normalization

const RE_STR = /(?<![\w'"`])(?:'[^'\n]*'|"[^"\n]*"|`[^`\n]*`)(?![\w])/g;
const RE_EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;
const RE_UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
const RE_IPV4 = /(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?::\d{1,5})?(?![\w.])/g;
const RE_IPV6 = /(?<![\w:])[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}(?![\w:])/gi;
const RE_HEX0X = /\b0x[0-9a-f]+\b/gi;
const RE_HEXRUN = /(?<![A-Za-z0-9_])[0-9a-f]{8,}(?![A-Za-z0-9_])/gi;
const RE_NUM = /\d+(?:[.,]\d+)*/g;

/**
 * Masks the variable parts of a message so that occurrences differing only in data group together:
 * quoted values → <str>, emails → <email>, UUIDs → <uuid>, IPv4/IPv6 (with port) → <ip>,
 * 0x… and hex runs of ≥ 8 chars containing a digit (or ≥ 16 chars) → <hex>, other numbers → <num>.
 * Whitespace is collapsed.
 */
export function normalizeMessage(message: string): string {
  let s = String(message ?? '');
  s = s.replace(RE_STR, '<str>');
  s = s.replace(RE_EMAIL, '<email>');
  s = s.replace(RE_UUID, '<uuid>');
  s = s.replace(RE_IPV4, '<ip>');
  // IPv6 needs `::` or all 8 groups (so times like 12:30:45 stay numbers) and at least one digit.
  s = s.replace(RE_IPV6, (m) => (/\d/.test(m) && (m.includes('::') || (m.match(/:/g)?.length ?? 0) === 7) ? '<ip>' : m));
  s = s.replace(RE_HEX0X, '<hex>');
  s = s.replace(RE_HEXRUN, (m) => {
    if (/^\d+$/.test(m)) return m; // all digits: a number, masked below
    return /\d/.test(m) || m.length >= 16 ? '<hex>' : m;
  });
  s = s.replace(RE_NUM, '<num>');
  return s.replace(/\s+/g, ' ').trim();
}

// ---------------------------------------------------------------------------------------------------------
// frame normalization

const ANONYMOUS = new Set(['', '?', '<anonymous>', 'anonymous', '<unknown>', 'anonymous function', '<anonymous function>']);

/** Function names without call-site noise: `Object.`/`Module.` receivers, `async `, Firefox `/<`, `(index N)`. */
export function normalizeFunctionName(fn: string | undefined): string {
  let f = (fn ?? '').trim();
  f = f.replace(/\s*\(index \d+\)$/, '');
  f = f.replace(/^async\s+/, '');
  f = f.replace(/(?:\/<)+$/, '').replace(/\/<\//g, '/');
  f = f.replace(/^(?:Object|Module)\./, '');
  f = f.replace(/\$\$Lambda\$\d+\/(?:0x)?[0-9a-f]+/gi, '$$$$Lambda');
  if (ANONYMOUS.has(f.toLowerCase())) return '<anonymous>';
  return f;
}

function isHashPiece(s: string, allowMixedCase: boolean): boolean {
  if (s.length < 8 || !/^[A-Za-z0-9_]+$/.test(s)) return false;
  if (/^[0-9a-f]+$/i.test(s) && !/^\d+$/.test(s)) return true;
  if (/\d/.test(s) && /[A-Za-z]/.test(s)) return true;
  // vite/rollup base64-ish hashes such as `index-DiwrgTda.js`
  return allowMixedCase && s.length <= 12 && /[a-z]/.test(s) && /[A-Z]/.test(s.slice(1));
}

function normalizeBasename(base: string): string {
  const parts = base.split('.');
  const ext = parts.length > 1 ? parts.pop()! : undefined;
  const kept: string[] = [];
  parts.forEach((p, i) => {
    if (i === 0) {
      const sub = p.split('-');
      const head = isHashPiece(sub[0], false) ? '<hash>' : /^\d+$/.test(sub[0]) ? '<num>' : sub[0];
      const rest = sub.slice(1).filter((x) => !isHashPiece(x, true));
      kept.push([head, ...rest].join('-'));
    } else if (!isHashPiece(p, true)) {
      kept.push(p);
    }
  });
  return ext === undefined ? kept.join('.') : [...kept, ext].join('.');
}

/**
 * A filename stable across builds and machines: no scheme/host/query, no webpack prefixes, no content
 * hashes (`main.4f3a2b1c.js` → `main.js`, `index-DiwrgTda.js` → `index.js`, hash directories → `<hash>`),
 * path after the last `node_modules/`, and for absolute file-system paths only the last two segments.
 */
export function normalizeFilename(filename: string | undefined): string {
  let f = (filename ?? '').trim().replace(/\\/g, '/');
  if (!f) return '';
  f = f.replace(/[?#].*$/, '');
  const isUrl = /^[a-z][a-z0-9+.-]+:\/\//i.test(f) && !/^file:\/\//i.test(f);
  f = f.replace(/^file:\/\//i, '');
  f = f.replace(/^[a-z][a-z0-9+.-]+:\/\/[^/]*/i, ''); // http(s)://host, app://, webpack://name, webpack-internal://
  f = f.replace(/\/\([^)]*\)(?=\/)/g, ''); // next.js `(app-pages-browser)` layers
  f = f.replace(/(^|\/)\.\//g, '$1');
  const nm = f.lastIndexOf('node_modules/');
  if (nm >= 0) f = f.slice(nm + 'node_modules/'.length);
  const absoluteFs = !isUrl && (/^\//.test(f) || /^[A-Za-z]:\//.test(f)) && nm < 0;
  let segs = f.split('/').filter((s) => s !== '' && s !== '.');
  if (absoluteFs && segs.length > 2) segs = segs.slice(-2);
  segs = segs.map((seg, i) => (i === segs.length - 1 ? normalizeBasename(seg) : isHashPiece(seg, false) ? '<hash>' : seg));
  return segs.join('/');
}

function normalizeModule(mod: string): string {
  return mod.replace(/\$\$Lambda\$\d+\/(?:0x)?[0-9a-f]+/gi, '$$$$Lambda').replace(/\/0x[0-9a-f]+/gi, '');
}

function frameLocation(f: StackFrame): string {
  if (f.module) return normalizeModule(f.module);
  return normalizeFilename(f.filename ?? f.abs_path);
}

/** Frames that are obviously not application code (used only when no frame is marked in_app). */
export function isSystemFrame(f: StackFrame): boolean {
  const path = (f.abs_path || f.filename || '').replace(/\\/g, '/');
  const mod = f.module ?? '';
  if (!path && !mod && !f.function) return true;
  if (/(^|\/)node_modules\//.test(path) || /(^|\/)node_modules\//.test(mod)) return true;
  if (/^node:/.test(path) || /^node:/.test(mod)) return true;
  if (/^internal\//.test(path) || /^internal\//.test(mod)) return true;
  if (/^(?:native|\[native code\]|<anonymous>|<unknown>|evalmachine\.<anonymous>)$/.test(path)) return true;
  if (/^(?:chrome|moz|safari(?:-web)?)-extension:\/\//.test(path)) return true;
  if (/^@sentry\//.test(mod) || /^@sentry\./.test(mod)) return true;
  return false;
}

function appFrames(ex: ExceptionValue): StackFrame[] {
  const frames = ex.frames ?? [];
  const marked = frames.filter((f) => f.in_app === true);
  const chosen = marked.length > 0 ? marked : frames.filter((f) => !isSystemFrame(f));
  return chosen.filter((f) => frameLocation(f) !== '' || normalizeFunctionName(f.function) !== '<anonymous>');
}

function frameLabel(f: StackFrame): string {
  const loc = frameLocation(f);
  const fn = normalizeFunctionName(f.function);
  return loc ? `${fn} (${loc})` : fn;
}

// ---------------------------------------------------------------------------------------------------------
// grouping

function truncate(s: string, max = TITLE_MAX): string {
  const chars = Array.from(s);
  return chars.length > max ? `${chars.slice(0, max - 1).join('')}…` : s;
}

function firstLine(s: string): string {
  const line = s.split(/\r?\n/).find((l) => l.trim() !== '') ?? '';
  return line.trim();
}

function sha256(components: string[]): string {
  return createHash('sha256').update(JSON.stringify(components)).digest('hex');
}

interface DefaultGrouping {
  method: Exclude<GroupKey['method'], 'sdk_fingerprint'>;
  components: string[];
  type: string;
  title: string;
  culprit: string;
  exception: ExceptionValue | null;
  topFrame: StackFrame | null;
}

function isSyntheticMessageException(ex: ExceptionValue, message: string): boolean {
  return ex.type.trim() === '' && message.trim() !== '' && (ex.value === '' || ex.value.trim() === message.trim());
}

function defaultGrouping(event: ErrorEventRecord): DefaultGrouping {
  const exceptions = event.exceptions ?? [];
  const ex = exceptions.length ? exceptions[exceptions.length - 1] : null;
  const message = event.message ?? '';
  const transaction = event.transaction ?? '';

  if (ex && !isSyntheticMessageException(ex, message)) {
    const type = ex.type.trim() || 'Error';
    const value = ex.value ?? '';
    const frames = appFrames(ex);
    const top = frames.length ? frames[frames.length - 1] : null;
    const title = value.trim() ? truncate(`${type}: ${firstLine(value) || value.trim()}`) : truncate(type);
    const culprit = top ? frameLabel(top) : transaction;
    if (frames.length > 0) {
      const labels: string[] = [];
      for (const f of frames) {
        const l = `frame=${frameLabel(f)}`;
        if (labels[labels.length - 1] !== l) labels.push(l); // collapse recursion
      }
      return { method: 'exception_frames', components: [`type=${type}`, ...labels], type, title, culprit, exception: ex, topFrame: top };
    }
    return {
      method: 'exception_type',
      components: [`type=${type}`, `value=${normalizeMessage(value)}`],
      type,
      title,
      culprit,
      exception: ex,
      topFrame: null,
    };
  }

  // message event (possibly with the SDK's synthetic stack)
  const frames = ex ? appFrames(ex) : [];
  const top = frames.length ? frames[frames.length - 1] : null;
  const text = message || ex?.value || '';
  return {
    method: 'message',
    components: [`message=${normalizeMessage(text)}`],
    type: 'message',
    title: truncate(firstLine(text)) || '<unlabeled event>',
    culprit: top ? frameLabel(top) : transaction,
    exception: null,
    topFrame: top,
  };
}

const VARIABLE = /^\{\{\s*([A-Za-z_.]+)\s*\}\}$/;

/** Computes the group of an error event (see the rules at the top of this file). */
export function groupKeyFor(event: ErrorEventRecord): GroupKey {
  const d = defaultGrouping(event);
  const sdk = (event.fingerprint ?? []).filter((x) => typeof x === 'string');
  if (sdk.length === 0) {
    return { fingerprint: sha256(d.components), components: d.components, method: d.method, type: d.type, title: d.title, culprit: d.culprit };
  }

  const components: string[] = [];
  let onlyDefault = true;
  for (const entry of sdk) {
    const m = VARIABLE.exec(entry.trim());
    const name = m ? m[1].toLowerCase() : null;
    if (name === 'default') {
      components.push(...d.components);
      continue;
    }
    onlyDefault = false;
    switch (name) {
      case 'transaction':
        components.push(event.transaction ?? '');
        break;
      case 'type':
      case 'error.type':
        components.push(d.exception ? d.type : '');
        break;
      case 'error.value':
        components.push(d.exception?.value ?? '');
        break;
      case 'message':
        components.push(event.message ?? '');
        break;
      case 'level':
        components.push(event.level ?? '');
        break;
      case 'function':
        components.push(d.topFrame ? normalizeFunctionName(d.topFrame.function) : '');
        break;
      case 'module':
        components.push(d.topFrame ? frameLocation(d.topFrame) : '');
        break;
      default:
        components.push(entry);
    }
  }
  return {
    fingerprint: sha256(components),
    components,
    method: onlyDefault ? d.method : 'sdk_fingerprint',
    type: d.type,
    title: d.title,
    culprit: d.culprit,
  };
}
