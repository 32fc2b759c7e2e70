/**
 * MCP `search`: rank the catalogue for a natural-language or keyword query.
 *
 * BM25F over each operation's fields (operationId tag and verb, summary, description, parameter
 * names and enum values, parameter descriptions), with light stemming and a small synonym table for
 * the words developers use ("bug" → errors, "ship" → deployments, "span" → traces, "slow" →
 * latency, "user report" → feedback, "show" → list, "mark" → update, ...). Sensitive operations
 * are never indexed, so they can never be found.
 */
import type { AnyOperation } from '../../operations/define.js';
import { toJsonSchema, type JsonSchema } from '../core/json-schema.js';

// ---------------------------------------------------------------------------------------------
// Text → terms

const STOP = new Set(
  'a an the of to for in on at and or with by is are be been was were am i me my mine we our us you your it its this that these those there here from into as do does did can could would should will shall please want need like just some any each every what which who whom whose how when where why about via per than then so if not no but also only have has had get'
    .split(' ')
    .filter((w) => w !== 'get'),
);

/** Porter-lite: enough to make "errors/error", "deployed/deploy/deployments", "created/create" meet. */
const STEM_EXCEPTIONS: Record<string, string> = { settings: 'setting', setting: 'setting', news: 'news', series: 'series' };

export function stem(word: string): string {
  let w = word.toLowerCase();
  if (STEM_EXCEPTIONS[w]) return STEM_EXCEPTIONS[w]!;
  if (w.length <= 3) return w;
  if (w.endsWith('ies') && w.length > 4) w = w.slice(0, -3) + 'y';
  else if (w.endsWith('sses')) w = w.slice(0, -2);
  else if (/(ches|shes|xes|zes)$/.test(w)) w = w.slice(0, -2);
  else if (w.endsWith('s') && !/(ss|us|is)$/.test(w)) w = w.slice(0, -1);
  if (w.endsWith('ing') && w.length >= 6) w = w.slice(0, -3);
  else if (w.endsWith('ed') && w.length >= 5) w = w.slice(0, -2);
  if (w.endsWith('ment') && w.length >= 9) w = w.slice(0, -4);
  if (w.endsWith('e') && w.length >= 4) w = w.slice(0, -1);
  // deploying → deploy, deployed → deploy; "shipped" → "shipp" → "ship"
  if (/([bdfgmnprt])\1$/.test(w) && w.length >= 4) w = w.slice(0, -1);
  return w;
}

/** An identifier as one token: `event_count`, `serviceMap` → `eventcount`, `servicemap`. */
export function joined(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '');
}

/** Words of a text: camelCase and snake_case split, lower-cased, stop words dropped, stemmed. */
export function terms(text: string): string[] {
  const words = text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w && !STOP.has(w));
  return words.map(stem);
}

/**
 * Related words: a query word also looks for these (at a lower weight). Written as groups of
 * words that mean the same thing to a developer; the first word of a group is the catalogue's.
 */
