import type { Role } from '../../core/principal.js';
import { esc, layout } from './layout.js';

export interface ConsentView {
  action: string;
  requestId: string;
  csrf: string;
  clientName: string;
  clientId: string;
  clientUri?: string;
  redirectUri: string;
  email: string;
  organizations: Array<{ name: string; role: Role; projects: string[] }>;
  scopes: Array<{ name: string; description: string }>;
}

/**
 * Names the client, where the browser will be sent back (its redirect host), the account, every
 * organization and project the token will reach, and what it may do there. Allow and Deny are
 * two submit buttons of one form, both carrying the CSRF token.
 */
export function consentPage(v: ConsentView): string {
  const redirect = new URL(v.redirectUri);
  const orgs = v.organizations.length
    ? `<ul>${v.organizations
        .map(
          (o) =>
            `<li><strong>${esc(o.name)}</strong> <span class="muted">(your role: ${esc(o.role)})</span>${
              o.projects.length ? `<ul>${o.projects.map((p) => `<li>${esc(p)}</li>`).join('')}</ul>` : ' <span class="muted">no projects yet</span>'
            }</li>`,
        )
        .join('')}</ul>`
    : '<p class="muted">You belong to no organization yet, so the token will reach no project.</p>';
  return layout(
    'Authorize access',
    `<h1>Allow ${esc(v.clientName)} to use Sightline?</h1>
<p><strong>${esc(v.clientName)}</strong> <span class="muted">(client <code>${esc(v.clientId)}</code>${v.clientUri ? `, ${esc(v.clientUri)}` : ''})</span>
wants access to Sightline as <strong>${esc(v.email)}</strong>.</p>
<p>After you decide, your browser goes back to <strong>${esc(redirect.host)}</strong> <span class="muted">(${esc(redirect.origin + redirect.pathname)})</span>.</p>
<h2>Organizations and projects it will reach</h2>
${orgs}
<h2>What it may do</h2>
<ul>${v.scopes.map((s) => `<li><code>${esc(s.name)}</code> — ${esc(s.description)}</li>`).join('')}</ul>
<p class="muted">Your role in each organization still limits every request. You can revoke access by signing out of the application.</p>
<form method="post" action="${esc(v.action)}">
<input type="hidden" name="request_id" value="${esc(v.requestId)}">
<input type="hidden" name="csrf_token" value="${esc(v.csrf)}">
<div class="actions">
<button type="submit" name="decision" value="deny" id="deny">Deny</button>
<button class="primary" type="submit" name="decision" value="allow" id="allow">Allow</button>
</div>
</form>`,
  );
}
