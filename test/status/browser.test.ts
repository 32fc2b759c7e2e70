/**
 * The public status page in headless Chromium with JavaScript disabled: it shows the components, a
 * group and an open incident, the subscribe form posts under the page's own CSP, and a screenshot is
 * kept as an artefact (test-artifacts/status-page.png, gitignored). A private page is 404 to an
 * anonymous browser.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { readOutbox } from '../../src/core/mail.js';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
const SKIP_REASON = `browser test skipped: ${CHROMIUM} not found; run scripts/install-chromium.sh`;
const ARTEFACTS = resolve(import.meta.dirname, '../../test-artifacts');

if (!hasChromium) {
  console.warn(SKIP_REASON);
  describe('the public status page in headless Chromium', () => {
    it(`is not run on this machine (${SKIP_REASON})`, () => {
      console.warn(SKIP_REASON);
    });
  });
} else {
  describe('the public status page in headless Chromium', () => {
    let t: TestServer;
    let context: BrowserContext;
    let profile: string;
    const clock = Date.parse('2026-05-04T09:30:00Z');

    beforeAll(async () => {
      t = await startTestServer({ now: () => clock });
      const P = `/v1/projects/${t.projectId}`;
      const admin = (path: string, body: unknown) => api(t, 'POST', P + path, { key: t.keys.admin, body });
      const page = (await admin('/status-pages', { name: 'Acme Cloud', slug: 'acme-cloud', isPublic: true })).body;
      await admin('/status-pages', { name: 'Internal', slug: 'internal-ops' });
      const checkout = (await admin('/monitors', { name: 'Checkout API', kind: 'cron', slug: 'checkout', schedule: '*/5 * * * *' })).body;
      const group = (await admin(`/status-pages/${page.id}/components`, { kind: 'group', name: 'Payments' })).body;
      await admin(`/status-pages/${page.id}/components`, { kind: 'monitor', name: 'Checkout', parent_id: group.id, monitor_name: 'Checkout API' });
      await admin(`/status-pages/${page.id}/components`, { kind: 'static', name: 'Email delivery', status: 'degraded', external_url: 'https://status.example-mail.test/' });
      await admin(`/status-pages/${page.id}/components`, { kind: 'monitor', name: 'Checkout (90 days)', monitor_id: checkout.id });
      // 90 days of history for the bars: mostly up, a degraded day and an outage day.
      for (let d = 0; d < 90; d++) {
        const status = d === 20 ? 'down' : d === 61 ? 'degraded' : 'ok';
        await t.s.services.monitors.addResult(t.projectId, checkout.id, { at_ms: clock - d * 86_400_000, status, latency_ms: 1000, http_status: null, error: null, region: null, check_in_id: null });
      }
      await admin('/incidents', { title: 'Card payments failing', message: 'We are investigating failed card payments.', impact: 'major', monitor_id: checkout.id });

      profile = mkdtempSync(join(tmpdir(), 'sightline-chromium-'));
      context = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        javaScriptEnabled: false,
        viewport: { width: 1000, height: 1100 },
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
        timeout: 30_000,
      });
    });

    afterAll(async () => {
      await context?.close();
      await t?.close();
      if (profile) rmSync(profile, { recursive: true, force: true });
    });

    it('shows the components, the group and the open incident without JavaScript, and keeps a screenshot', async () => {
      const page = await context.newPage();
      const res = await page.goto(`${t.url}/status/acme-cloud`);
      expect(res!.status()).toBe(200);
      const text = await page.textContent('main');
      for (const s of ['Acme Cloud', 'Payments', 'Checkout', 'Email delivery', 'Degraded performance', 'Ongoing incidents', 'Card payments failing', 'We are investigating failed card payments.', 'INC-1']) {
        expect(text).toContain(s);
      }
      expect(await page.locator('.bars .bar').count()).toBe(90);
      expect(await page.locator('.bars .bar.down').count()).toBe(1);
      expect(await page.locator('.bars .bar.degraded').count()).toBe(1);
      expect(await page.textContent('.legend')).toContain('98.89% uptime');
      expect(await page.locator('.banner').textContent()).toBe('Some systems are degraded');
      mkdirSync(ARTEFACTS, { recursive: true });
      const shot = join(ARTEFACTS, 'status-page.png');
      await page.screenshot({ path: shot, fullPage: true });
      expect(statSync(shot).size).toBeGreaterThan(10_000);

      // The subscribe form works by clicking, under the page's CSP and without scripts.
      await page.fill('#email', 'ops@example.com');
      await Promise.all([page.waitForURL(/\/subscribe$/), page.click('form.subscribe button')]);
      expect(await page.textContent('main')).toContain('Check your email');
      await t.s.services.scheduler.runDue();
      expect(readOutbox(t.s.config.mail.outboxFile).map((m) => m.to)).toEqual(['ops@example.com']);
      await page.close();
    });

    it('answers 404 to an anonymous browser for a private page', async () => {
      const page = await context.newPage();
      const res = await page.goto(`${t.url}/status/internal-ops`);
      expect(res!.status()).toBe(404);
      expect(await page.textContent('main')).toContain('There is no status page at this address.');
      await page.close();
    });
  });
}