const SYNONYM_GROUPS: string[][] = [
  // nouns of the catalogue
  ['error', 'bug', 'exception', 'crash', 'issue', 'problem', 'fault', 'failure', 'broken', 'stacktrace', 'traceback', 'incident', 'sentry'],
  ['group', 'issue', 'bucket', 'cluster'],
  ['event', 'occurrence', 'instance', 'sample', 'hit'],
  ['deployment', 'deploy', 'ship', 'rollout', 'release', 'ci', 'cd', 'pipeline', 'build', 'version', 'shipped'],
  ['release', 'version', 'deploy', 'deployment', 'build'],
  ['trace', 'span', 'tracing', 'distributed', 'waterfall', 'apm', 'request', 'otel', 'opentelemetry'],
  ['log', 'logs', 'logging', 'line', 'syslog', 'stdout', 'stderr', 'printed'],
  ['metric', 'gauge', 'counter', 'timeseries', 'measurement', 'measure', 'stat', 'statistic', 'kpi', 'series'],
  ['latency', 'slow', 'slowness', 'duration', 'delay', 'lag', 'p50', 'p95', 'p99', 'percentile', 'performance', 'perf', 'took', 'long', 'late'],
  ['feedback', 'complaint', 'comment', 'survey', 'nps', 'widget', 'report', 'suggestion', 'said', 'saying', 'wrote', 'review'],
  ['user', 'customer', 'visitor', 'person', 'people', 'end', 'contact', 'reporter'],
  ['key', 'apikey', 'token', 'credential', 'secret'],
  ['project', 'app', 'application', 'workspace', 'tenant'],
  ['spike', 'surge', 'flood', 'burst', 'storm', 'throttle', 'quota', 'cap', 'threshold', 'protection', 'limit'],
  ['summary', 'overview', 'health', 'dashboard', 'glance', 'snapshot', 'state', 'status', 'doing', 'now'],
  ['service', 'dependency', 'topology', 'upstream', 'downstream', 'graph', 'architecture', 'map', 'microservice'],
  ['commit', 'suspect', 'blame', 'culprit', 'cause', 'caused', 'regression', 'introduced', 'change', 'sha', 'git'],
  ['triage', 'analyze', 'analysis', 'diagnose', 'investigate', 'root', 'ai', 'probable', 'explain'],
  ['histogram', 'distribution', 'volume', 'bucket', 'chart', 'graph', 'trend'],
  ['insight', 'pattern', 'breakdown', 'dimension', 'common', 'frequent', 'cluster', 'group'],
  ['timeline', 'trend', 'timeseries', 'chart', 'graph', 'plot', 'history'],
  ['operation', 'endpoint', 'route', 'transaction', 'handler', 'url'],
  ['inspect', 'metadata', 'attribute', 'label', 'tag', 'detail', 'describe', 'schema'],
  ['environment', 'env', 'production', 'prod', 'staging', 'dev'],
  ['ingestion', 'ingest', 'arrive', 'arrival', 'received', 'receive', 'pipeline', 'delay'],
  ['duplicate', 'dupe', 'dedupe', 'same', 'identical'],
  ['sort', 'top', 'most', 'highest', 'biggest', 'worst', 'rank', 'ranked', 'order', 'slowest', 'noisiest'],
  // verbs of the catalogue
  ['list', 'show', 'find', 'browse', 'view', 'see', 'display', 'recent', 'latest', 'all', 'fetch', 'enumerate', 'which', 'newest', 'last', 'read', 'check', 'look', 'give'],
  ['get', 'detail', 'details', 'one', 'single', 'specific', 'open', 'fetch', 'read', 'particular', 'full', 'inspect'],
  ['search', 'query', 'find', 'filter', 'grep', 'lookup', 'match', 'matching', 'contain', 'containing', 'mention', 'mentioning'],
  ['create', 'add', 'new', 'record', 'submit', 'send', 'post', 'register', 'capture', 'file', 'track', 'notify', 'save', 'store', 'mark', 'report'],
  ['update', 'change', 'set', 'edit', 'modify', 'mark', 'resolve', 'archive', 'close', 'ignore', 'mute', 'assign', 'reopen', 'acknowledge', 'move', 'bookmark', 'subscribe', 'prioritize', 'turn', 'enable', 'disable', 'configure', 'adjust'],
  ['merge', 'combine', 'dedupe', 'consolidate', 'join', 'fold', 'duplicate'],
  ['unmerge', 'split', 'separate', 'undo', 'detach', 'unlink'],
];

const SYNONYMS: Map<string, Map<string, number>> = (() => {
  const m = new Map<string, Map<string, number>>();
  for (const group of SYNONYM_GROUPS) {
    const stems = group.map(stem);
    for (const a of stems) {
      const row = m.get(a) ?? new Map<string, number>();
      for (const b of stems) if (b !== a) row.set(b, Math.max(row.get(b) ?? 0, b === stems[0] ? 0.7 : 0.35));
      m.set(a, row);
    }
  }
  return m;
})();

/** Phrases that mean one thing ("user report" is feedback, "api key" names keys, not the API). */
const PHRASES: Array<[RegExp, string, 'replace'?]> = [
  [/\buser (report|reports|complaint|complaints|comment|comments)\b/g, 'feedback'],
  [/\bbug reports?\b/g, 'feedback'],
  [/\bapi keys?\b/g, 'key'],
  [/\bservice map\b/g, 'servicemap'],
  // "stack trace" is about an error, not about (distributed) traces.
  [/\bstack ?traces?\b/g, 'stacktrace error', 'replace'],
  [/\broot cause\b/g, 'triage cause'],
  [/\bresponse times?\b/g, 'latency'],
  [/\bover time\b/g, 'timeline histogram'],
  [/\bgo(es)? (live|out)\b/g, 'deploy'],
  [/\brate limit(ing|s)?\b/g, 'spike'],
];

export interface QueryTerm {
  term: string;
  weight: number;
  /** The query word (or word pair) this term stands for: each group counts once, by its best match. */
  group: string;
}

