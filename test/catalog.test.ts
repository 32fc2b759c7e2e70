/**
 * Descriptor rules for every operation of the catalogue, and the pinned operation table
 * (operationId, method, path, scopes, risk, MCP visibility) every face must agree on.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { catalogue, tagModules } from '../operations/index.js';
import { pathParams, type AnyOperation } from '../operations/define.js';
import { isKnownScope } from '../src/core/scopes.js';
import { isStrictObject } from './helpers/access-cases.js';

type Row = [operationId: string, method: string, path: string, scopes: string[], risk: 'read' | 'write', hidden: boolean];

/**
 * The canonical catalogue, one row per operation (copied from the project's operation table; `P` is
 * expanded to /v1/projects/{project_id}, `…` to the remote-access or status-page base).
 * Scopes: all required. `[]`: any valid credential of the project (or any authenticated user for
 * remoteAccess.listApprovals). `hidden`: x-sensitive, never exposed to the tool server.
 * Operations the project adds beyond this table (monitors, organization administration, replays,
 * web vitals) get a row in EXTRA_ROWS when they land.
 */
const PINNED: Row[] = [
  ['projects.list', 'GET', '/v1/projects', [], 'read', false], // any valid credential
  ['projects.get', 'GET', '/v1/projects/{project_id}', [], 'read', false], // any credential of that project / member
  ['projects.updateSpikeProtection', 'PUT', '/v1/projects/{project_id}/spike-protection', ['project:write'], 'write', false],
  ['apiKeys.list', 'GET', '/v1/projects/{project_id}/api-keys', ['project:write'], 'read', true],
  ['apiKeys.get', 'GET', '/v1/projects/{project_id}/api-keys/{key_id}', ['project:write'], 'read', true],
  ['apiKeys.create', 'POST', '/v1/projects/{project_id}/api-keys', ['project:write'], 'write', true],
  ['apiKeys.update', 'PATCH', '/v1/projects/{project_id}/api-keys/{key_id}', ['project:write'], 'write', true],
  ['apiKeys.delete', 'DELETE', '/v1/projects/{project_id}/api-keys/{key_id}', ['project:write'], 'write', true],
  ['errors.list', 'GET', '/v1/projects/{project_id}/errors', ['errors:read'], 'read', false],
  ['errors.get', 'GET', '/v1/projects/{project_id}/errors/{error_group_id}', ['errors:read'], 'read', false],
  ['errors.update', 'PATCH', '/v1/projects/{project_id}/errors/{error_group_id}', ['errors:write'], 'write', false],
  ['errors.merge', 'POST', '/v1/projects/{project_id}/errors/{error_group_id}/merge', ['errors:write'], 'write', false],
  ['errors.unmerge', 'POST', '/v1/projects/{project_id}/errors/{error_group_id}/unmerge', ['errors:write'], 'write', false],
  ['errors.listRelatedTraces', 'GET', '/v1/projects/{project_id}/errors/{error_group_id}/traces', ['errors:read'], 'read', false],
  ['errors.listSuspectCommits', 'GET', '/v1/projects/{project_id}/errors/{error_group_id}/suspect-commits', ['errors:read'], 'read', false],
  ['errors.listTriageRuns', 'GET', '/v1/projects/{project_id}/errors/{error_group_id}/triage-runs', ['errors:read'], 'read', false],
  ['errors.createTriage', 'POST', '/v1/projects/{project_id}/errors/{error_group_id}/triage', ['errors:write'], 'write', false],
  ['events.search', 'GET', '/v1/projects/{project_id}/events/search', ['errors:read'], 'read', false],
  ['events.latency', 'GET', '/v1/projects/{project_id}/events/latency', ['errors:read'], 'read', false],
  ['deployments.list', 'GET', '/v1/projects/{project_id}/deployments', ['deployments:read'], 'read', false],
  ['deployments.create', 'POST', '/v1/projects/{project_id}/deployments', ['deployments:write'], 'write', false],
  ['releases.list', 'GET', '/v1/projects/{project_id}/releases', ['deployments:read', 'errors:read'], 'read', false],
  ['releases.get', 'GET', '/v1/projects/{project_id}/releases/{release_id}', ['deployments:read', 'errors:read'], 'read', false],
  ['logs.search', 'GET', '/v1/projects/{project_id}/logs', ['read'], 'read', false],
  ['logs.histogram', 'GET', '/v1/projects/{project_id}/logs/histogram', ['read'], 'read', false],
  ['logs.insights', 'GET', '/v1/projects/{project_id}/logs/insights', ['read'], 'read', false],
  ['metrics.list', 'GET', '/v1/projects/{project_id}/metrics', ['read'], 'read', false],
  ['metrics.timeline', 'GET', '/v1/projects/{project_id}/metrics/timeline', ['read'], 'read', false],
  ['metrics.inspect', 'GET', '/v1/projects/{project_id}/metrics/inspect', ['read'], 'read', false],
  ['observability.summary', 'GET', '/v1/projects/{project_id}/observability-summary', ['read'], 'read', false],
  ['traces.list', 'GET', '/v1/projects/{project_id}/traces', ['read'], 'read', false],
  ['traces.operations', 'GET', '/v1/projects/{project_id}/trace-operations', ['read'], 'read', false],
  ['traces.get', 'GET', '/v1/projects/{project_id}/traces/{trace_id}', ['read'], 'read', false],
  ['traces.errors', 'GET', '/v1/projects/{project_id}/traces/{trace_id}/errors', ['read'], 'read', false],
  ['traces.serviceMap', 'GET', '/v1/projects/{project_id}/services', ['read'], 'read', false],
  ['agentObservations.list', 'GET', '/v1/projects/{project_id}/agent-observations', ['read'], 'read', false],
  ['agentObservations.get', 'GET', '/v1/projects/{project_id}/agent-observations/{observation_id}', ['read'], 'read', false],
  ['agentObservations.quality', 'GET', '/v1/projects/{project_id}/agent-observations/quality', ['read'], 'read', false],
  ['agentObservations.export', 'GET', '/v1/projects/{project_id}/agent-observations/export', ['ai:export'], 'read', true],
  ['agentScores.list', 'GET', '/v1/projects/{project_id}/agent-scores', ['read'], 'read', false],
  ['agentScores.summary', 'GET', '/v1/projects/{project_id}/agent-scores/summary', ['read'], 'read', false],
  ['ai.stats', 'GET', '/v1/projects/{project_id}/ai/stats', ['read'], 'read', false],
  ['ai.histogram', 'GET', '/v1/projects/{project_id}/ai/histogram', ['read'], 'read', false],
  ['ai.session', 'GET', '/v1/projects/{project_id}/ai/sessions/{session_id}', ['read'], 'read', false],
  ['ai.user', 'GET', '/v1/projects/{project_id}/ai/users/{user_id}', ['read'], 'read', false],
  ['ai.fixStats', 'GET', '/v1/projects/{project_id}/ai/fixes/stats', ['read'], 'read', false],
  ['ai.fixTimeline', 'GET', '/v1/projects/{project_id}/ai/fixes/timeline', ['read'], 'read', false],
  ['feedback.create', 'POST', '/v1/projects/{project_id}/feedback', ['events:ingest'], 'write', false],
  ['feedback.list', 'GET', '/v1/projects/{project_id}/feedback', ['errors:read'], 'read', false],
  ['feedback.get', 'GET', '/v1/projects/{project_id}/feedback/{feedback_id}', ['errors:read'], 'read', false],
  ['feedback.update', 'PATCH', '/v1/projects/{project_id}/feedback/{feedback_id}', ['errors:write'], 'write', false],
  ['analytics.status', 'GET', '/v1/projects/{project_id}/analytics/status', ['read'], 'read', false],
  ['revenue.status', 'GET', '/v1/projects/{project_id}/revenue/status', ['revenue:read'], 'read', false],
  ['revenue.overview', 'GET', '/v1/projects/{project_id}/revenue/overview', ['revenue:read'], 'read', false],
  ['revenue.mrr', 'GET', '/v1/projects/{project_id}/revenue/mrr', ['revenue:read'], 'read', false],
  ['revenue.impact', 'GET', '/v1/projects/{project_id}/revenue/impact', ['revenue:read'], 'read', false],
  ['revenue.attribution', 'GET', '/v1/projects/{project_id}/revenue/attribution', ['revenue:read'], 'read', false],
  ['revenue.listEvents', 'GET', '/v1/projects/{project_id}/revenue/events', ['revenue:read'], 'read', false],
  ['revenue.sendEvents', 'POST', '/v1/projects/{project_id}/revenue/events', ['revenue:write'], 'write', false],
  ['revenue.sendSubscriptions', 'POST', '/v1/projects/{project_id}/revenue/subscriptions', ['revenue:write'], 'write', false],
  ['revenue.getSettings', 'GET', '/v1/projects/{project_id}/revenue/settings', ['revenue:read'], 'read', false],
  ['revenue.updateSettings', 'PUT', '/v1/projects/{project_id}/revenue/settings', ['revenue:write'], 'write', false],
  ['integrations.connectPayments', 'POST', '/v1/projects/{project_id}/provider-connections/payments', ['providers:write'], 'write', true],
  ['integrations.setPaymentsWebhookSecret', 'PUT', '/v1/projects/{project_id}/provider-connections/payments/webhook', ['providers:write'], 'write', true],
  ['agent.getSettings', 'GET', '/v1/projects/{project_id}/agent/settings', ['automations:read'], 'read', false],
  ['agent.updateSettings', 'PATCH', '/v1/projects/{project_id}/agent/settings', ['automations:write'], 'write', false],
  ['agent.listMemory', 'GET', '/v1/projects/{project_id}/agent/memory', ['automations:read'], 'read', false],
  ['agent.addMemory', 'POST', '/v1/projects/{project_id}/agent/memory', ['automations:write'], 'write', false],
  ['agent.retireMemory', 'DELETE', '/v1/projects/{project_id}/agent/memory/{memory_id}', ['automations:write'], 'write', true],
  ['agent.listSkills', 'GET', '/v1/projects/{project_id}/agent/skills', ['automations:read'], 'read', false],
  ['agent.upsertSkill', 'POST', '/v1/projects/{project_id}/agent/skills', ['automations:write'], 'write', true],
  ['agent.deleteSkill', 'DELETE', '/v1/projects/{project_id}/agent/skills/{skill_id}', ['automations:write'], 'write', true],
  ['agent.listConversations', 'GET', '/v1/projects/{project_id}/agent/conversations', ['automations:read'], 'read', false],
  ['agent.listSignals', 'GET', '/v1/projects/{project_id}/agent/signals', ['automations:read'], 'read', false],
  ['agent.getUsage', 'GET', '/v1/projects/{project_id}/agent/usage', ['automations:read'], 'read', false],
  ['automations.listTemplates', 'GET', '/v1/projects/{project_id}/automation-templates', ['automations:read'], 'read', false],
  ['automations.list', 'GET', '/v1/projects/{project_id}/automations', ['automations:read'], 'read', false],
  ['automations.create', 'POST', '/v1/projects/{project_id}/automations', ['automations:write'], 'write', false],
  ['automations.preview', 'POST', '/v1/projects/{project_id}/automations/preview', ['automations:read'], 'read', false],
  ['automations.get', 'GET', '/v1/projects/{project_id}/automations/{automation_id}', ['automations:read'], 'read', false],
  ['automations.update', 'PATCH', '/v1/projects/{project_id}/automations/{automation_id}', ['automations:write'], 'write', false],
  ['automations.delete', 'DELETE', '/v1/projects/{project_id}/automations/{automation_id}', ['automations:write'], 'write', false],
  ['automations.listSkills', 'GET', '/v1/projects/{project_id}/automation-skills', ['automations:read'], 'read', false],
  ['automations.upsertSkill', 'POST', '/v1/projects/{project_id}/automation-skills', ['automations:write'], 'write', false],
  ['automations.getSkill', 'GET', '/v1/projects/{project_id}/automation-skills/{skill_id}', ['automations:read'], 'read', false],
  ['automations.deleteSkill', 'DELETE', '/v1/projects/{project_id}/automation-skills/{skill_id}', ['automations:write'], 'write', false],
  ['automations.triggerRun', 'POST', '/v1/projects/{project_id}/automations/{automation_id}/runs', ['automations:write'], 'write', false],
  ['automations.listRuns', 'GET', '/v1/projects/{project_id}/automations/{automation_id}/runs', ['automations:read'], 'read', false],
  ['automations.getRun', 'GET', '/v1/projects/{project_id}/automation-runs/{run_id}', ['automations:read'], 'read', false],
  ['automations.cancelRun', 'POST', '/v1/projects/{project_id}/automation-runs/{run_id}/cancel', ['automations:write'], 'write', false],
  ['automations.listOutputs', 'GET', '/v1/projects/{project_id}/automation-runs/{run_id}/outputs', ['automations:read'], 'read', false],
  ['automations.listApprovals', 'GET', '/v1/projects/{project_id}/automation-runs/{run_id}/approvals', ['automations:read'], 'read', false],
  ['automations.approve', 'POST', '/v1/projects/{project_id}/automation-runs/{run_id}/approve', ['automations:write'], 'write', false],
  ['automations.reject', 'POST', '/v1/projects/{project_id}/automation-runs/{run_id}/reject', ['automations:write'], 'write', false],
  ['automations.createPr', 'POST', '/v1/projects/{project_id}/automation-runs/{run_id}/create-pr', ['automations:write'], 'write', false],
  ['automations.listCapabilities', 'GET', '/v1/projects/{project_id}/automation-capabilities', ['automations:read'], 'read', false],
  ['automations.defineCapability', 'POST', '/v1/projects/{project_id}/automation-capabilities', ['automations:write'], 'write', false],
  ['statusPages.list', 'GET', '/v1/projects/{project_id}/status-pages', ['read'], 'read', false],
  ['statusPages.create', 'POST', '/v1/projects/{project_id}/status-pages', ['write'], 'write', false],
  ['statusPages.get', 'GET', '/v1/projects/{project_id}/status-pages/{status_page_id}', ['read'], 'read', false],
  ['statusPages.update', 'PATCH', '/v1/projects/{project_id}/status-pages/{status_page_id}', ['write'], 'write', false],
  ['statusPages.delete', 'DELETE', '/v1/projects/{project_id}/status-pages/{status_page_id}', ['write'], 'write', false],
  ['statusPages.listComponents', 'GET', '/v1/projects/{project_id}/status-pages/{status_page_id}/components', ['read'], 'read', false],
  ['statusPages.createComponent', 'POST', '/v1/projects/{project_id}/status-pages/{status_page_id}/components', ['write'], 'write', false],
  ['statusPages.updateComponent', 'PATCH', '/v1/projects/{project_id}/status-pages/{status_page_id}/components/{component_id}', ['write'], 'write', false],
  ['statusPages.deleteComponent', 'DELETE', '/v1/projects/{project_id}/status-pages/{status_page_id}/components/{component_id}', ['write'], 'write', false],
  ['statusPages.linkMonitor', 'POST', '/v1/projects/{project_id}/status-pages/{status_page_id}/components/{component_id}/link-monitor', ['write'], 'write', false],
  ['statusPages.unlinkMonitor', 'POST', '/v1/projects/{project_id}/status-pages/{status_page_id}/components/{component_id}/unlink-monitor', ['write'], 'write', false],
  ['threads.list', 'GET', '/v1/projects/{project_id}/threads', ['read'], 'read', false],
  ['threads.create', 'POST', '/v1/projects/{project_id}/threads', ['write'], 'write', false],
  ['threads.search', 'GET', '/v1/projects/{project_id}/threads/search', ['read'], 'read', false],
  ['threads.get', 'GET', '/v1/projects/{project_id}/threads/{thread_id}', ['read'], 'read', false],
  ['threads.archive', 'POST', '/v1/projects/{project_id}/threads/{thread_id}/archive', ['write'], 'write', false],
  ['threads.unarchive', 'POST', '/v1/projects/{project_id}/threads/{thread_id}/unarchive', ['write'], 'write', false],
  ['threads.delete', 'DELETE', '/v1/projects/{project_id}/threads/{thread_id}', ['write'], 'write', false],
  ['threads.listMessages', 'GET', '/v1/projects/{project_id}/threads/{thread_id}/messages', ['read'], 'read', false],
  ['threads.appendMessage', 'POST', '/v1/projects/{project_id}/threads/{thread_id}/messages', ['write'], 'write', false],
  ['threads.ask', 'POST', '/v1/projects/{project_id}/ask', ['write'], 'write', false],
  ['threads.askStream', 'POST', '/v1/projects/{project_id}/ask/stream', ['write'], 'write', false],
  ['remoteAccess.listTargets', 'GET', '/v1/projects/{project_id}/remote-access/targets', ['remote_access:read'], 'read', false],
  ['remoteAccess.previewRequest', 'POST', '/v1/projects/{project_id}/remote-access/requests/preview', ['remote_access:request'], 'read', false],
  ['remoteAccess.createRequest', 'POST', '/v1/projects/{project_id}/remote-access/requests', ['remote_access:request'], 'write', false],
  ['remoteAccess.getRequest', 'GET', '/v1/projects/{project_id}/remote-access/requests/{request_id}', ['remote_access:request'], 'read', false],
  ['remoteAccess.cancelRequest', 'POST', '/v1/projects/{project_id}/remote-access/requests/{request_id}/cancel', ['remote_access:request'], 'write', false],
  ['remoteAccess.listApprovals', 'GET', '/v1/projects/{project_id}/remote-access/approvals', [], 'read', false], // authenticated user
  ['remoteAccess.listExecutions', 'GET', '/v1/projects/{project_id}/remote-access/executions', ['remote_access:read'], 'read', false],
  ['remoteAccess.listAudit', 'GET', '/v1/projects/{project_id}/remote-access/audit', ['remote_access:read'], 'read', false],
  ['remoteAccess.listSetupTargets', 'GET', '/v1/projects/{project_id}/remote-access/setup-targets', ['remote_access:manage'], 'read', true],
  ['remoteAccess.createTarget', 'POST', '/v1/projects/{project_id}/remote-access/targets', ['remote_access:manage'], 'write', true],
  ['remoteAccess.requestVerification', 'POST', '/v1/projects/{project_id}/remote-access/targets/{target_id}/verification-requests', ['remote_access:manage'], 'write', true],
  ['remoteAccess.revealVerificationBootstrap', 'POST', '/v1/projects/{project_id}/remote-access/targets/{target_id}/verification-bootstrap/reveal', ['remote_access:manage'], 'write', true],
  ['remoteAccess.revealAuthorityBundle', 'POST', '/v1/projects/{project_id}/remote-access/targets/{target_id}/authority-bundle/reveal', ['remote_access:manage'], 'write', true],
  ['remoteAccess.getPolicy', 'GET', '/v1/projects/{project_id}/remote-access/targets/{target_id}/policy', ['remote_access:manage'], 'read', true],
  ['remoteAccess.appendPolicyRevision', 'POST', '/v1/projects/{project_id}/remote-access/targets/{target_id}/policy', ['remote_access:manage'], 'write', true],
  ['remoteAccess.validatePolicy', 'POST', '/v1/projects/{project_id}/remote-access/policies/validate', ['remote_access:manage'], 'read', true],
  ['remoteAccess.listConnectors', 'GET', '/v1/projects/{project_id}/remote-access/connectors', ['remote_access:manage'], 'read', true],
  ['remoteAccess.createConnector', 'POST', '/v1/projects/{project_id}/remote-access/connectors', ['remote_access:manage'], 'write', true],
  ['remoteAccess.getConnector', 'GET', '/v1/projects/{project_id}/remote-access/connectors/{connector_id}', ['remote_access:manage'], 'read', true],
  ['remoteAccess.rotateConnector', 'POST', '/v1/projects/{project_id}/remote-access/connectors/{connector_id}/rotate', ['remote_access:manage'], 'write', true],
  ['remoteAccess.revokeConnector', 'POST', '/v1/projects/{project_id}/remote-access/connectors/{connector_id}/revoke', ['remote_access:manage'], 'write', true],];

