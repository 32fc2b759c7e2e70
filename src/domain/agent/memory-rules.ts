/**
 * Why this file: what the agent may be told to remember (spec, Errors 422 and Limits): content of at
 * most 500 characters, no secret (API keys of Sightline and common services, private keys, JWTs,
 * passwords in URLs, high-entropy tokens), and nothing that tries to change its safety rules
 * (approvals, remediation, budget, scopes). Also how two entries are compared for "is a copy".
 */

export const MAX_MEMORY_CONTENT = 500;
export const MEMORY_KINDS = ['rule', 'preference', 'fact', 'incident'] as const;
/** Active entries per scope (spec, Errors 409 "scope full"). */
export const MEMORY_CAP = { project: 50, organization: 100 } as const;

const SECRET_PATTERNS: [string, RegExp][] = [
  ['a Sightline key or token', /\bsl[a-z]{0,3}_[A-Za-z0-9_-]{24,}/],
  ['a private key', /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/],
  ['a JSON Web Token', /\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}/],
  ['a password in a URL', /\b[a-z][a-z0-9+.-]*:\/\/[^\s/:@]+:[^\s/@]+@/i],
  ['an AWS access key', /\b(AKIA|ASIA)[0-9A-Z]{16}\b/],
  ['a GitHub token', /\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})/],
  ['a GitLab token', /\bglpat-[A-Za-z0-9_-]{20,}/],
  ['a Slack token', /\bxox[abposr]-[A-Za-z0-9-]{10,}/],
  ['a Stripe key', /\b(sk|rk|pk)_(live|test)_[A-Za-z0-9]{16,}/],
  ['an OpenAI or Anthropic key', /\bsk-(ant-)?[A-Za-z0-9_-]{20,}/],
  ['a Google API key', /\bAIza[0-9A-Za-z_-]{35}/],
  ['a Sentry token', /\bsntr[ysu]_[A-Za-z0-9_=+/-]{20,}/],
  ['an npm token', /\bnpm_[A-Za-z0-9]{36}\b/],
  ['a SendGrid key', /\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}/],
  ['a password', /\b(password|passwd|pwd|secret|api[_ -]?key|token)\s*[:=]\s*\S{6,}/i],
];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function entropy(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) h -= (n / s.length) * Math.log2(n / s.length);
  return h;
}

/**
 * A token that looks random: 20+ characters of letters, digits and `+/_=-` with both letters and
 * digits and Shannon entropy ≥ 4 bits a character, or 32+ hex characters with ≥ 3.5 bits (a hex
 * secret). UUIDs (ids of this server's records) are not secrets.
 */
function highEntropyToken(text: string): boolean {
  for (const tok of text.match(/[A-Za-z0-9+/_=-]{20,}/g) ?? []) {
    if (UUID.test(tok) || !/[0-9]/.test(tok) || !/[A-Za-z]/.test(tok)) continue;
    if (/^[0-9a-f]+$/i.test(tok) ? tok.length >= 32 && entropy(tok) >= 3.5 : entropy(tok) >= 4) return true;
  }
  return false;
}

/** What kind of secret the text holds, or null. */
export function secretIn(text: string): string | null {
  for (const [what, re] of SECRET_PATTERNS) if (re.test(text)) return what;
  return highEntropyToken(text) ? 'a high-entropy token' : null;
}

const SAFETY_PATTERNS: [string, RegExp][] = [
  ['approvals', /\b(skip|bypass|ignore|disable|remove|without|no need (for|to)|don'?t (need|require|ask for|wait for)|auto[- ]?approve|self[- ]?approve|approve (your|its) own)\b.{0,40}\b(approvals?|approve|confirmation|sign[- ]?off|human review)\b|\bauto[- ]?approve\b/i],
  ['remediation', /\b(always|automatically|auto[- ]?)\s*(fix|remediate|roll ?back|restart|deploy|merge|delete)\b.{0,40}\b(without|no)\b.{0,20}\b(asking|approval|review|confirmation)\b|\b(enable|turn on|allow)\b.{0,20}\b(auto[- ]?fix|auto[- ]?remediation|remediation)\b/i],
  ['budget', /\b(ignore|raise|increase|double|exceed|remove|bypass|disable|unlimited|no)\b.{0,30}\b(budget|spending limit|usage limit|daily limit)\b/i],
  ['scopes', /\b(grant|give|add|use|escalate|elevate|request|take)\b.{0,30}\b(scopes?|permissions?|admin rights|write access|owner rights|project:write|\*)\b|\b(ignore|bypass|override)\b.{0,30}\b(scopes?|permissions?|safety rules?|guardrails?)\b/i],
];

/** Which safety rule the text tries to change, or null. */
export function safetyRuleIn(text: string): string | null {
  for (const [what, re] of SAFETY_PATTERNS) if (re.test(text)) return what;
  return null;
}

/** Two entries are copies when they read the same ignoring case, spacing and final punctuation. */
export function normalizeMemory(text: string): string {
  return text.toLowerCase().replace(/\s+/g, ' ').trim().replace(/[.!?\s]+$/, '');
}
