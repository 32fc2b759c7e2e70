/**
 * A compact, readable stack trace of a stored event payload (Sentry event JSON, or the OTLP span plus
 * its exception attributes), for errors.get instead of the raw payload: the raised exception first
 * (then the ones it was chained from), in-app frames first, newest first, each as `file:line function`
 * with the source line where the SDK sent one. Pure.
 */
import { parseStackTrace } from '../grouping/stacktrace.js';
import { isSystemFrame } from '../grouping/fingerprint.js';

export interface CompactFrame {
  in_app: boolean;
  file: string | null;
  line: number | null;
  column: number | null;
  function: string | null;
  context_line: string | null;
}

export interface CompactException {
  type: string;
  value: string;
  frames: CompactFrame[];
  /** Frames left out beyond the limit. */
  omitted_frames: number;
}

export interface CompactStack {
  exceptions: CompactException[];
  /** The same as text: one line per frame, `  at file:line function`, the source line under it. */
  text: string;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
const isObj = (v: unknown): v is Record<string, any> => !!v && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown) => (typeof v === 'string' ? v : '');
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

const MAX_EXCEPTIONS = 3;
const MAX_FRAMES = 25;
const MAX_CONTEXT = 200;

/** Frames oldest first, as stored, with in_app resolved (sent, else "not a library frame"). */
function framesOf(raw: unknown[]): CompactFrame[] {
  return raw.filter(isObj).map((f) => {
    const sent = typeof f.in_app === 'boolean' ? f.in_app : null;
    const base = { filename: str(f.filename) || undefined, abs_path: str(f.abs_path) || undefined, module: str(f.module) || undefined, function: str(f.function) || undefined };
    const ctx = str(f.context_line).trim();
    return {
      in_app: sent ?? !isSystemFrame(base),
      file: base.filename || base.abs_path || base.module || null,
      line: num(f.lineno),
      column: num(f.colno),
      function: base.function && base.function !== '?' ? base.function : null,
      context_line: ctx ? ctx.slice(0, MAX_CONTEXT) : null,
    };
  });
}

function order(frames: CompactFrame[]): { frames: CompactFrame[]; omitted: number } {
  const newestFirst = [...frames].reverse();
  const all = [...newestFirst.filter((f) => f.in_app), ...newestFirst.filter((f) => !f.in_app)];
  return { frames: all.slice(0, MAX_FRAMES), omitted: Math.max(0, all.length - MAX_FRAMES) };
}

function exceptionsOf(payload: unknown): CompactException[] {
  if (!isObj(payload)) return [];
  if (isObj(payload.exception) && ('exception.type' in payload.exception || 'exception.message' in payload.exception)) {
    const a = payload.exception;
    const o = order(framesOf(parseStackTrace(str(a['exception.stacktrace'])) as unknown[]));
    return [{ type: str(a['exception.type']) || 'Error', value: str(a['exception.message']), frames: o.frames, omitted_frames: o.omitted }];
  }
  const ex = payload.exception;
  const values = (Array.isArray(ex) ? ex : isObj(ex) && Array.isArray(ex.values) ? ex.values : []).filter(isObj);
  const out: CompactException[] = [];
  // Sentry lists the raised exception last: show it first, then its causes.
  for (const v of [...values].reverse().slice(0, MAX_EXCEPTIONS)) {
    let raw: unknown[] = isObj(v.stacktrace) && Array.isArray(v.stacktrace.frames) ? v.stacktrace.frames : [];
    if (!raw.length && out.length === 0 && isObj(payload.stacktrace) && Array.isArray(payload.stacktrace.frames)) raw = payload.stacktrace.frames;
    const o = order(framesOf(raw));
    out.push({ type: str(v.type), value: str(v.value), frames: o.frames, omitted_frames: o.omitted });
  }
  return out;
}

function render(exceptions: CompactException[]): string {
  const lines: string[] = [];
  exceptions.forEach((e, i) => {
    if (i > 0) lines.push('', 'caused by / chained with:');
    lines.push([e.type, e.value].filter(Boolean).join(': ') || 'Error');
    for (const f of e.frames) {
      const where = [f.file ?? '?', f.line !== null ? `:${f.line}` : ''].join('');
      lines.push(`  at ${where}${f.function ? ` ${f.function}` : ''}${f.in_app ? '' : ' [library]'}`);
      if (f.context_line) lines.push(`      > ${f.context_line}`);
    }
    if (e.omitted_frames) lines.push(`  … ${e.omitted_frames} more frames`);
  });
  return lines.join('\n');
}

/** The compact stack of a stored payload, or null when it carries no exception. */
export function compactStack(payload: unknown): CompactStack | null {
  const exceptions = exceptionsOf(payload);
  if (!exceptions.length) return null;
  return { exceptions, text: render(exceptions) };
}