/** Operations added beyond the canonical table, same columns. */
const EXTRA_ROWS: Row[] = [
  ['system.status', 'GET', '/v1/projects/{project_id}/system/status', ['project:write'], 'read', false], // run for months: owners read the server's own figures
  ['retention.get', 'GET', '/v1/projects/{project_id}/retention', ['read'], 'read', false], // run for months: retention per kind
  ['retention.update', 'PUT', '/v1/projects/{project_id}/retention', ['project:write'], 'write', false], // set by owners
  // Monitors and incidents (issue 17): the spec links status-page components to monitors by id or name.
  ['monitors.list', 'GET', '/v1/projects/{project_id}/monitors', ['read'], 'read', false],
  ['monitors.get', 'GET', '/v1/projects/{project_id}/monitors/{monitor_id}', ['read'], 'read', false],
  ['monitors.create', 'POST', '/v1/projects/{project_id}/monitors', ['write'], 'write', false],
  ['monitors.update', 'PATCH', '/v1/projects/{project_id}/monitors/{monitor_id}', ['write'], 'write', false],
  ['monitors.delete', 'DELETE', '/v1/projects/{project_id}/monitors/{monitor_id}', ['write'], 'write', false],
  ['monitors.listResults', 'GET', '/v1/projects/{project_id}/monitors/{monitor_id}/results', ['read'], 'read', false],
  ['incidents.list', 'GET', '/v1/projects/{project_id}/incidents', ['read'], 'read', false],
  ['incidents.get', 'GET', '/v1/projects/{project_id}/incidents/{incident_id}', ['read'], 'read', false],
  ['incidents.create', 'POST', '/v1/projects/{project_id}/incidents', ['write'], 'write', false],
  ['incidents.update', 'PATCH', '/v1/projects/{project_id}/incidents/{incident_id}', ['write'], 'write', false],
  ['ai.getSettings', 'GET', '/v1/projects/{project_id}/ai/settings', ['read'], 'read', false],
  ['ai.updateSettings', 'PATCH', '/v1/projects/{project_id}/ai/settings', ['project:write'], 'write', false],
  ['analytics.enable', 'POST', '/v1/projects/{project_id}/analytics/enable', ['project:write'], 'write', true], // owners/admins turn product analytics on
  // Agent channels (issue 15): where alerts and replies go (`alert_channel_id`); owners configure them.
  ['agent.listChannels', 'GET', '/v1/projects/{project_id}/agent/channels', ['project:write'], 'read', false],
  ['agent.createChannel', 'POST', '/v1/projects/{project_id}/agent/channels', ['project:write'], 'write', true], // answers the signing secret
  ['agent.deleteChannel', 'DELETE', '/v1/projects/{project_id}/agent/channels/{channel_id}', ['project:write'], 'write', true],
  ['agent.listDeliveries', 'GET', '/v1/projects/{project_id}/agent/deliveries', ['project:write'], 'read', false],
  // People (issue 11): whom an agent is and whom it can assign an error to.
  ['users.me', 'GET', '/v1/users/me', [], 'read', false], // any valid credential: who it is
  ['projects.listMembers', 'GET', '/v1/projects/{project_id}/members', [], 'read', false], // a member's own token, or a key with project:write (checked in the handler)
  ['remoteAccess.updatePreview', 'PUT', '/v1/projects/{project_id}/remote-access/preview', ['project:write'], 'write', true], // issue 18: the owner-only gate of the preview
];

