import type { AnyOperation } from './define.js';
import * as projects from './projects.js';
import * as users from './users.js';
import * as apiKeys from './apiKeys.js';
import * as feedback from './feedback.js';
import * as deployments from './deployments.js';
import * as errors from './errors.js';
import * as events from './events.js';
import * as logs from './logs.js';
import * as metrics from './metrics.js';
import * as observability from './observability.js';
import * as traces from './traces.js';
import * as system from './system.js';
import * as retention from './retention.js';
import * as monitors from './monitors.js';
import * as incidents from './incidents.js';
import * as statusPages from './statusPages.js';
import * as agentObservationsTag from './agentObservations.js';
import * as agentScores from './agentScores.js';
import * as ai from './ai.js';
import * as releases from './releases.js';
import * as analytics from './analytics.js';
import * as revenue from './revenue.js';
import * as integrations from './integrations.js';
import * as agent from './agent.js';
import * as threads from './threads.js';
import * as automations from './automations.js';
import * as remoteAccessTag from './remoteAccess.js';

// The REST router matches in catalogue order: /agent-observations/quality and /export before /{observation_id}.
const agentObservations = { list: agentObservationsTag.list, quality: agentObservationsTag.quality, export: agentObservationsTag.export, get: agentObservationsTag.get };

// Literal paths before {id} paths: /requests/preview before /requests/{request_id}.
const remoteAccess = {
  updatePreview: remoteAccessTag.updatePreview, listTargets: remoteAccessTag.listTargets, previewRequest: remoteAccessTag.previewRequest,
  createRequest: remoteAccessTag.createRequest, getRequest: remoteAccessTag.getRequest, cancelRequest: remoteAccessTag.cancelRequest,
  listApprovals: remoteAccessTag.listApprovals, listExecutions: remoteAccessTag.listExecutions, listAudit: remoteAccessTag.listAudit,
  listSetupTargets: remoteAccessTag.listSetupTargets, createTarget: remoteAccessTag.createTarget, requestVerification: remoteAccessTag.requestVerification,
  revealVerificationBootstrap: remoteAccessTag.revealVerificationBootstrap, revealAuthorityBundle: remoteAccessTag.revealAuthorityBundle,
  getPolicy: remoteAccessTag.getPolicy, appendPolicyRevision: remoteAccessTag.appendPolicyRevision, validatePolicy: remoteAccessTag.validatePolicy,
  listConnectors: remoteAccessTag.listConnectors, createConnector: remoteAccessTag.createConnector, getConnector: remoteAccessTag.getConnector,
  rotateConnector: remoteAccessTag.rotateConnector, revokeConnector: remoteAccessTag.revokeConnector,
};

/** Every tag file, imported explicitly; the catalogue is the union of their operations. */
const modules = { projects, apiKeys, feedback, deployments, errors, events, logs, metrics, observability, traces, system, retention, monitors, incidents, statusPages, agentObservations, agentScores, ai, releases, analytics, revenue, integrations, agent, threads, automations, users, remoteAccess };
export const tagModules: Record<string, Record<string, unknown>> = modules;
/** The tag modules with their types kept (tag → export → descriptor): the typed client (src/client) is derived from it. */
export type TagModules = typeof modules;

function isOperation(v: unknown): v is AnyOperation {
  return !!v && typeof v === 'object' && 'operationId' in v && 'handler' in v;
}

export const catalogue: readonly AnyOperation[] = Object.values(tagModules).flatMap((m) => Object.values(m).filter(isOperation));
