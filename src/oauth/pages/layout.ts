import type Koa from 'koa';

import { esc, htmlDocument, sendPage as sendSharedPage } from '../../pages/layout.js';

export { esc };

const STYLE = `
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1d2230}
main{max-width:460px;margin:48px auto;padding:28px 32px;background:#fff;border:1px solid #dfe1e6;border-radius:10px}
h1{font-size:20px;margin:0 0 16px}
h2{font-size:15px;margin:20px 0 6px}
p{margin:8px 0}
label{display:block;margin:12px 0 4px;font-weight:600}
input[type=email],input[type=password]{width:100%;padding:9px 10px;border:1px solid #b3b9c4;border-radius:6px;font:inherit}
button{font:inherit;padding:9px 18px;border-radius:6px;border:1px solid #b3b9c4;background:#fff;cursor:pointer}
button.primary{background:#2f54eb;border-color:#2f54eb;color:#fff}
.actions{display:flex;gap:10px;justify-content:flex-end;margin-top:22px}
.error{background:#fff1f0;border:1px solid #ffa39e;padding:8px 12px;border-radius:6px}
.muted{color:#5e6c84;font-size:13px}
ul{margin:4px 0;padding-left:20px}
code{font-size:13px;background:#f4f5f7;padding:1px 4px;border-radius:4px}
`;

export function layout(title: string, body: string): string {
  return htmlDocument({ title: `${title} · Sightline`, style: STYLE, body: `<main>\n${body}\n</main>` });
}

/**
 * Sends an authorization page. No external assets, no scripts; the page may not be framed
 * (X-Frame-Options DENY, CSP frame-ancestors 'none': clickjacking on the consent button), and
 * forms may only post to this server — plus, on the consent page, the client's redirect origin,
 * since the browser follows the post's redirect there and `form-action` covers that redirect.
 */
export function sendPage(ctx: Koa.Context, status: number, html: string, formTargets: string[] = []): void {
  sendSharedPage(ctx, status, html, { formTargets });
}