/** Operations whose specification rejects unknown body fields: their input must be a strict object. */
const STRICT_BODY = new Set([
  'feedback.create', // "unknown top-level fields are rejected"
  'deployments.create', // "body per Deployment record (no additional fields)"
  'errors.update', // "body (no additional fields)"
  'agent.updateSettings', // "unknown field returns 400"
  'remoteAccess.previewRequest', // typed request: "rejected before any state change for unknown fields"
  'remoteAccess.createRequest',
  'remoteAccess.createTarget', // "body only label, environment, connector id, ..."
  'remoteAccess.revealVerificationBootstrap', // "strict body acknowledge_sensitive_data true"
  'remoteAccess.revealAuthorityBundle',
]);

const TABLE = new Map([...PINNED, ...EXTRA_ROWS].map((r) => [r[0], r] as const));
const ops: [string, AnyOperation][] = catalogue.map((op) => [op.operationId, op]);

describe('the pinned operation table', () => {
  it('holds every canonical operation once', () => {
    expect(PINNED.length).toBe(140);
    expect(TABLE.size).toBe(PINNED.length + EXTRA_ROWS.length);
  });

  it('lists every operation of the catalogue', () => {
    const missing = catalogue.map((op) => op.operationId).filter((id) => !TABLE.has(id));
    expect(missing).toEqual([]);
  });
});

