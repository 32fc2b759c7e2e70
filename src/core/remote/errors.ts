/**
 * Why this file: remote-access errors use stable codes with a safe message and a recovery hint
 * (spec, Errors item 4). A stale approval, grant, policy, target, connector identity or authority is
 * terminal and always says to preview and create a new request.
 */
import { AppError, ForbiddenError } from '../errors.js';

export const PREVIEW_DISABLED = 'remote_access_preview_disabled';

export function previewDisabled(): ForbiddenError {
  return new ForbiddenError(PREVIEW_DISABLED, 'Remote access is a gated preview and is not enabled for this project. Recovery: a project owner enables it (remoteAccess.updatePreview).');
}

export type StaleWhat = 'approval' | 'grant' | 'policy' | 'target' | 'connector_identity' | 'authority';
export const STALE_CODES = ['approval_stale', 'grant_stale', 'policy_stale', 'target_stale', 'connector_identity_stale', 'authority_stale'] as const;

/** Terminal: nothing can make this request run; a new one must be previewed and created. */
export class StaleError extends AppError {
  constructor(what: StaleWhat) {
    super(409, 'conflict_error', `${what}_stale`, `The ${what.replace('_', ' ')} this request was bound to is stale; the request can no longer run. Recovery: preview the request again and create a new request.`);
  }
}

export const staleMessage = (code: string) =>
  `The ${code.replace(/_stale$/, '').replace('_', ' ')} this request was bound to is stale; the request can no longer run. Recovery: preview the request again and create a new request.`;
