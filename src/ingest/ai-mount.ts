import type Router from '@koa/router';
import type Koa from 'koa';
import type { Sightline } from '../server.js';
import type { IngestQuota } from './auth.js';
import { mountAiBatch } from './ai-batch.js';
import { mountLangfuse } from './langfuse.js';

/** AI ingestion routes (issue 13): our JSON batch and the Langfuse-compatible endpoints, on the ingest router. */
export function mountAiIngest(router: Router, s: Sightline, deps: { readBody: (ctx: Koa.Context, s: Sightline) => Promise<Buffer>; quota: IngestQuota }): void {
  mountAiBatch(router, s, deps);
  mountLangfuse(router, s, deps);
}
