/**
 * HTML of the remote-access console (human-only actions). No scripts; every form posts to this
 * server with a session-bound CSRF token. Pages show sanitized data only: no host, address, user,
 * host-key fingerprint or authentication profile ever reaches them.
 */
import { esc, htmlDocument } from '../layout.js';
import { ACTION_LABELS, type ConsoleAction } from '../../core/remote/stepup.js';

export const CONSOLE_BASE = '/console/remote-access';

const STYLE = `
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1d2230}
main{max-width:880px;margin:32px auto;padding:24px 32px;background:#fff;border:1px solid #dfe1e6;border-radius:10px}
h1{font-size:20px;margin:0 0 12px}h2{font-size:16px;margin:22px 0 8px}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:6px 8px;border-bottom:1px solid #eceef2;vertical-align:top;font-size:14px}
label{display:block;margin:10px 0 4px;font-weight:600}
input[type=text],input[type=email],input[type=password]{width:100%;padding:8px 10px;border:1px solid #b3b9c4;border-radius:6px;font:inherit}
button{font:inherit;padding:6px 14px;border-radius:6px;border:1px solid #b3b9c4;background:#fff;cursor:pointer}
button.primary{background:#2f54eb;border-color:#2f54eb;color:#fff}
form.inline{display:inline}
.error{background:#fff1f0;border:1px solid #ffa39e;padding:8px 12px;border-radius:6px}
.ok{background:#f6ffed;border:1px solid #b7eb8f;padding:8px 12px;border-radius:6px}
.muted{color:#5e6c84;font-size:13px}
pre{background:#f4f5f7;padding:10px;border-radius:6px;white-space:pre-wrap;word-break:break-word;max-height:480px;overflow:auto}
code{font-size:13px}
`;

export function page(title: string, body: string): string {
  return htmlDocument({ title: `${title} · Sightline remote access`, style: STYLE, body: `<main>\n${body}\n</main>` });
}

export function signInPage(csrf: string, error?: string): string {
  return page(
    'Sign in',
    `<h1>Remote-access console</h1>
<p class="muted">Approvals, target confirmation and reveals happen only here, by a signed-in person with an email code.</p>
${error ? `<p class="error" role="alert">${esc(error)}</p>` : ''}
<form method="post" action="${CONSOLE_BASE}/sign-in">
<input type="hidden" name="csrf_token" value="${esc(csrf)}">
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<p><button class="primary" type="submit" id="sign-in">Sign in</button></p>
</form>`,
  );
}

export function message(title: string, text: string, ok: boolean, back?: string, extra = ''): string {
  return page(title, `<h1>${esc(title)}</h1><p class="${ok ? 'ok' : 'error'}" role="${ok ? 'status' : 'alert'}" id="result">${esc(text)}</p>${extra}${back ? `<p><a href="${esc(back)}">Back</a></p>` : ''}`);
}

export interface ProjectView {
  projectId: string;
  projectName: string;
  email: string;
  csrf: string;
  approvals: Array<{ id: string; target: string; environment: string; operation: string; parameters: string; mine: boolean; expires: string; policyRevision: number }>;
  targets: Array<{ id: string; label: string; environment: string; state: string }>;
  connectors: Array<{ id: string; label: string; status: string }>;
  executions: Array<{ id: string; requestId: string; state: string; finished: string | null }>;
}

function stepUpButton(v: ProjectView, action: ConsoleAction, subject: string, text: string): string {
  return `<form class="inline" method="post" action="${CONSOLE_BASE}/projects/${esc(v.projectId)}/step-up" data-action="${action}" data-subject="${esc(subject)}">
<input type="hidden" name="csrf_token" value="${esc(v.csrf)}"><input type="hidden" name="action" value="${action}"><input type="hidden" name="subject_id" value="${esc(subject)}">
<button type="submit">${esc(text)}</button></form>`;
}

