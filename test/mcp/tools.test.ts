/**
 * The two tools as an agent sees them: names, safety hints, and descriptions that teach the
 * search → execute flow, the `api` shape, both pagination styles and the limits (no snapshot: each
 * thing the agent must learn is asserted on its own).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { resolveLimits } from '../../sandbox/limits.js';
import { toolDescriptions } from '../../src/mcp/server.js';
import { startTestServer } from '../helpers/server.js';
import { inMemoryClient } from './helpers.js';

const t = await startTestServer();
afterAll(() => t.close());
const client = await inMemoryClient(t, t.keys.admin);
const { tools } = await client.listTools();
const byName = Object.fromEntries(tools.map((x) => [x.name, x]));

describe('tools/list', () => {
  it('lists exactly the two Code Mode tools', () => {
    expect(tools.map((x) => x.name).sort()).toEqual(['execute', 'search']);
  });

  it('declares safety hints on both tools', () => {
    expect(byName.search!.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, openWorldHint: false });
    expect(byName.execute!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, openWorldHint: false });
  });

  it('describes the inputs: search takes query and limit or an operationId, execute takes code', () => {
    expect(Object.keys(byName.search!.inputSchema.properties ?? {}).sort()).toEqual(['limit', 'operationId', 'query']);
    expect(byName.search!.inputSchema.required ?? []).toEqual([]);
    expect(Object.keys(byName.execute!.inputSchema.properties ?? {})).toEqual(['code']);
    expect(byName.execute!.outputSchema?.properties).toHaveProperty('calls');
  });

  it('gives the agent server instructions naming both steps', () => {
    const instructions = client.getInstructions() ?? '';
    expect(instructions).toContain('search');
    expect(instructions).toContain('execute');
    expect(instructions).toContain('api.<tag>.<verb>');
  });
});

describe('the search description', () => {
  const d = () => byName.search!.description!;
  it('explains the search → execute flow', () => {
    expect(d()).toMatch(/search.*then|\(1\) `search`.*\(2\) `execute`/s);
    expect(d()).toContain('execute');
  });
  it('says what a hit holds: signatures, missing scopes and a ready call, and how to get one operation in full', () => {
    for (const word of ['operationId', 'risk', 'missing_scopes', 'TypeScript', '`call`', 'await api.feedback.list', 'best 3 hits', '`limit` up to 10']) expect(d()).toContain(word);
    expect(d()).toContain('with `operationId` instead of `query`');
  });
  it('says project_id may be left out', () => {
    expect(d()).toContain('project_id');
  });
});

describe('the execute description', () => {
  const d = () => byName.execute!.description!;
  it('explains the api shape: api.<tag>.<verb>(input) and api.call(operationId, input)', () => {
    expect(d()).toContain('api.<tag>.<verb>(input)');
    expect(d()).toContain('api.call("<operationId>", input)');
    expect(d()).toContain('body of an async function');
    expect(d()).toContain('return');
  });
  it('explains how failed calls surface (status, code, message) and that logs come back', () => {
    expect(d()).toContain('`status`, `code` and `message`');
    expect(d()).toContain('console.log');
  });
  it('teaches offset pagination: next page offset + limit while offset + limit < total', () => {
    expect(d()).toContain('offset + limit < total');
    expect(d()).toMatch(/offset \+= /);
  });
  it('teaches cursor pagination with a loop passing next_cursor until it is null', () => {
    expect(d()).toContain('next_cursor');
    expect(d()).toContain('until `next_cursor` is null');
    expect(d()).toMatch(/do \{.*cursor \}\);.*cursor = page\.next_cursor;.*\} while \(cursor\)/);
  });
  it('states the limits: 10 s wall clock with the wait included, 64 MiB, 100 calls, 256 KiB result and logs, 2 executes at once', () => {
    expect(d()).toContain('10 s wall clock (time waiting for a sandbox worker included)');
    expect(d()).toContain('2 executes at once per credential');
    expect(d()).toContain('counts against your credential\'s request rate limit');
    expect(d()).toContain('64 MiB memory');
    expect(d()).toContain('100 operation calls');
    expect(d()).toContain('256 KiB of result');
    expect(d()).toContain('256 KiB of logs');
  });
  it('states the result shape', () => {
    expect(d()).toContain('{ result, logs, calls: [{ operationId, status, ms }], error, hint, time: { queued_ms, total_ms }, rate_limit: { limit, remaining, reset_seconds } }');
  });
  it('follows configured limits rather than fixed numbers', () => {
    const text = toolDescriptions(resolveLimits({ wallClockMs: 2500, maxCalls: 7 })).execute;
    expect(text).toContain('2.5 s wall clock');
    expect(text).toContain('7 operation calls');
  });
});
