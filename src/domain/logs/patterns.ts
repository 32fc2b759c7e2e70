/**
 * Log template mining in the manner of Drain (He et al., ICWS 2017; as in the drain3 library):
 *
 * 1. Mask variable tokens: UUIDs → `<UUID>`, IPv6 / IPv4 → `<IP>`, hex (`0x…`, or ≥ 8 hex characters
 *    with at least one digit and one letter a–f) → `<HEX>`, numbers → `<NUM>` (a run of digits, with an
 *    optional fraction, not preceded by a letter/digit/underscore: `took 15ms` → `took <NUM>ms`, but
 *    `user123` is kept). Pure-digit runs are numbers, never hex.
 * 2. Split on whitespace and walk a fixed-depth prefix tree: root → token count → the first
 *    `depth − 3` tokens (1 for the default depth 4; tokens containing digits, and tokens arriving at a
 *    node that already has `maxChildren` children, go to a `<*>` child) → leaf holding clusters.
 * 3. In the leaf, pick the cluster whose template shares the largest fraction of tokens with the
 *    message (wildcard positions not counted; ties → the template with more wildcards). At or above
 *    the similarity threshold (0.4) the message joins it and differing positions become `<*>`;
 *    otherwise it starts a new cluster.
 */

export interface LogMessageInput {
  message: string;
  level?: string;
  service?: string;
}

export interface LogPattern {
  /** Masked template, tokens joined by single spaces; `<*>` marks positions that varied. */
  pattern: string;
  count: number;
  /** The first raw message that formed the pattern (truncated to `maxMessageLength`). */
  sample: string;
  /** Message count per level (lower-cased; messages without a level are not counted here). */
  levels: Record<string, number>;
  /** Message count per service; present only when some message named a service. */
  services?: Record<string, number>;
}

export interface MinePatternsOptions {
  /** Most patterns returned, by count (default 50). */
  maxPatterns?: number;
  /** Similarity threshold in [0, 1] (default 0.4). */
  similarity?: number;
  /** Prefix-tree depth, counting root, length layer and leaf (default 4 → one token layer). */
  depth?: number;
  /** Children per tree node before tokens overflow into `<*>` (default 100). */
  maxChildren?: number;
  /** Messages are cut to this many characters before mining (default 2048). */
  maxMessageLength?: number;
}

export const WILDCARD = '<*>';

const UUID_RE = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
const IPV6_CANDIDATE_RE = /(?<![\w:.])(?:[0-9a-f]{0,4}:){2,7}(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9a-f]{1,4})?(?![\w:])/gi;
const IPV4_RE = /(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?!\w|\.\d)/g;
const HEX_PREFIXED_RE = /\b0x[0-9a-f]+\b/gi;
const HEX_RE = /\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b/gi;
const NUM_RE = /(?<![A-Za-z0-9_])\d+(?:\.\d+)?/g;

function isIPv4(s: string): boolean {
  return s.split('.').every((o) => Number(o) <= 255);
}

function isIPv6(s: string): boolean {
  if (!/[0-9a-f]/i.test(s)) return false;
  let str = s;
  let embedded = 0;
  const v4 = /(\d{1,3}(?:\.\d{1,3}){3})$/.exec(str);
  if (v4) {
    if (!isIPv4(v4[1])) return false;
    str = str.slice(0, -v4[1].length);
    if (!str.endsWith(':')) return false;
    str = str.endsWith('::') ? str : str.slice(0, -1);
    embedded = 2;
  }
  const halves = str.split('::');
  if (halves.length > 2) return false;
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const all = [...groups(halves[0]), ...(halves.length === 2 ? groups(halves[1]) : [])];
  if (!all.every((g) => /^[0-9a-f]{1,4}$/i.test(g))) return false;
  const n = all.length + embedded;
  return halves.length === 2 ? n <= 7 : n === 8;
}

const DIGIT_RE = /\d/;

/**
 * Replaces variable parts of a message with `<UUID>`, `<IP>`, `<HEX>` and `<NUM>`; whitespace is kept.
 * Every mask needs a digit, so messages without one are returned as they are (a UUID or IPv6 address
 * without any digit is too rare to be worth the cost); each pass runs only when its separator occurs.
 */
export function maskMessage(message: string): string {
  if (!DIGIT_RE.test(message)) return message;
  let s = message;
  if (s.includes('-')) s = s.replace(UUID_RE, '<UUID>');
  if (s.includes(':')) s = s.replace(IPV6_CANDIDATE_RE, (m) => (isIPv6(m) ? '<IP>' : m));
  if (s.includes('.')) s = s.replace(IPV4_RE, (m) => (isIPv4(m) ? '<IP>' : m));
  if (s.includes('0x') || s.includes('0X')) s = s.replace(HEX_PREFIXED_RE, '<HEX>');
  return s.replace(HEX_RE, '<HEX>').replace(NUM_RE, '<NUM>');
}

interface Cluster {
  tokens: string[];
  wildcards: number;
  count: number;
  order: number;
  sample: string;
  levels: Record<string, number>;
  services: Record<string, number>;
}

interface TreeNode {
  children: Map<string, TreeNode>;
  clusters: Cluster[];
}

const newNode = (): TreeNode => ({ children: new Map(), clusters: [] });

function child(node: TreeNode, key: string): TreeNode {
  let next = node.children.get(key);
  if (!next) {
    next = newNode();
    node.children.set(key, next);
  }
  return next;
}

