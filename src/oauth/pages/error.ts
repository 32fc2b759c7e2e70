import { esc, layout } from './layout.js';

/**
 * Shown when the client cannot be told by redirect: the client is unknown or the redirect URI is
 * not one it registered (RFC 6749 §4.1.2.1: the server "MUST NOT automatically redirect the
 * user-agent to the invalid redirection URI").
 */
export function errorPage(error: string, description: string): string {
  return layout(
    'Authorization failed',
    `<h1>This sign-in request cannot continue</h1>
<p class="error">${esc(description)}</p>
<p class="muted">Error code: <code>${esc(error)}</code>. Return to the application that sent you here and try connecting again; if this keeps happening, the application may need to register again.</p>`,
  );
}
