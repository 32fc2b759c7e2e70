/**
 * Event payloads as stored (the Sentry event JSON, or for OTLP the span plus its exception event
 * attributes): trimming for responses, and the raised exception with its frames. Pure.
 */
import type { StackFrame } from '../telemetry-types.js';
import { parseStackTrace } from '../grouping/stacktrace.js';
import { isSystemFrame } from '../grouping/fingerprint.js';

export const PAYLOAD_MAX_BYTES = 64 * 1024;

const byteLength = (v: unknown) => Buffer.byteLength(JSON.stringify(v) ?? '');

function shrink(v: unknown, depth: number, lim: { str: number; arr: number; keys: number; depth: number }): unknown {
  if (typeof v === 'string') return v.length > lim.str ? `${v.slice(0, lim.str)}… [${v.length - lim.str} more characters]` : v;
  if (v === null || typeof v !== 'object') return v;
  if (depth >= lim.depth) return '[nested too deep]';
  if (Array.isArray(v)) {
    // Keep the end: Sentry orders frames oldest first (the raising frame last) and breadcrumbs oldest first.
    const kept = v.length > lim.arr ? v.slice(v.length - lim.arr) : v;
    return kept.map((x) => shrink(x, depth + 1, lim));
  }
  const out: Record<string, unknown> = {};
  let n = 0;
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (n++ >= lim.keys) {
      out['…'] = `${Object.keys(v as object).length - lim.keys} more keys`;
      break;
    }
    out[k] = shrink(x, depth + 1, lim);
  }
  return out;
}

/**
 * The payload unchanged when its JSON is at most `maxBytes`; otherwise long strings are cut, long
 * arrays keep their last items and deep nesting is elided, harder until it fits.
 */
export function trimPayload(payload: unknown, maxBytes = PAYLOAD_MAX_BYTES): { payload: unknown; truncated: boolean } {
  if (byteLength(payload) <= maxBytes) return { payload, truncated: false };
  for (const lim of [
    { str: 4096, arr: 100, keys: 200, depth: 16 },
    { str: 1024, arr: 30, keys: 100, depth: 10 },
    { str: 256, arr: 10, keys: 50, depth: 6 },
  ]) {
    const t = shrink(payload, 0, lim);
    if (byteLength(t) <= maxBytes) return { payload: t, truncated: true };
  }
  return { payload: { note: `payload omitted: larger than ${maxBytes} bytes even when trimmed` }, truncated: true };
}

export interface RaisedException {
  type: string;
  value: string;
  /** oldest call first (the raising frame last) */
  frames: StackFrame[];
}

/* eslint-disable @typescript-eslint/no-explicit-any */
const isObj = (v: unknown): v is Record<string, any> => !!v && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown) => (typeof v === 'string' ? v : '');

function framesFromSentry(st: unknown): StackFrame[] {
  if (!isObj(st) || !Array.isArray(st.frames)) return [];
  return st.frames.filter(isObj).map((f) => {
    const out: StackFrame = {};
    if (typeof f.filename === 'string') out.filename = f.filename;
    if (typeof f.abs_path === 'string') out.abs_path = f.abs_path;
    if (typeof f.module === 'string') out.module = f.module;
    if (typeof f.function === 'string') out.function = f.function;
    if (typeof f.lineno === 'number') out.lineno = f.lineno;
    if (typeof f.colno === 'number') out.colno = f.colno;
    if (typeof f.in_app === 'boolean') out.in_app = f.in_app;
    return out;
  });
}

/** The innermost raised exception of a stored payload (Sentry event or OTLP exception event), or null. */
export function raisedException(payload: unknown): RaisedException | null {
  if (!isObj(payload)) return null;
  // OTLP: { span, exception: { 'exception.type', 'exception.message', 'exception.stacktrace' } }
  if (isObj(payload.exception) && ('exception.type' in payload.exception || 'exception.message' in payload.exception)) {
    const a = payload.exception;
    return { type: str(a['exception.type']) || 'Error', value: str(a['exception.message']), frames: parseStackTrace(str(a['exception.stacktrace'])) };
  }
  const ex = payload.exception;
  const values = Array.isArray(ex) ? ex : isObj(ex) && Array.isArray(ex.values) ? ex.values : [];
  const last = values.filter(isObj).at(-1);
  if (!last) return null;
  const frames = framesFromSentry(last.stacktrace);
  // Some SDKs put the stack trace on the event (threads / top-level `stacktrace`).
  if (!frames.length && isObj(payload.stacktrace)) frames.push(...framesFromSentry(payload.stacktrace));
  return { type: str(last.type), value: str(last.value), frames };
}

/** The frame most likely at fault: the newest frame marked in-app, else the newest non-library frame, else the newest. */
export function topInAppFrame(frames: readonly StackFrame[]): StackFrame | null {
  for (let i = frames.length - 1; i >= 0; i--) if (frames[i]!.in_app === true) return frames[i]!;
  for (let i = frames.length - 1; i >= 0; i--) if (!isSystemFrame(frames[i]!)) return frames[i]!;
  return frames.at(-1) ?? null;
}
