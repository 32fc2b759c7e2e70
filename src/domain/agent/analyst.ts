/**
 * The built-in deterministic analyst: answers when no model is configured (offline, in tests). It
 * reads the project through the same Code Mode `execute` path a model would use, with a fixed
 * script, so every read is a real `invoke` call with the agent's limited principal; then it writes
 * a short report (summary, top and new error groups, slow operations, latest deployments). Which
 * sections appear follows the question's words; a question naming none gets all of them.
 */

/** Runs one `execute` script as the agent and returns its result (null when it failed). */
export type RunScript = (code: string) => Promise<{ result: unknown; error: { message: string } | null }>;

type Section = 'summary' | 'errors' | 'new_errors' | 'slow' | 'deployments';

const SECTION_WORDS: Record<Section, RegExp> = {
  summary: /\b(summary|overview|status|health|how (is|are)|going on|logs?)\b/i,
  errors: /\b(errors?|exceptions?|issues?|crash\w*|failing|bugs?|top)\b/i,
  new_errors: /\b(new|recent|latest|regress\w*|since)\b/i,
  slow: /\b(slow\w*|latenc\w*|p95|performance|operations?|endpoints?|traces?)\b/i,
  deployments: /\b(deploy\w*|release\w*|ship\w*|version)\b/i,
};

export function sectionsFor(question: string): Section[] {
  const picked = (Object.keys(SECTION_WORDS) as Section[]).filter((s) => SECTION_WORDS[s].test(question));
  return picked.length ? picked : ['summary', 'errors', 'new_errors', 'slow', 'deployments'];
}

/** The fixed script: each read in its own try so one missing scope or empty store does not sink the rest. */
export function analystScript(sections: Section[], dayAgoIso: string): string {
  const reads: string[] = [];
  if (sections.includes('summary')) reads.push(`out.summary = await read(() => api.observability.summary({ log_limit: 3, metric_limit: 1 }));`);
  if (sections.includes('errors')) reads.push(`out.errors = await read(() => api.errors.list({ status: 'unresolved', sort: 'event_count', limit: 5 }));`);
  if (sections.includes('new_errors')) reads.push(`out.new_errors = await read(() => api.errors.list({ status: 'all', sort: 'first_seen', limit: 5, from: ${JSON.stringify(dayAgoIso)} }));`);
  if (sections.includes('slow')) reads.push(`out.slow = await read(() => api.traces.operations({ sort: 'p95', limit: 5 }));`);
  if (sections.includes('deployments')) reads.push(`out.deployments = await read(() => api.deployments.list({ limit: 3 }));`);
  return [
    'const out = {};',
    'async function read(f) { try { return { ok: true, value: await f() }; } catch (e) { return { ok: false, error: String(e && e.message || e) }; } }',
    ...reads,
    'return out;',
  ].join('\n');
}

/* eslint-disable @typescript-eslint/no-explicit-any */
type Read = { ok: true; value: any } | { ok: false; error: string } | undefined;

function failed(r: Read): string | null {
  return r && !r.ok ? `could not read it (${r.error.slice(0, 160)})` : null;
}

/** One paragraph: a bold title, then a sentence or a list. */
function para(title: string, body: string | string[], empty: string): string {
  if (typeof body === 'string') return `**${title}**: ${body}`;
  return body.length ? `**${title}**:\n${body.map((l) => `- ${l}`).join('\n')}` : `**${title}**: ${empty}`;
}

/** The report, one paragraph per section, in the order sections were asked for. */
export function formatReport(sections: Section[], out: Record<string, Read>, dayAgoMs: number): string[] {
  const parts: string[] = [];
  for (const s of sections) {
    const r = out[s];
    const err = failed(r);
    const rows = (): any[] => (r?.ok ? (r.value.data ?? []) : []);
    if (s === 'summary') {
      const hl: string[] = r?.ok ? (r.value.highlights ?? []) : [];
      parts.push(para('Summary (last 24 hours)', err ?? (hl.length ? hl.slice(0, 4).join(' ') : 'no telemetry in the window.'), ''));
    } else if (s === 'errors') {
      parts.push(para('Top unresolved error groups', err ?? rows().map((g) => `${g.short_id} ${g.title} (${g.event_count} events, last seen ${g.last_seen})`), 'none.'));
    } else if (s === 'new_errors') {
      const fresh = rows().filter((g) => Date.parse(g.first_seen) >= dayAgoMs);
      parts.push(para('New error groups (first seen in the last 24 hours)', err ?? fresh.map((g) => `${g.short_id} ${g.title} (first seen ${g.first_seen})`), 'none.'));
    } else if (s === 'slow') {
      parts.push(
        para(
          'Slowest operations (p95, last 24 hours)',
          err ?? rows().map((o) => `${o.service_name} ${o.operation}: p95 ${o.p95_ms ?? '?'} ms over ${o.trace_count} requests, ${(o.error_rate * 100).toFixed(1)}% errors`),
          'no traces in the window.',
        ),
      );
    } else if (s === 'deployments') {
      parts.push(
        para(
          'Latest deployments',
          err ?? rows().map((d) => `${d.service ?? 'service'} ${d.version ?? d.deployment_id} to ${d.environment ?? 'unknown environment'}: ${d.status} (${d.started_at ?? d.created_at})`),
          'none recorded.',
        ),
      );
    }
  }
  return parts;
}

export async function runAnalyst(question: string, now: number, runScript: RunScript): Promise<string[]> {
  const sections = sectionsFor(question);
  const dayAgo = now - 24 * 3600_000;
  const r = await runScript(analystScript(sections, new Date(dayAgo).toISOString()));
  if (r.error || !r.result || typeof r.result !== 'object') return [`I could not read the project's data just now (${r.error?.message.slice(0, 200) ?? 'no result'}).`];
  return ['From the project\'s data (built-in analyst):', ...formatReport(sections, r.result as Record<string, Read>, dayAgo)];
}
