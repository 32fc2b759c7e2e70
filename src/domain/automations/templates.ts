/**
 * Why this file: what automations can do on day one. Built-in capability manifests (the operations a
 * run may call, their risk, whether risky outputs wait for approval) and the templates that use them.
 */
import type { AutomationConfig } from './config.js';

export interface CapabilityManifest {
  name: string;
  description: string;
  operations: string[];
  risk: 'read' | 'write';
  approval: 'required' | 'not_required';
  builtin: boolean;
}

export const BUILTIN_CAPABILITIES: CapabilityManifest[] = [
  {
    name: 'triage',
    description: 'Read error groups and record automatic triage runs on them (the triage run is the only write; no approval needed).',
    operations: ['errors.list', 'errors.get', 'errors.listTriageRuns', 'errors.createTriage', 'errors.listSuspectCommits'],
    risk: 'write',
    approval: 'not_required',
    builtin: true,
  },
  {
    name: 'digest',
    description: 'Read errors, releases, feedback and monitors to write summaries; messages to channels wait for approval.',
    operations: ['errors.list', 'errors.get', 'releases.list', 'releases.get', 'feedback.list', 'feedback.get', 'monitors.list', 'incidents.list', 'observability.summary'],
    risk: 'read',
    approval: 'required',
    builtin: true,
  },
  {
    name: 'error-cleanup',
    description: 'Read error groups and propose status or priority changes; every change waits for approval.',
    operations: ['errors.list', 'errors.get', 'errors.update'],
    risk: 'write',
    approval: 'required',
    builtin: true,
  },
  {
    name: 'read-only',
    description: 'Read errors, traces, logs, releases and feedback; no writes.',
    operations: ['errors.list', 'errors.get', 'errors.listRelatedTraces', 'errors.listSuspectCommits', 'traces.list', 'traces.get', 'logs.search', 'releases.list', 'releases.get', 'feedback.list', 'events.search'],
    risk: 'read',
    approval: 'required',
    builtin: true,
  },
];

export interface Template {
  id: string;
  name: string;
  description: string;
  config: AutomationConfig;
}

const limits = { timeout_ms: 30_000, max_calls: 100 };
const base = { conditions: {}, repository: null, limits } as const;

export const TEMPLATES: Template[] = [
  {
    id: 'triage-new-errors',
    name: 'Triage every new error group',
    description: 'On each new error group, runs the built-in triager (an automatic run in errors.listTriageRuns) and records its verdict.',
    config: {
      ...base,
      trigger: { type: 'event', event: 'error.group.created' },
      capability: 'triage',
      params: {},
      steps: [
        {
          type: 'script',
          name: 'triage',
          code: `const g = input.event;
const run = await api.errors.createTriage({ error_group_id: g.group_id });
return { verdict: run.result, summary: 'Triaged ' + g.short_id + ' (' + g.title + '): ' + (run.result ? run.result.summary : run.status) };`,
        },
      ],
    },
  },
  {
    id: 'weekly-error-digest',
    name: 'Weekly error digest to a channel',
    description: 'Every Monday 09:00 (UTC unless overridden), the most frequent unresolved error groups of the last 7 days, posted to `params.channel_id` after approval.',
    config: {
      ...base,
      trigger: { type: 'schedule', cron: '0 9 * * 1', timezone: 'UTC' },
      capability: 'digest',
      params: { channel_id: null },
      steps: [
        {
          type: 'script',
          name: 'digest',
          code: `const from = new Date(Date.parse(input.now) - 7 * 86400000).toISOString();
const r = await api.errors.list({ status: 'unresolved', sort: 'event_count', limit: 10, from });
const lines = r.data.map((g) => '- ' + g.short_id + ' ' + g.title + ' (' + g.event_count + ' events)');
const text = lines.length ? lines.join('\\n') : 'No unresolved errors this week.';
const out = { summary: 'Weekly digest: ' + r.data.length + ' groups\\n' + text };
if (input.params.channel_id) out.message = { channel_id: input.params.channel_id, title: 'Weekly error digest', text };
return out;`,
        },
      ],
    },
  },
  {
    id: 'release-regression-watch',
    name: 'Release regression watch',
    description: 'When a release turns `regressed`, summarizes why and the errors new in it; posts to `params.channel_id` after approval.',
    config: {
      ...base,
      trigger: { type: 'event', event: 'release.regressed' },
      capability: 'digest',
      params: { channel_id: null },
      steps: [
        {
          type: 'script',
          name: 'summarize',
          code: `const e = input.event;
const text = 'Release ' + e.version + ' of ' + e.service + ' (' + e.environment + ') regressed: ' + (e.reasons || []).join('; ');
const out = { summary: text };
if (input.params.channel_id) out.message = { channel_id: input.params.channel_id, title: 'Release regressed', text };
return out;`,
        },
      ],
    },
  },
  {
    id: 'feedback-summary',
    name: 'Daily feedback summary',
    description: 'Every day at 17:00, summarizes the user feedback of the last 24 hours.',
    config: {
      ...base,
      trigger: { type: 'schedule', cron: '0 17 * * *', timezone: 'UTC' },
      capability: 'digest',
      params: { channel_id: null },
      steps: [
        {
          type: 'script',
          name: 'summarize',
          code: `const r = await api.feedback.list({ limit: 50 });
const since = Date.parse(input.now) - 86400000;
const items = (r.data || []).filter((f) => Date.parse(f.created_at) >= since);
const text = items.length ? items.map((f) => '- ' + String(f.message).slice(0, 200)).join('\\n') : 'No feedback in the last 24 hours.';
const out = { summary: items.length + ' feedback item(s)\\n' + text };
if (input.params.channel_id) out.message = { channel_id: input.params.channel_id, title: 'Feedback of the day', text };
return out;`,
        },
      ],
    },
  },
  {
    id: 'noisy-alert-cleanup',
    name: 'Noisy-alert cleanup proposal',
    description: 'Every Friday, proposes muting low-priority unresolved groups with many events; each mute is a write output that waits for approval.',
    config: {
      ...base,
      trigger: { type: 'schedule', cron: '0 15 * * 5', timezone: 'UTC' },
      capability: 'error-cleanup',
      params: { min_events: 100 },
      steps: [
        {
          type: 'script',
          name: 'propose',
          code: `const r = await api.errors.list({ status: 'unresolved', sort: 'event_count', limit: 50 });
const noisy = r.data.filter((g) => g.event_count >= (input.params.min_events || 100) && (g.priority === 'low' || g.priority === 'medium'));
for (const g of noisy) await api.errors.update({ error_group_id: g.id, status: 'muted' });
return { summary: 'Proposed muting ' + noisy.length + ' noisy group(s): ' + noisy.map((g) => g.short_id).join(', ') };`,
        },
      ],
    },
  },
];