describe.each(ops)('%s', (id, op) => {
  it('has an id of the form <tag>.<verb> whose tag is its file in operations/', () => {
    expect(id).toMatch(/^[a-z][a-zA-Z]*\.[a-z][a-zA-Z]*$/);
    const [tag] = id.split('.');
    expect(op.tag).toBe(tag);
    expect(Object.values(tagModules[op.tag] ?? {})).toContain(op);
    expect(existsSync(new URL(`../operations/${op.tag}.ts`, import.meta.url))).toBe(true);
  });

  it('matches its pinned method, path, scopes, risk and MCP visibility', () => {
    const row = TABLE.get(id);
    expect(row, `${id} is not in the pinned table`).toBeDefined();
    const [, method, path, scopes, risk, hidden] = row!;
    expect({ method: op.method, path: op.path, scopes: [...op.scopes].sort(), risk: op.risk, sensitive: op.sensitive }).toEqual({
      method,
      path,
      scopes: [...scopes].sort(),
      risk,
      sensitive: hidden,
    });
  });

  it('needs only known scopes', () => {
    for (const s of op.scopes) expect(isKnownScope(s), s).toBe(true);
  });

  it('is project-scoped unless it is projects.list, projects.get or users.me', () => {
    expect(op.projectScoped).toBe(id !== 'projects.list' && id !== 'projects.get' && id !== 'users.me');
    if (op.path.startsWith('/v1/projects/{project_id}')) expect(Object.keys(op.input.shape)).toContain('project_id');
  });

  it('takes one flat object as input that names every path parameter', () => {
    expect((op.input as unknown as { def: { type: string } }).def.type).toBe('object');
    const shape = Object.keys(op.input.shape);
    for (const p of pathParams(op.path)) expect(shape, `path parameter ${p}`).toContain(p);
    expect(op.path.startsWith('/v1/')).toBe(true);
  });

  it('has a summary and a description', () => {
    expect(op.summary.trim()).not.toBe('');
    expect(op.description.trim()).not.toBe('');
  });

  it('declares its errors with a status and a code', () => {
    for (const e of op.errors) {
      expect(Number.isInteger(e.status) && e.status >= 400 && e.status < 600, JSON.stringify(e)).toBe(true);
      expect(e.code, JSON.stringify(e)).toMatch(/^[A-Za-z_]+$/);
      expect(e.when.trim()).not.toBe('');
    }
  });

});

