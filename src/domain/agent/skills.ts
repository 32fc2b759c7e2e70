/**
 * Why this file: skills are named instructions the agent loads when a task matches their
 * description (spec, Skill). Projects and organizations write their own; the platform skills below
 * ship with Sightline, are used by the agent's investigations (src/core/agent-signals.ts picks one
 * per signal) and reach the runner through `AgentState.context()`. Their names are reserved: an
 * upsert with one answers 409.
 */

export const SKILL_NAME_RE = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const SKILL_LIMITS = { name: 64, description: 1024, content: 12_000 } as const;

export interface PlatformSkill {
  name: string;
  description: string;
  content: string;
}

const CODE_MODE = `You work through two tools. \`search\` finds operations of the Sightline API by a question
("which operation lists error events?") and returns their TypeScript signatures. \`execute\` runs a
short JavaScript async function with \`api\` bound to this project, e.g.
  async () => { const g = await api.errors.get({ error_group_id: '…' }); return g.title; }
Return only the fields you need: outputs are truncated. Never invent ids: read them from results.`;

export const PLATFORM_SKILLS: PlatformSkill[] = [
  {
    name: 'triage-new-issue',
    description: 'Use when a new error group appears or a resolved one reopens: decide how bad it is, what caused it and who should look.',
    content: `${CODE_MODE}

Steps:
1. \`api.errors.get\` the group: title, culprit, level, first/last seen, event count, environment.
2. \`api.events.search\` for its latest events (limit 5): stack frames, release, tags, user counts.
3. If an event has a trace_id, \`api.traces.get\` it and find the failing span.
4. \`api.releases.list\` for the service and environment: did the first event follow a new release?
   If so \`api.errors.listSuspectCommits\` for the group.
5. Answer in at most 8 lines: what broke (one sentence), since when and how often, the suspected
   cause with evidence (frame, release, commit), the impact (users, environment), and one next step.
   Say "unknown" rather than guess. Do not change the group's status.`,
  },
  {
    name: 'release-regression',
    description: 'Use when a release is reported regressed (error rate or p95 latency worse than the previous release): find what changed and whether to roll back.',
    content: `${CODE_MODE}

Steps:
1. \`api.releases.get\` the release: \`health.comparison\`, \`decided_by\`, the current and previous
   figures, commits and deployments.
2. \`api.errors.list\` with the release's environment sorted by first seen in the release window:
   groups new since the release started are the first suspects.
3. For latency regressions, \`api.traces.search\` the slowest spans of the service in the window and
   compare operation names with the previous window.
4. Answer: the verdict with its numbers (before → after), the two or three most likely causes with
   links to groups or traces, the commits that touch them, and a recommendation (roll back, watch,
   or fix forward). Never roll back or deploy yourself.`,
  },
  {
    name: 'explain-trace',
    description: 'Use when asked why a request was slow or failed, given a trace id or an error with a trace: walk the spans and explain.',
    content: `${CODE_MODE}

Steps:
1. \`api.traces.get\` the trace: spans with durations, statuses and parents.
2. Find the critical path: the chain of child spans covering most of the root's duration.
3. Name the slowest or failing span with its service, operation and attributes (db statement,
   http url, status code); link the error group if an error event carries this trace id
   (\`api.events.search\` with \`trace_id\`).
4. Explain in plain words where the time went (percentages of the root span) and what to change.`,
  },
  {
    name: 'monitor-down',
    description: 'Use when an uptime or cron monitor goes down or an incident opens: check what the monitor saw and what else broke at the same time.',
    content: `${CODE_MODE}

Steps:
1. \`api.monitors.get\` the monitor and \`api.monitors.listResults\` (latest 10): status codes, errors, latency.
2. \`api.errors.list\` for groups seen in the last 30 minutes and \`api.logs.search\` for errors around
   the first failed check.
3. \`api.deployments.list\`: was there a deployment just before?
4. Answer: since when it is down, the failure as the monitor saw it, correlated errors or
   deployments, and the first thing to check. Do not resolve the incident yourself.`,
  },
];

export const PLATFORM_SKILL_NAMES = new Set(PLATFORM_SKILLS.map((s) => s.name));

export function platformSkill(name: string): PlatformSkill | undefined {
  return PLATFORM_SKILLS.find((s) => s.name === name);
}
