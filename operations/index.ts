import type { AnyOperation } from './define.js';
import * as projects from './projects.js';
import * as apiKeys from './apiKeys.js';
import * as feedback from './feedback.js';
import * as deployments from './deployments.js';
import * as errors from './errors.js';
import * as events from './events.js';
import * as logs from './logs.js';
import * as metrics from './metrics.js';
import * as observability from './observability.js';
import * as traces from './traces.js';
import * as analytics from './analytics.js';
import * as revenue from './revenue.js';
import * as integrations from './integrations.js';

/** Every tag file, imported explicitly; the catalogue is the union of their operations. */
const modules = { projects, apiKeys, feedback, deployments, errors, events, logs, metrics, observability, traces, analytics, revenue, integrations };
export const tagModules: Record<string, Record<string, unknown>> = modules;
/** The tag modules with their types kept (tag → export → descriptor): the typed client (src/client) is derived from it. */
export type TagModules = typeof modules;

function isOperation(v: unknown): v is AnyOperation {
  return !!v && typeof v === 'object' && 'operationId' in v && 'handler' in v;
}

export const catalogue: readonly AnyOperation[] = Object.values(tagModules).flatMap((m) => Object.values(m).filter(isOperation));
