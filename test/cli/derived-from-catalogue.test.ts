/**
 * One new descriptor, no other edit: it shows up as a REST route and OpenAPI operation, a client
 * method and a CLI command (with help), because every face is derived from the operations list.
 */
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { catalogue } from '../../operations/index.js';
import { defineOperation, type AnyOperation } from '../../operations/define.js';
import { projectId } from '../../operations/shared.js';
import { buildOpenApi } from '../../src/http/openapi.js';
import { createClient } from '../../src/client/index.js';
import { runInProcess } from './helpers.js';

const echo = defineOperation({
  operationId: 'throwaway.echo',
  tag: 'throwaway',
  summary: 'Echo a word a number of times',
  description: 'A descriptor that exists only in this test.',
  method: 'POST',
  path: '/v1/projects/{project_id}/throwaway/{word}',
  scopes: ['read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    word: z.string().min(1).describe('The word to echo.'),
    times: z.number().int().min(1).max(5).default(1).describe('How many times.'),
    loud: z.boolean().optional().describe('Upper-case the echo.'),
  }),
  output: z.object({ echo: z.string(), project_id: z.string() }),
  errors: [],
  example: { word: 'hello', times: 2 },
  handler(input, ctx) {
    const text = Array.from({ length: input.times }, () => input.word).join(' ');
    return { echo: input.loud ? text.toUpperCase() : text, project_id: ctx.project!.id };
  },
});

const operations: AnyOperation[] = [...catalogue, echo];
let t: TestServer;

beforeAll(async () => {
  t = await startTestServer({ options: { operations } });
});
afterAll(() => t.close());

describe('a descriptor added to a copy of the catalogue', () => {
  it('appears as an OpenAPI operation', () => {
    const doc = buildOpenApi(operations, { baseUrl: t.url, mcpUrl: `${t.url}/mcp` }) as { paths: Record<string, Record<string, { operationId: string; requestBody?: unknown }>> };
    const post = doc.paths['/v1/projects/{project_id}/throwaway/{word}']?.post;
    expect(post?.operationId).toBe('throwaway.echo');
    expect(post?.requestBody).toBeDefined();
    expect(buildOpenApi(catalogue, { baseUrl: t.url, mcpUrl: `${t.url}/mcp` })).not.toHaveProperty(['paths', '/v1/projects/{project_id}/throwaway/{word}']);
  });

  it('appears as a client method that calls it', async () => {
    const client = createClient({ baseUrl: t.url, apiKey: t.keys.admin, operations });
    const method = (client as unknown as Record<string, Record<string, (i: unknown) => Promise<unknown>>>).throwaway!.echo!;
    expect(await method({ word: 'hi', times: 3 })).toEqual({ echo: 'hi hi hi', project_id: t.projectId });
    expect(await client.request('throwaway.echo', { word: 'yo', loud: true })).toEqual({ echo: 'YO', project_id: t.projectId });
    expect('throwaway' in createClient({ baseUrl: t.url })).toBe(false);
  });

  it('appears as a CLI command with help, flags and output', async () => {
    const env = { SIGHTLINE_URL: t.url, SIGHTLINE_API_KEY: t.keys.admin };
    const top = await runInProcess(['--help'], env, { operations });
    expect(top.stdout).toMatch(/^ {2}throwaway +echo$/m);
    const tagHelp = await runInProcess(['throwaway', '--help'], env, { operations });
    expect(tagHelp.stdout).toContain('Echo a word a number of times  [read]');
    const help = await runInProcess(['throwaway', 'echo', '--help'], env, { operations });
    expect(help.stdout).toMatch(/--word <string> +\(required\) The word to echo\./);
    expect(help.stdout).toMatch(/--times <integer> +How many times\. \(default 1\)/);
    expect(help.stdout).toMatch(/--loud, --no-loud +Upper-case the echo\./);
    expect(help.stdout).toContain('sightline throwaway echo --word hello --times 2');
    const run = await runInProcess(['throwaway', 'echo', '--word', 'ok', '--times', '2', '--loud'], env, { operations });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/^echo +OK OK$/m);
    const without = await runInProcess(['throwaway', 'echo', '--word', 'ok'], env);
    expect(without.code).toBe(2);
  });
});
