import type { AnyOperation } from './define.js';
import * as projects from './projects.js';
import * as apiKeys from './apiKeys.js';
import * as feedback from './feedback.js';
import * as deployments from './deployments.js';

/** Every tag file, imported explicitly; the catalogue is the union of their operations. */
export const tagModules: Record<string, Record<string, unknown>> = { projects, apiKeys, feedback, deployments };

function isOperation(v: unknown): v is AnyOperation {
  return !!v && typeof v === 'object' && 'operationId' in v && 'handler' in v;
}

export const catalogue: readonly AnyOperation[] = Object.values(tagModules).flatMap((m) => Object.values(m).filter(isOperation));
