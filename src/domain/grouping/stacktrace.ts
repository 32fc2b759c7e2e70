import type { StackFrame } from '../telemetry-types.js';

const V8 = /^\s*at (?:(?<fn>.+?) \()?(?<file>(?:node:|file:|https?:|\/|[A-Za-z]:\\|<anonymous>)[^()]*?)(?::(?<line>\d+))?(?::(?<col>\d+))?\)?\s*$/;
const JAVA = /^\s*at (?<fn>[\w$.<>]+)\((?<file>[^:()]+)(?::(?<line>\d+))?\)\s*$/;
const PY = /^\s*File "(?<file>[^"]+)", line (?<line>\d+), in (?<fn>\S+)/;

function inApp(file: string): boolean {
  return !/node_modules|^node:|^internal\/|site-packages|dist-packages|^java\.|^sun\./.test(file);
}

/**
 * Frames of a textual stack trace (OTel `exception.stacktrace`): V8/Node, Java and Python formats.
 * Returned oldest call first, as Sentry orders frames (the raising frame last).
 */
export function parseStackTrace(text: string): StackFrame[] {
  if (!text) return [];
  const lines = text.split('\n');
  const frames: StackFrame[] = [];
  let python = false;
  for (const line of lines) {
    let m = V8.exec(line) ?? JAVA.exec(line);
    if (!m) {
      m = PY.exec(line);
      if (m) python = true;
    }
    if (!m?.groups) continue;
    const g = m.groups;
    const file = g.file ?? '';
    frames.push({
      filename: file,
      abs_path: file,
      function: g.fn ?? '<anonymous>',
      lineno: g.line ? Number(g.line) : undefined,
      colno: g.col ? Number(g.col) : undefined,
      in_app: inApp(file),
    });
    if (frames.length >= 200) break;
  }
  // V8 and Java print the newest frame first; Python tracebacks print the oldest first.
  return python ? frames : frames.reverse();
}