describe('the catalogue', () => {
  it('has unique operation ids and unique method + path pairs', () => {
    const ids = catalogue.map((op) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const routes = catalogue.map((op) => `${op.method} ${op.path}`);
    expect(new Set(routes).size).toBe(routes.length);
  });

  it('marks every GET operation as a read', () => {
    const gets = catalogue.filter((op) => op.method === 'GET');
    expect(gets.length).toBeGreaterThan(0);
    expect(gets.filter((op) => op.risk !== 'read').map((op) => op.operationId)).toEqual([]);
  });

  it('uses a strict input object where the specification rejects unknown body fields', () => {
    const present = catalogue.filter((op) => STRICT_BODY.has(op.operationId));
    expect(present.length).toBeGreaterThan(0);
    for (const op of present) {
      expect(['POST', 'PUT', 'PATCH'], op.operationId).toContain(op.method);
      expect(isStrictObject(op.input), op.operationId).toBe(true);
    }
  });

  it('derives tags from the tag files only', () => {
    for (const [tag, mod] of Object.entries(tagModules)) {
      for (const v of Object.values(mod)) {
        if (v && typeof v === 'object' && 'operationId' in v) expect((v as AnyOperation).tag).toBe(tag);
      }
    }
  });
});

describe('time windows in descriptions (issue 11, item 6)', () => {
  const windowed = catalogue.filter((op) => 'from' in op.input.shape || 'to' in op.input.shape);
  it.each(windowed.map((op) => [op.operationId, op] as const))('%s says from/to take relative times and states its window cap', (_id, op) => {
    expect(op.description).toMatch(/relative/);
    expect(op.description).toMatch(/-1h/);
    expect(op.description).toMatch(/at most|no window limit|no length limit/i);
  });
});
