import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('documentation links', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.close());

  it('serves the README at /docs, linked from the index and from error doc_url', async () => {
    const index = (await (await fetch(`${t.url}/`)).json()) as { links: { docs: string } };
    const docs = await fetch(index.links.docs.replace(t.s.config.baseUrl, t.url));
    expect(docs.status).toBe(200);
    expect(docs.headers.get('content-type')).toContain('text/markdown');
    expect(await docs.text()).toContain('npm install && npm start');

    const err = (await (await fetch(`${t.url}/v1/projects`)).json()) as { doc_url: string };
    expect(err.doc_url).toBe(`${t.s.config.baseUrl}/docs#unauthenticated`);
  });
});
