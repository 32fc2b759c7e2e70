/**
 * Why this file: the typed operations of remote access are the only things a target can be asked to
 * do. The server (request validation, policy) and the connector (command construction) both import
 * this one table, so parameters are validated by the same rules on both sides and each operation
 * maps to one fixed command whose only variable parts are validated values passed as separate
 * arguments — never command text from a caller.
 */

export type ParamSpec =
  | { kind: 'unit' }
  | { kind: 'int'; min: number; max: number; policyKey?: 'max_lines' };

export interface TypedOperation {
  id: string;
  summary: string;
  /** Observe-only operations run in the preview; remediation exists in the catalogue but is disabled. */
  kind: 'observe' | 'remediate';
  params: Record<string, ParamSpec & { required: boolean }>;
  /** argv of the fixed command (the connector joins it with single-quoted arguments). */
  argv(p: Record<string, string | number>): string[];
}

/** systemd unit names: letters, digits and `@._-`, with a unit-type suffix; no leading dash, no `..`. */
export const UNIT_NAME = /^[A-Za-z0-9][A-Za-z0-9@._-]{0,99}\.(service|socket|timer|target|mount|path)$/;

export const TYPED_OPERATIONS: Record<string, TypedOperation> = {
  'host.disk_usage': { id: 'host.disk_usage', summary: 'Disk usage per file system (df -P -k).', kind: 'observe', params: {}, argv: () => ['df', '-P', '-k'] },
  'host.memory': { id: 'host.memory', summary: 'Memory use (free -b).', kind: 'observe', params: {}, argv: () => ['free', '-b'] },
  'host.uptime': { id: 'host.uptime', summary: 'Uptime and load averages (uptime).', kind: 'observe', params: {}, argv: () => ['uptime'] },
  'service.status': {
    id: 'service.status',
    summary: 'State of one systemd unit (systemctl status).',
    kind: 'observe',
    params: { unit: { kind: 'unit', required: true } },
    argv: (p) => ['systemctl', 'status', '--no-pager', '--lines=0', '--', String(p.unit)],
  },
  'journal.tail': {
    id: 'journal.tail',
    summary: 'The last lines of one unit’s journal (journalctl -n).',
    kind: 'observe',
    params: { unit: { kind: 'unit', required: true }, lines: { kind: 'int', min: 1, max: 1000, required: true, policyKey: 'max_lines' } },
    argv: (p) => ['journalctl', '--no-pager', '-o', 'short-iso', '-n', String(p.lines), '-u', String(p.unit)],
  },
  'service.restart': {
    id: 'service.restart',
    summary: 'Restart one systemd unit (remediation: disabled in the preview).',
    kind: 'remediate',
    params: { unit: { kind: 'unit', required: true } },
    argv: (p) => ['systemctl', 'restart', '--', String(p.unit)],
  },
};

export const OPERATION_ID = /^[a-z][a-z_]{0,30}\.[a-z][a-z_]{0,30}$/;

/** Keys and values that look like someone trying to send a command instead of a typed operation. */
const COMMAND_KEYS = new Set(['command', 'cmd', 'script', 'shell', 'exec', 'args', 'argv', 'run', 'sh', 'bash']);
const SHELL_TEXT = /[;&|`$<>\\]|\$\(|\b(sudo|rm|curl|wget|bash|sh|nc|chmod|chown)\b\s/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

export interface ParamProblem {
  code: 'invalid_operation' | 'command_text_rejected' | 'control_characters' | 'unknown_parameter' | 'missing_parameter' | 'invalid_service_unit' | 'invalid_parameter_value';
  message: string;
  param: string;
}

function hasControl(v: unknown): boolean {
  if (typeof v === 'string') return CONTROL.test(v);
  if (Array.isArray(v)) return v.some(hasControl);
  if (v && typeof v === 'object') return Object.entries(v).some(([k, x]) => CONTROL.test(k) || hasControl(x));
  return false;
}

/**
 * Checks an operation id and its parameters (no policy). Returns the normalized parameters or the
 * first problem, with a stable code. Used by the server before anything is stored and by the
 * connector before anything runs.
 */
export function checkTypedOperation(opId: unknown, params: unknown): { ok: true; op: TypedOperation; params: Record<string, string | number> } | { ok: false; problem: ParamProblem } {
  const bad = (code: ParamProblem['code'], message: string, param: string) => ({ ok: false as const, problem: { code, message, param } });
  if (typeof opId !== 'string' || hasControl(opId)) return bad(typeof opId === 'string' ? 'control_characters' : 'invalid_operation', 'The operation id must be a plain string such as host.disk_usage.', 'operation.id');
  if (SHELL_TEXT.test(opId) || /\s/.test(opId)) return bad('command_text_rejected', 'Send a typed operation id (such as host.disk_usage), never command text.', 'operation.id');
  const op = OPERATION_ID.test(opId) ? TYPED_OPERATIONS[opId] : undefined;
  if (!op) return bad('invalid_operation', `Unknown operation id. Known: ${Object.keys(TYPED_OPERATIONS).join(', ')}.`, 'operation.id');
  if (!params || typeof params !== 'object' || Array.isArray(params)) return bad('invalid_parameter_value', '`operation.parameters` must be an object.', 'operation.parameters');
  if (hasControl(params)) return bad('control_characters', 'Parameters may not contain control characters.', 'operation.parameters');
  const out: Record<string, string | number> = {};
  for (const [k, v] of Object.entries(params as Record<string, unknown>)) {
    if (COMMAND_KEYS.has(k.toLowerCase())) return bad('command_text_rejected', 'Command text is not accepted; send a typed operation with its typed parameters.', `operation.parameters.${k}`);
    if (typeof v === 'string' && SHELL_TEXT.test(v)) return bad('command_text_rejected', 'Parameter values may not carry command text.', `operation.parameters.${k}`);
    if (!Object.hasOwn(op.params, k)) return bad('unknown_parameter', `\`${op.id}\` takes ${Object.keys(op.params).join(', ') || 'no parameters'}.`, `operation.parameters.${k.slice(0, 40)}`);
  }
  for (const [k, spec] of Object.entries(op.params)) {
    const v = (params as Record<string, unknown>)[k];
    if (v === undefined) {
      if (spec.required) return bad('missing_parameter', `\`${k}\` is required for ${op.id}.`, `operation.parameters.${k}`);
      continue;
    }
    if (spec.kind === 'unit') {
      if (typeof v !== 'string' || !UNIT_NAME.test(v) || v.includes('..')) return bad('invalid_service_unit', 'A unit name such as nginx.service (letters, digits, @._- and a unit-type suffix).', `operation.parameters.${k}`);
      out[k] = v;
    } else {
      if (typeof v !== 'number' || !Number.isInteger(v) || v < spec.min || v > spec.max) return bad('invalid_parameter_value', `\`${k}\` must be an integer from ${spec.min} to ${spec.max}.`, `operation.parameters.${k}`);
      out[k] = v;
    }
  }
  return { ok: true, op, params: out };
}

/** The fixed command line for a checked operation: every argument single-quoted. */
export function commandLine(op: TypedOperation, params: Record<string, string | number>): string {
  return op.argv(params).map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
}
