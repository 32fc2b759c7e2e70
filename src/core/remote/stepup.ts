/**
 * Why this file: every human-only remote-access action needs a five-minute, one-time email code
 * bound to the exact action, user and session (and, for transcript reveal, project and execution:
 * they are part of the binding). Codes are mailed through the shared outbound mail job
 * (SMTP when configured, else the outbox), stored only as hashes, and burn after five wrong tries.
 */
import { randomInt, randomUUID } from 'node:crypto';
import type { Services } from '../services.js';
import { enqueueMail } from '../mail.js';
import { hashSecret } from '../../domain/identity/secrets.js';
import { LIFETIMES, sameText } from './service.js';

export type ConsoleAction = 'approve_request' | 'deny_request' | 'confirm_target' | 'reveal_fingerprint' | 'reveal_transcript';

export const ACTION_LABELS: Record<ConsoleAction, string> = {
  approve_request: 'approve a remote request',
  deny_request: 'deny a remote request',
  confirm_target: 'confirm a remote target',
  reveal_fingerprint: 'reveal a connector signing-key fingerprint',
  reveal_transcript: 'reveal an execution transcript',
};

export interface StepUpBinding {
  userId: string;
  sessionHash: string;
  action: ConsoleAction;
  projectId: string;
  subjectId: string;
}

const bindingText = (b: StepUpBinding) => JSON.stringify({ project: b.projectId, subject: b.subjectId });
const MAX_ATTEMPTS = 5;
const MAX_CODES_PER_15_MIN = 10;

/** Issues a code and queues its mail; false when the user asked for too many codes lately. */
export function issueStepUp(s: Services, b: StepUpBinding, email: string, now: number): boolean {
  if (s.remote.stepUpsSince(b.userId, now - 15 * 60_000) >= MAX_CODES_PER_15_MIN) return false;
  const code = String(randomInt(0, 100_000_000)).padStart(8, '0');
  const id = randomUUID();
  s.atomic(() => {
    s.remote.purgeExpired(now - 86_400_000);
    s.remote.createStepUp({ id, code_hash: hashSecret(`${id}:${code}`), user_id: b.userId, session_hash: b.sessionHash, action: b.action, binding: bindingText(b), expires_at: now + LIFETIMES.stepUpMs, created_at: now });
    enqueueMail(s.scheduler, `remote-stepup:${id}`, {
      to: email,
      subject: `Sightline code to ${ACTION_LABELS[b.action]}`,
      text: `Your Sightline confirmation code is ${code}\n\nIt lets you ${ACTION_LABELS[b.action]} (${b.subjectId}) in the remote-access console, in the browser session where you asked for it. It works once and expires in 5 minutes.\nIf you did not ask for it, ignore this message and tell your project owner.`,
    }, now);
  });
  return true;
}

export type StepUpCheck = 'ok' | 'missing' | 'wrong' | 'used' | 'expired' | 'locked';

/** Checks and consumes the code for exactly this binding. Only one caller ever gets 'ok'. */
export function consumeStepUp(s: Services, b: StepUpBinding, code: string, now: number): StepUpCheck {
  return s.atomic(() => {
    const row = s.remote.stepUpFor(b.userId, b.sessionHash, b.action, bindingText(b));
    if (!row) return 'missing';
    if (row.used_at !== null) return 'used';
    if (row.expires_at <= now) return 'expired';
    if (row.attempts >= MAX_ATTEMPTS) return 'locked';
    if (!/^\d{8}$/.test(code) || !sameText(row.code_hash, hashSecret(`${row.id}:${code}`))) {
      s.remote.stepUpAttempt(row.id);
      return 'wrong';
    }
    return s.remote.useStepUp(row.id, now) ? 'ok' : 'used';
  });
}

export const STEP_UP_MESSAGES: Record<Exclude<StepUpCheck, 'ok'>, string> = {
  missing: 'Ask for an email code for this action first.',
  wrong: 'The code is not correct.',
  used: 'This code was already used. Each code works once: ask for a new one.',
  expired: 'This code has expired (codes last 5 minutes). Ask for a new one.',
  locked: 'Too many wrong codes. Ask for a new one.',
};
