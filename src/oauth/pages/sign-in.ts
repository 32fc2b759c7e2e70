import { esc, layout } from './layout.js';

export interface SignInView {
  action: string;
  requestId: string;
  csrf: string;
  clientName: string;
  email?: string;
  error?: string;
}

/** Email and password of a Sightline user; the form carries the pending request and a CSRF token. */
export function signInPage(v: SignInView): string {
  return layout(
    'Sign in',
    `<h1>Sign in to Sightline</h1>
<p>to continue to <strong>${esc(v.clientName)}</strong>.</p>
${v.error ? `<p class="error" role="alert">${esc(v.error)}</p>` : ''}
<form method="post" action="${esc(v.action)}">
<input type="hidden" name="request_id" value="${esc(v.requestId)}">
<input type="hidden" name="csrf_token" value="${esc(v.csrf)}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${esc(v.email ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<div class="actions"><button class="primary" type="submit" id="sign-in">Sign in</button></div>
</form>`,
  );
}
