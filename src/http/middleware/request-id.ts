import { randomUUID } from 'node:crypto';
import type Koa from 'koa';

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Every response carries X-Request-ID; a safe incoming one is echoed (spec, Errors item 1). */
export function requestId(): Koa.Middleware {
  return async (ctx, next) => {
    const incoming = ctx.get('x-request-id');
    const id = SAFE_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = id;
    ctx.set('X-Request-ID', id);
    await next();
  };
}
