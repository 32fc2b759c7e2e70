import type Koa from 'koa';
import type { Logger } from 'pino';
import { AppError, InternalError, storageFailure } from '../../core/errors.js';

/** Renders every error as the spec's Shape A; unknown errors become a generic 500 with no internal text. */
export function errorHandler(log: Logger, baseUrl = ''): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      let e: AppError;
      if (err instanceof AppError) e = err;
      else if (storageFailure(err)) {
        log.warn({ err, requestId: ctx.state.requestId, path: ctx.path }, 'storage unavailable');
        e = storageFailure(err)!;
      } else {
        log.error({ err, requestId: ctx.state.requestId, path: ctx.path }, 'unhandled error');
        e = new InternalError();
      }
      ctx.status = e.status;
      for (const [k, v] of Object.entries(e.headers)) ctx.set(k, v);
      const body = e.toBody();
      // doc_url points at this server's /docs page.
      if (body.doc_url?.startsWith('/')) body.doc_url = baseUrl + body.doc_url;
      ctx.body = body;
    }
  };
}