/** Query text → weighted terms (its own words at 1, related words lower), grouped by query word. */
export function queryTerms(query: string): QueryTerm[] {
  let q = query.toLowerCase();
  for (const [re, rep, mode] of PHRASES) q = q.replace(re, (m) => (mode === 'replace' ? rep : `${m} ${rep}`));
  const out: QueryTerm[] = [];
  const own = [...new Set(terms(q))];
  for (const t of own) {
    out.push({ term: t, weight: 1, group: t });
    for (const [s, w] of SYNONYMS.get(t) ?? []) if (!own.includes(s)) out.push({ term: s, weight: w, group: t });
  }
  // Two words written apart may name one identifier: "event count" → event_count, "service map" → serviceMap.
  const words = q.split(/[^a-z0-9]+/).filter((w) => w && !STOP.has(w));
  for (let i = 0; i + 1 < words.length; i++) {
    const group = `${words[i]} ${words[i + 1]}`;
    for (const term of new Set([`${words[i]}${words[i + 1]}`, `${words[i]}${stem(words[i + 1]!)}`])) out.push({ term, weight: 0.8, group });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Index

/** Verbs of operationIds, by the first word of a query that asks for them ("show …", "mark …"). */
const INTENT_VERBS = ['list', 'get', 'search', 'create', 'update', 'merge', 'unmerge'];
const INTENT: Map<string, string> = (() => {
  const m = new Map<string, string>();
  for (const group of SYNONYM_GROUPS) {
    const head = group[0]!;
    if (!INTENT_VERBS.includes(head)) continue;
    for (const w of group) if (!m.has(stem(w))) m.set(stem(w), head);
  }
  return m;
})();

/** What the query asks to do, from its first word: "mark a feedback record as reviewed" → update. */
export function queryIntent(query: string): string | null {
  const first = terms(query.toLowerCase())[0];
  return first ? INTENT.get(first) ?? null : null;
}

interface Doc {
  op: AnyOperation;
  tf: Map<string, number>;
  len: number;
  /** Stems of the tag ("agentObservations" → agent, observation): naming the resource is a strong signal. */
  tagTerms: Set<string>;
  /** First word of the verb: listRelatedTraces → list. */
  verb: string;
}

const FIELD_WEIGHTS = { tag: 3, verb: 3, summary: 2, description: 1, param: 0.6, enumValue: 0.3, paramText: 0.3 } as const;

function enumValues(js: JsonSchema, depth = 0): string[] {
  if (depth > 3 || !js || typeof js !== 'object') return [];
  const out: string[] = [];
  if (Array.isArray(js.enum)) out.push(...js.enum.filter((v): v is string => typeof v === 'string'));
  for (const k of ['anyOf', 'oneOf', 'allOf'] as const) if (Array.isArray(js[k])) for (const x of js[k] as JsonSchema[]) out.push(...enumValues(x, depth + 1));
  if (js.items && typeof js.items === 'object') out.push(...enumValues(js.items as JsonSchema, depth + 1));
  return out;
}

function buildDoc(op: AnyOperation): Doc {
  const tf = new Map<string, number>();
  let len = 0;
  const add = (text: string, w: number) => {
    for (const t of terms(text)) {
      tf.set(t, (tf.get(t) ?? 0) + w);
      len += w;
    }
  };
  const [tag, verb = ''] = op.operationId.split('.');
  add(tag!, FIELD_WEIGHTS.tag);
  add(op.tag !== tag ? op.tag : '', FIELD_WEIGHTS.tag);
  add(verb, FIELD_WEIGHTS.verb);
  const addToken = (t: string, w: number) => {
    tf.set(t, (tf.get(t) ?? 0) + w);
    len += w;
  };
  if (/[A-Z]/.test(verb)) addToken(joined(verb), FIELD_WEIGHTS.verb);
  add(op.summary, FIELD_WEIGHTS.summary);
  add(op.description, FIELD_WEIGHTS.description);
  const js = toJsonSchema(op.input, 'input');
  const props = (js.properties ?? {}) as Record<string, JsonSchema>;
  for (const [name, p] of Object.entries(props)) {
    if (name === 'project_id') continue;
    add(name, FIELD_WEIGHTS.param);
    if (/[_A-Z]/.test(name)) addToken(joined(name), FIELD_WEIGHTS.param);
    for (const v of enumValues(p)) {
      add(v, FIELD_WEIGHTS.enumValue);
      if (/[_A-Z]/.test(v)) addToken(joined(v), FIELD_WEIGHTS.enumValue);
    }
    if (typeof p.description === 'string') add(p.description, FIELD_WEIGHTS.paramText);
  }
  return { op, tf, len, tagTerms: new Set(terms(tag!)), verb: verb.replace(/[A-Z].*$/, '') };
}

export interface SearchHit {
  op: AnyOperation;
  score: number;
}

export interface SearchIndex {
  /** Operations that can be found (never the sensitive ones). */
  operations: readonly AnyOperation[];
  search(query: string, limit: number): SearchHit[];
  /**
   * Sensitive operations (not offered over MCP) that match the query better than every operation
   * that is offered: the caller says they exist instead of answering with unrelated hits.
   */
  hiddenMatches(query: string, limit: number): AnyOperation[];
}

const K1 = 1.2;
/** Extra weight when the query names the operation's resource in its own words ("traces", "logs"). */
const TAG_BONUS = 1;
/** Extra weight for operations whose verb is what the query's first word asks for. */
const INTENT_BONUS = 1;
const B = 0.4;
/** How much better than the best offered operation a hidden one must match to be named instead. */
const HIDDEN_MARGIN = 1.3;

export function createSearchIndex(operations: Iterable<AnyOperation>): SearchIndex {
  const all = [...operations];
  const visible = all.filter((op) => !op.sensitive);
  const ranker = createRanker(visible);
  // Ranks every operation, hidden ones included; only ever used to name hidden ones that win.
  let everything: ((query: string, limit: number) => SearchHit[]) | null = null;
  return {
    operations: visible,
    search: ranker,
    hiddenMatches(query, limit) {
      if (visible.length === all.length) return [];
      everything ??= createRanker(all);
      // A hidden operation must clearly beat every offered one, and the query must name its
      // resource in its own words ("api key"), not only through related words.
      const ranked = everything(query, 50);
      const own = new Set(terms(query));
      const tagTerms = (op: AnyOperation) => terms(op.operationId.split('.')[0]!);
      const visibleTop = ranked.find((h) => !h.op.sensitive);
      // The query names an offered resource in its own words ("which projects ..."): answer that.
      if (visibleTop && tagTerms(visibleTop.op).every((t) => own.has(t))) return [];
      const out: AnyOperation[] = [];
      for (const hit of ranked) {
        if (!hit.op.sensitive) break;
        const resource = tagTerms(hit.op);
        if (hit.score >= HIDDEN_MARGIN * (visibleTop?.score ?? 0) && own.has(resource[resource.length - 1]!)) out.push(hit.op);
      }
      return out.slice(0, limit);
    },
  };
}

function createRanker(visible: AnyOperation[]): (query: string, limit: number) => SearchHit[] {
  const docs = visible.map(buildDoc);
  const n = docs.length || 1;
  const avgLen = docs.reduce((s, d) => s + d.len, 0) / n || 1;
  const df = new Map<string, number>();
  for (const d of docs) for (const t of d.tf.keys()) df.set(t, (df.get(t) ?? 0) + 1);
  const idf = (t: string) => {
    const f = df.get(t) ?? 0;
    return Math.log(1 + (n - f + 0.5) / (f + 0.5));
  };
  const byId = new Map(visible.map((op) => [op.operationId.toLowerCase(), op]));

  return (query, limit) => {
    {
      const qterms = queryTerms(query);
      const intent = queryIntent(query);
      // An operationId written out ("feedback.list", "api.feedback.list") wins outright.
      const named = new Set<string>();
      for (const m of query.toLowerCase().matchAll(/([a-z][a-z0-9]*)\.([a-z][a-z0-9]*)/gi)) {
        const id = `${m[1]}.${m[2]}`.toLowerCase();
        if (byId.has(id)) named.add(id);
      }
      const hits: SearchHit[] = [];
      for (const d of docs) {
        // Each query word counts once, by its best match (itself or one related word), so a word
        // with many synonyms does not outweigh the others.
        const best = new Map<string, number>();
        for (const { term, weight, group } of qterms) {
          const f = d.tf.get(term);
          if (!f) continue;
          let v = weight * idf(term) * ((f * (K1 + 1)) / (f + K1 * (1 - B + (B * d.len) / avgLen)));
          if (weight >= 0.7 && d.tagTerms.has(term)) v += TAG_BONUS * weight * idf(term);
          if (v > (best.get(group) ?? 0)) best.set(group, v);
        }
        let score = 0;
        for (const v of best.values()) score += v;
        if (score > 0 && intent && d.verb === intent) score += INTENT_BONUS;
        if (named.has(d.op.operationId.toLowerCase())) score += 100;
        if (score > 0) hits.push({ op: d.op, score: score + (d.op.risk === 'read' ? 0.001 : 0) });
      }
      hits.sort((a, b) => b.score - a.score || a.op.operationId.localeCompare(b.op.operationId));
      return hits.slice(0, limit);
    }
  };
}
