/**
 * Why this file: a target's policy says which typed operations it allows and within which limits.
 * Revisions are immutable and numbered (a request and its approval bind the revision they were
 * checked against; a newer revision makes them stale). The decision for a typed request is computed
 * here, once, for preview and create alike.
 */
import { z } from 'zod';
import { TYPED_OPERATIONS, type TypedOperation } from './typed-ops.js';

/** Spec, Limits: `redacted_output` at most 65,536 characters. */
export const MAX_OUTPUT_CHARS = 65_536;
export const MAX_TIMEOUT_SECONDS = 300;

const opRule = z.strictObject({
  enabled: z.boolean().describe('Allow this operation on the target.'),
  max_lines: z.number().int().min(1).max(1000).optional().describe('journal.tail: most lines a request may ask for.'),
  units: z.array(z.string().max(100)).max(100).optional().describe('service.status / journal.tail: the only units a request may name (absent: any valid unit).'),
});

export const policyBody = z.strictObject({
  operations: z.record(z.string(), opRule).describe('Typed operation id → rule. Operations not listed are denied.'),
  max_timeout_seconds: z.number().int().min(1).max(MAX_TIMEOUT_SECONDS).describe(`Longest timeout a request may ask for (1 to ${MAX_TIMEOUT_SECONDS}).`),
  output_limit: z.number().int().min(256).max(MAX_OUTPUT_CHARS).describe(`Characters of redacted output kept (256 to ${MAX_OUTPUT_CHARS}).`),
});
export type Policy = z.infer<typeof policyBody>;

export const DEFAULT_POLICY: Policy = {
  operations: { 'host.disk_usage': { enabled: true }, 'host.memory': { enabled: true }, 'host.uptime': { enabled: true } },
  max_timeout_seconds: 30,
  output_limit: 16_384,
};

export interface PolicyProblem {
  path: string;
  code: 'unknown_operation' | 'remediation_disabled_in_preview' | 'invalid_unit_in_allow_list';
  message: string;
}

/** Rules beyond the schema: known operation ids, no remediation enabled in the preview, valid unit names. */
export function policyProblems(p: Policy): PolicyProblem[] {
  const out: PolicyProblem[] = [];
  for (const [id, rule] of Object.entries(p.operations)) {
    const op = TYPED_OPERATIONS[id];
    if (!op) out.push({ path: `operations.${id.slice(0, 40)}`, code: 'unknown_operation', message: 'Not a typed operation id.' });
    else if (op.kind === 'remediate' && rule.enabled) out.push({ path: `operations.${id}`, code: 'remediation_disabled_in_preview', message: `${id} is remediation, which the preview does not allow.` });
    for (const u of rule.units ?? []) if (!/^[A-Za-z0-9][A-Za-z0-9@._-]{0,99}\.(service|socket|timer|target|mount|path)$/.test(u)) out.push({ path: `operations.${id}.units`, code: 'invalid_unit_in_allow_list', message: 'Unit names such as nginx.service only.' });
  }
  return out;
}

export type PolicyAction = 'require_approval' | 'deny';
export type DecisionCode =
  | 'approval_required'
  | 'operation_disabled_in_preview'
  | 'operation_not_allowed_by_policy'
  | 'unit_not_allowed_by_policy'
  | 'target_not_enabled';

export interface Decision {
  action: PolicyAction;
  decision_code: DecisionCode;
}

/** Limits outside policy are rejections (400), not decisions: the caller fixes the request. */
export interface LimitProblem {
  param: string;
  message: string;
}

export function limitProblem(policy: Policy, op: TypedOperation, params: Record<string, string | number>, timeoutSeconds: number): LimitProblem | null {
  if (timeoutSeconds > policy.max_timeout_seconds) return { param: 'timeout_seconds', message: `The target's policy allows at most ${policy.max_timeout_seconds} seconds.` };
  const rule = policy.operations[op.id];
  for (const [k, spec] of Object.entries(op.params)) {
    if (spec.kind === 'int' && spec.policyKey && rule?.[spec.policyKey] !== undefined && Number(params[k]) > rule[spec.policyKey]!) {
      return { param: `operation.parameters.${k}`, message: `The target's policy allows at most ${rule[spec.policyKey]}.` };
    }
  }
  return null;
}

export function decide(policy: Policy, op: TypedOperation, params: Record<string, string | number>, targetEnabled: boolean): Decision {
  if (op.kind === 'remediate') return { action: 'deny', decision_code: 'operation_disabled_in_preview' };
  if (!targetEnabled) return { action: 'deny', decision_code: 'target_not_enabled' };
  const rule = policy.operations[op.id];
  if (!rule?.enabled) return { action: 'deny', decision_code: 'operation_not_allowed_by_policy' };
  if (rule.units && typeof params.unit === 'string' && !rule.units.includes(params.unit)) return { action: 'deny', decision_code: 'unit_not_allowed_by_policy' };
  // Every allowed operation needs a human approval in the preview.
  return { action: 'require_approval', decision_code: 'approval_required' };
}
