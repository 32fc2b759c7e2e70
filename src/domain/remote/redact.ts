/**
 * Why this file: remote output is untrusted and may carry secrets or private destinations. It is
 * redacted here before it is stored (the raw text never reaches the database) and cut to the
 * policy's output limit (at most 65,536 characters, spec Limits).
 */
import { MAX_OUTPUT_CHARS } from './policy.js';

const RULES: Array<[RegExp, string]> = [
  [/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g, '[REDACTED:private_key]'],
  [/\b(ssh-(rsa|ed25519|dss)|ecdsa-sha2-nistp\d+)\s+[A-Za-z0-9+/=]{20,}/g, '[REDACTED:public_key]'],
  [/\b(SHA256|MD5):[A-Za-z0-9+/=:]{16,}/g, '[REDACTED:fingerprint]'],
  [/\b(password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|authorization|bearer)\b(\s*[:=]\s*|\s+)("[^"]*"|'[^']*'|\S+)/gi, '$1$2[REDACTED:secret]'],
  [/\b(AKIA|ASIA)[A-Z0-9]{16}\b/g, '[REDACTED:secret]'],
  [/\b(sk|pk|rk|sl|slat|ghp|gho|xox[abp])_[A-Za-z0-9_-]{16,}/g, '[REDACTED:secret]'],
  [/\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*/g, '[REDACTED:secret]'],
  // Lookbehinds start a match only at a token start: without them a long run of word characters costs O(n²).
  [/(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+/g, '[REDACTED:email]'],
  [/\b((25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(25[0-5]|2[0-4]\d|1?\d?\d)(:\d{1,5})?\b/g, '[REDACTED:address]'],
  [/\b([0-9a-f]{1,4}:){7}[0-9a-f]{1,4}\b/gi, '[REDACTED:address]'],
  [/(\b[0-9a-f]{1,4})?(:[0-9a-f]{1,4}){0,6}::([0-9a-f]{1,4}(:[0-9a-f]{1,4}){0,6})?\b/gi, '[REDACTED:address]'],
  [/\b([0-9a-f]{2}[:-]){5}[0-9a-f]{2}\b/gi, '[REDACTED:address]'],
  [/(?<![a-z0-9.-])[a-z0-9-]{1,63}(\.[a-z0-9-]{1,63}){0,8}\.(internal|local|lan|corp|intra|home|localdomain)\b/gi, '[REDACTED:host]'],
  [/\b[A-Fa-f0-9]{40,}\b/g, '[REDACTED:secret]'],
];

export interface Redacted {
  text: string;
  truncated: boolean;
}

/** Redacts secrets, addresses and keys, plus any `extra` literal strings, then cuts to `limit`. */
export function redactOutput(raw: string, limit: number, extra: readonly string[] = []): Redacted {
  let text = raw;
  for (const lit of extra) if (lit && lit.length >= 3) text = text.split(lit).join('[REDACTED]');
  for (const [re, rep] of RULES) text = text.replace(re, rep);
  // eslint-disable-next-line no-control-regex
  text = text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '');
  const cap = Math.min(limit, MAX_OUTPUT_CHARS);
  return text.length > cap ? { text: text.slice(0, cap), truncated: true } : { text, truncated: false };
}