function leafFor(root: TreeNode, tokens: string[], prefixLayers: number, maxChildren: number): TreeNode {
  let node = child(root, String(tokens.length));
  const layers = Math.min(prefixLayers, Math.max(0, tokens.length - 1));
  for (let i = 0; i < layers; i++) {
    const token = tokens[i];
    const existing = node.children.get(token);
    if (existing) {
      node = existing;
    } else {
      const useWildcard = DIGIT_RE.test(token) || node.children.size >= maxChildren;
      node = child(node, useWildcard ? WILDCARD : token);
    }
  }
  return node;
}

/**
 * Groups log messages into templates. Returns at most `maxPatterns` patterns, most frequent first
 * (first-seen first on ties).
 */
export function minePatterns(messages: readonly LogMessageInput[], options: MinePatternsOptions = {}): LogPattern[] {
  const maxPatterns = options.maxPatterns ?? 50;
  const threshold = options.similarity ?? 0.4;
  const prefixLayers = Math.max(0, (options.depth ?? 4) - 3);
  const maxChildren = options.maxChildren ?? 100;
  const maxLen = options.maxMessageLength ?? 2048;

  const root = newNode();
  const clusters: Cluster[] = [];

  for (const m of messages) {
    const raw = typeof m.message === 'string' ? m.message : String(m.message ?? '');
    const text = raw.length > maxLen ? raw.slice(0, maxLen) : raw;
    const tokens = maskMessage(text).split(/\s+/).filter((t) => t !== '');
    const leaf = leafFor(root, tokens, prefixLayers, maxChildren);

    let best: Cluster | undefined;
    let bestSim = -1;
    for (const c of leaf.clusters) {
      let same = 0;
      for (let i = 0; i < tokens.length; i++) {
        const t = c.tokens[i];
        if (t !== WILDCARD && t === tokens[i]) same++;
      }
      const sim = tokens.length === 0 ? 1 : same / tokens.length;
      if (sim > bestSim || (sim === bestSim && best && c.wildcards > best.wildcards)) {
        best = c;
        bestSim = sim;
      }
    }

    let cluster: Cluster;
    if (best && bestSim >= threshold) {
      cluster = best;
      for (let i = 0; i < tokens.length; i++) {
        if (cluster.tokens[i] !== WILDCARD && cluster.tokens[i] !== tokens[i]) {
          cluster.tokens[i] = WILDCARD;
          cluster.wildcards++;
        }
      }
    } else {
      cluster = { tokens, wildcards: 0, count: 0, order: clusters.length, sample: text, levels: {}, services: {} };
      leaf.clusters.push(cluster);
      clusters.push(cluster);
    }
    cluster.count++;
    if (m.level) {
      const level = m.level.toLowerCase();
      cluster.levels[level] = (cluster.levels[level] ?? 0) + 1;
    }
    if (m.service) cluster.services[m.service] = (cluster.services[m.service] ?? 0) + 1;
  }

  return clusters
    .sort((a, b) => b.count - a.count || a.order - b.order)
    .slice(0, Math.max(0, maxPatterns))
    .map((c) => {
      const out: LogPattern = { pattern: c.tokens.join(' '), count: c.count, sample: c.sample, levels: c.levels };
      if (Object.keys(c.services).length > 0) out.services = c.services;
      return out;
    });
}

/**
 * String form of an attribute value cut to at most `max` characters (UTF-16 units), the last being
 * `…` when cut; a surrogate pair is never split. Strings as-is, other values as JSON, `undefined` → ''.
 */
export function truncateValue(v: unknown, max = 256): string {
  let s: string;
  if (typeof v === 'string') s = v;
  else if (v === undefined) s = '';
  else if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') s = String(v);
  else {
    try {
      s = JSON.stringify(v) ?? String(v);
    } catch {
      s = String(v);
    }
  }
  if (s.length <= max) return s;
  if (max <= 0) return '';
  let cut = max - 1;
  const code = s.charCodeAt(cut - 1);
  if (cut > 0 && code >= 0xd800 && code <= 0xdbff) cut--; // don't leave a lone high surrogate
  return `${s.slice(0, cut)}…`;
}

export interface DistributionEntry {
  value: string;
  count: number;
}

export interface Distribution {
  /** Most frequent values (as {@link truncateValue} strings), count desc then value asc. */
  values: DistributionEntry[];
  /** Occurrences of values not listed. */
  other: number;
  /** Occurrences counted (every value except `undefined`). */
  total: number;
  /** Number of distinct values. */
  distinct: number;
  /** `undefined` entries (attribute absent). */
  missing: number;
}

export interface DistributionOptions {
  maxValues?: number;
  /** Values are truncated to this length before counting (default 256). */
  maxLength?: number;
}

/** Top values with counts, plus how many occurrences fell outside the top `maxValues` (12). */
export function distribution(values: Iterable<unknown>, options: DistributionOptions = {}): Distribution {
  const maxValues = options.maxValues ?? 12;
  const maxLength = options.maxLength ?? 256;
  const counts = new Map<string, number>();
  let total = 0;
  let missing = 0;
  for (const v of values) {
    if (v === undefined) {
      missing++;
      continue;
    }
    total++;
    const key = truncateValue(v, maxLength);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const sorted = [...counts.entries()]
    .map(([value, count]) => ({ value, count }))
    .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0));
  const top = sorted.slice(0, Math.max(0, maxValues));
  const listed = top.reduce((s, e) => s + e.count, 0);
  return { values: top, other: total - listed, total, distinct: counts.size, missing };
}
