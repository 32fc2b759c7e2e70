/**
 * Why this file: status-page subscribers, email step-up codes, agent alerts and automation messages all
 * send mail. One interface: SMTP through nodemailer when `SIGHTLINE_SMTP_URL` is set, otherwise a local
 * outbox file (`SIGHTLINE_OUTBOX`, default `outbox.jsonl` beside the database) with one JSON message per
 * line, which tests and local setups read. Callers normally go through the `mail.send` job
 * (src/core/scheduler.ts) so a message survives a restart and is retried; delivery is at least once.
 */
import { appendFileSync, mkdirSync, readFileSync, existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomUUID } from 'node:crypto';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
  /** Extra headers (List-Unsubscribe). */
  headers?: Record<string, string>;
}

export interface OutboxEntry extends MailMessage {
  id: string;
  from: string;
  at: string;
}

export interface Mailer {
  readonly transport: 'smtp' | 'outbox';
  send(msg: MailMessage): Promise<void>;
}

export interface MailConfig {
  smtpUrl: string | null;
  from: string;
  outboxFile: string;
}

export function createMailer(cfg: MailConfig): Mailer {
  if (cfg.smtpUrl) {
    // nodemailer ships no type declarations; it is loaded on first use through a plain specifier.
    const specifier = 'nodemailer';
    let transport: Promise<{ sendMail(m: Record<string, unknown>): Promise<unknown> }> | null = null;
    return {
      transport: 'smtp',
      async send(msg) {
        transport ??= import(specifier).then((m) => (m.default ?? m).createTransport(cfg.smtpUrl));
        await (await transport).sendMail({ from: cfg.from, to: msg.to, subject: msg.subject, text: msg.text, html: msg.html, headers: msg.headers });
      },
    };
  }
  return {
    transport: 'outbox',
    async send(msg) {
      mkdirSync(dirname(cfg.outboxFile), { recursive: true });
      const entry: OutboxEntry = { id: randomUUID(), from: cfg.from, at: new Date().toISOString(), ...msg };
      appendFileSync(cfg.outboxFile, JSON.stringify(entry) + '\n');
    },
  };
}

/** The messages in an outbox file, oldest first (for tests and local inspection). */
export function readOutbox(file: string): OutboxEntry[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as OutboxEntry);
}

export const JOB_MAIL = 'mail.send';

/** Schedules one message as a durable `mail.send` job (call inside the transaction that caused it). */
export function enqueueMail(scheduler: { enqueue(kind: string, key: string, payload: unknown, runAt: number, o?: { maxAttempts?: number }): void }, key: string, msg: MailMessage, now: number): void {
  scheduler.enqueue(JOB_MAIL, key, msg, now, { maxAttempts: 10 });
}

/** Registers the job that sends queued messages (retried with backoff when the transport fails). */
export function registerMailJob(scheduler: { register(kind: string, h: (job: { payload: unknown }) => Promise<object>): void }, mailer: Mailer): void {
  scheduler.register(JOB_MAIL, async (job) => {
    await mailer.send(job.payload as MailMessage);
    return {};
  });
}