export function projectPage(v: ProjectView): string {
  const rows = <T>(items: T[], empty: string, fn: (x: T) => string) => (items.length ? items.map(fn).join('\n') : `<tr><td colspan="6" class="muted">${empty}</td></tr>`);
  return page(
    v.projectName,
    `<h1>Remote access · ${esc(v.projectName)}</h1>
<p class="muted">Signed in as ${esc(v.email)}. Each action below sends a one-time code to your email (valid 5 minutes).</p>
<form method="post" action="${CONSOLE_BASE}/sign-out"><input type="hidden" name="csrf_token" value="${esc(v.csrf)}"><button type="submit">Sign out</button></form>
<h2>Pending approvals</h2>
<table id="approvals"><tr><th>Request</th><th>Target</th><th>Operation</th><th>Policy</th><th>Expires</th><th></th></tr>
${rows(v.approvals, 'Nothing waiting.', (a) => `<tr data-request="${esc(a.id)}"><td><code>${esc(a.id)}</code></td><td>${esc(a.target)} <span class="muted">${esc(a.environment)}</span></td><td><code>${esc(a.operation)}</code> <code>${esc(a.parameters)}</code></td><td>r${a.policyRevision}</td><td>${esc(a.expires)}</td>
<td>${a.mine ? '<span class="muted">your request: another person must review it</span> ' : ''}${stepUpButton(v, 'approve_request', a.id, 'Approve…')} ${stepUpButton(v, 'deny_request', a.id, 'Deny…')}</td></tr>`)}
</table>
<h2>Targets</h2>
<table id="targets"><tr><th>Target</th><th>Environment</th><th>State</th><th></th></tr>
${rows(v.targets, 'No targets.', (t) => `<tr data-target="${esc(t.id)}"><td>${esc(t.label)} <code>${esc(t.id)}</code></td><td>${esc(t.environment)}</td><td>${esc(t.state)}</td><td>${t.state === 'awaiting_confirmation' ? stepUpButton(v, 'confirm_target', t.id, 'Confirm…') : ''}</td></tr>`)}
</table>
<h2>Connectors</h2>
<table id="connectors"><tr><th>Connector</th><th>Status</th><th></th></tr>
${rows(v.connectors, 'No connectors.', (c) => `<tr><td>${esc(c.label)} <code>${esc(c.id)}</code></td><td>${esc(c.status)}</td><td>${c.status === 'active' ? stepUpButton(v, 'reveal_fingerprint', c.id, 'Reveal signing-key fingerprint…') : ''}</td></tr>`)}
</table>
<h2>Executions</h2>
<table id="executions"><tr><th>Execution</th><th>Request</th><th>State</th><th>Finished</th><th></th></tr>
${rows(v.executions, 'No executions.', (e) => `<tr><td><code>${esc(e.id)}</code></td><td><code>${esc(e.requestId)}</code></td><td>${esc(e.state)}</td><td>${esc(e.finished ?? '')}</td><td>${e.state === 'succeeded' || e.state === 'failed' ? stepUpButton(v, 'reveal_transcript', e.id, 'Reveal transcript…') : ''}</td></tr>`)}
</table>`,
  );
}

/** The second step: the emailed code, plus what the action itself needs. */
export function actionPage(o: { projectId: string; csrf: string; action: ConsoleAction; subjectId: string; summary: string; email: string; error?: string }): string {
  const extra =
    o.action === 'confirm_target'
      ? `<p>Compare with what you read through a separate trusted console on the host (e.g. <code>ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub</code>).</p>
<label for="verification_id">Verification id</label><input id="verification_id" name="verification_id" type="text" autocomplete="off" required>
<label for="host_key_sha256">SHA-256 host-key digest</label><input id="host_key_sha256" name="host_key_sha256" type="text" autocomplete="off" placeholder="SHA256:…" required>`
      : o.action === 'reveal_transcript'
        ? `<label><input type="checkbox" name="acknowledge_sensitive_data" value="true" id="acknowledge" required> I understand this shows remote output that may hold sensitive data, and that the reveal is audited.</label>`
        : '';
  return page(
    'Confirm with your email code',
    `<h1>${esc(ACTION_LABELS[o.action][0]!.toUpperCase() + ACTION_LABELS[o.action].slice(1))}</h1>
<p>${esc(o.summary)}</p>
<p class="muted">We sent a code to ${esc(o.email)}. It works once, in this browser session, for this action only, and expires in 5 minutes.</p>
${o.error ? `<p class="error" role="alert">${esc(o.error)}</p>` : ''}
<form method="post" action="${CONSOLE_BASE}/projects/${esc(o.projectId)}/act" id="action-form">
<input type="hidden" name="csrf_token" value="${esc(o.csrf)}"><input type="hidden" name="action" value="${o.action}"><input type="hidden" name="subject_id" value="${esc(o.subjectId)}">
${extra}
<label for="code">Email code</label><input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required>
<p><button class="primary" type="submit" id="submit-action">Confirm</button></p>
</form>
<p><a href="${CONSOLE_BASE}/projects/${esc(o.projectId)}">Cancel</a></p>`,
  );
}
