/**
 * The call console in a real browser (Debian's Chromium driven by playwright-core): paste a key,
 * submit calls through the page and the API, watch a pending call turn completed without a
 * reload, search, filter, open a call, see a 400's field errors next to their fields, use it at
 * phone width, and read the operator page. Screenshots go to CONSOLE_SCREENSHOT_DIR (default a
 * temp folder) and are printed, never committed.
 *
 * Without Chromium the suite is skipped with one line, unless REQUIRE_BROWSER=1 or
 * REQUIRE_BACKENDS is set (CI), where a missing browser fails the run.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Browser, chromium, type Page, type Route } from 'playwright-core';
import { createConversationAnalyser } from '../../shared/adapters/analysis/conversation-analyser.ts';
import type { Analyser } from '../../shared/ports/analyser.ts';
import { ADMIN_TOKEN } from '../support/ingress-harness.ts';
import type { PipelineHarness } from '../support/pipeline-harness.ts';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../support/embedded-pipeline.ts';

// The page's globals, for functions that run in the browser (page.evaluate): this project is
// typechecked without the DOM library, which the service's code must not use.
declare const document: any;
declare const location: any;
declare const NodeFilter: { SHOW_TEXT: number };
type HTMLElement = { innerText: string };

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const browserRequired = process.env.REQUIRE_BROWSER === '1' || Boolean(process.env.REQUIRE_BACKENDS);
const missing = existsSync(CHROMIUM)
  ? undefined
  : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`;
if (missing && browserRequired)
  throw new Error(`the browser suite is required (REQUIRE_BROWSER / REQUIRE_BACKENDS) but ${missing}`);
if (missing) console.log(`# skipping browser suites: ${missing}`);

const shots = process.env.CONSOLE_SCREENSHOT_DIR ?? join(tmpdir(), 'console-screenshots');

/** The built-in analyser, except that a transcript containing HOLD waits until released. */
const gatedAnalyser = () => {
  const real = createConversationAnalyser();
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const analyser: Analyser = {
    describe: () => real.describe(),
    analyse: async (input, options) => {
      if (input.transcript.includes('HOLD')) await gate;
      return real.analyse(input, options);
    },
  };
  return { analyser, release: () => release() };
};

describe('call console in Chromium', { skip: missing, timeout: 180_000 }, () => {
  let pipeline: EmbeddedPipeline;
  const gated = gatedAnalyser();
  let h: PipelineHarness;
  let browser: Browser;
  let page: Page;
  let base: string;
  let key: string;

  const shot = async (name: string) => {
    const path = join(shots, `${name}.png`);
    await page.screenshot({ path, fullPage: true });
    console.log(`# screenshot ${path}`);
  };
  const rowOf = (text: string) => page.locator('#calls li.call', { hasText: text });

  /** A tab of its own with the key already pasted (the suite's tab goes on unharmed if it breaks). */
  const tab = async (viewport = { width: 1280, height: 900 }) => {
    const opened = await browser.newPage({ viewport });
    opened.setDefaultTimeout(15_000);
    await opened.addInitScript(`sessionStorage.setItem('console.apiKey', ${JSON.stringify(key)})`);
    return opened;
  };
  /** Answers the call's own reads as if the call were still being analysed (so the page refreshes). */
  const asPending = async (route: Route, delayMs = 0) => {
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    try {
      const response = await route.fetch();
      const call = (await response.json()) as Record<string, unknown>;
      await route.fulfill({ response, json: { ...call, status: 'pending', stage: 'analysing', analysis: null } });
    } catch {
      // The page gave the request up (it left the call).
    }
  };
  /** Waits until `count()` reaches `target`. */
  const until = async (count: () => number, target: number, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs;
    while (count() < target) {
      assert.ok(Date.now() < deadline, `still ${count()} of ${target} after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  /** Submits a call through the API and waits until the read API shows it finished. */
  const settledCall = async (body: Record<string, unknown>) => {
    const answer = await h.ingest({ key, body });
    assert.equal(answer.statusCode, 201, answer.body);
    const { callId } = answer.json<{ callId: string }>();
    for (let tries = 0; tries < 200; tries++) {
      const read = await h.ingress.app.inject({ url: `/api/calls/${callId}`, headers: { 'x-api-key': key } });
      if (read.statusCode === 200 && read.json<{ status: string }>().status !== 'pending') return callId;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`call ${callId} did not finish`);
  };

  before(async () => {
    mkdirSync(shots, { recursive: true });
    pipeline = await openEmbeddedPipeline({ analyser: gated.analyser });
    h = pipeline.h;
    await h.ingress.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(h.ingress.app.server.address() as { port: number }).port}`;
    key = (await h.team()).key;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(15_000);
  });
  after(async () => {
    gated.release();
    await browser?.close();
    await pipeline?.close();
  });

  test('the page ships its own assets under a strict content security policy', async () => {
    const response = await page.goto(`${base}/console`);
    assert.equal(response?.status(), 200);
    assert.match(response.headers()['content-security-policy'] ?? '', /script-src 'self'/);
    await page.getByLabel('API key', { exact: true }).waitFor();
  });

  test('a pasted key is kept in the tab and sent only as X-API-Key; a submitted call and an API call are listed; a pending call turns completed without a reload', async () => {
    const sent: { url: string; key?: string }[] = [];
    page.on('request', (request) => sent.push({ url: request.url(), key: request.headers()['x-api-key'] }));
    await page.getByLabel('API key', { exact: true }).fill(key);
    await page.getByRole('button', { name: 'Use this key' }).click();
    await page.locator('#live').waitFor();
    assert.equal(await page.evaluate("sessionStorage.getItem('console.apiKey')"), key);
    await page.evaluate("window.marker = 'same document'");

    // Through the page's form: held in analysis until released.
    await page.getByRole('link', { name: 'Submit a call' }).click();
    await page
      .getByLabel('Transcript (Speaker: text lines)')
      .fill('Rep: HOLD this one, Dana. What do you use today?\nDana: Spreadsheets, and the price worries me.');
    await page.getByLabel('Rep name').fill('Sam Seller');
    await page.getByLabel('Title').fill('Pricing follow-up with Dana');
    await page.getByLabel('Tags (comma-separated)').fill('demo, pricing');
    await page.getByRole('button', { name: 'Submit the call' }).click();
    await page.locator('#submit-answer').waitFor();
    const answer = JSON.parse(await page.locator('#submit-answer').innerText()) as { callId: string; status: string };
    assert.equal(answer.status, 'pending');

    // Through the API.
    const viaApi = await h.ingest({
      key,
      body: {
        transcript: 'Rep: Hi Lee, shall we book the demo?\nLee: Yes, Friday works.',
        repName: 'Ana Agent',
        callTitle: 'Demo booking with Lee',
        tags: ['api'],
      },
    });
    assert.equal(viaApi.statusCode, 201);

    await page.getByRole('link', { name: 'Call list' }).click();
    await rowOf('Ana Agent').locator('[data-status="completed"]').waitFor({ timeout: 20_000 });
    await rowOf('Sam Seller').locator('[data-status="pending"]').waitFor();
    assert.match(await page.locator('#live').innerText(), /updating/i);
    await shot('list-pending-desktop');
    gated.release();
    await rowOf('Sam Seller').locator('[data-status="completed"]').waitFor({ timeout: 20_000 });
    await page.locator('#live', { hasText: 'Up to date' }).waitFor();
    assert.equal(await page.evaluate('window.marker'), 'same document', 'the page was not reloaded');
    assert.ok(!sent.some((r) => r.url.includes(key)), 'the key never appears in a URL');
    assert.ok(
      sent.filter((r) => r.url.includes('/api/')).every((r) => r.key === key),
      'every API request carries the key in X-API-Key',
    );
    await shot('list-desktop');
  });

  test('search, tag and status filters use the read API', async () => {
    await page.getByLabel('Search title or rep').fill('ana agent');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.locator('#calls li.call', { hasText: 'Sam Seller' }).waitFor({ state: 'detached' });
    // The list is emptied before the answer is drawn: wait for the row the search finds.
    await rowOf('Ana Agent').waitFor();
    const reps = async () =>
      (await page.locator('#calls li.call').allInnerTexts()).map((row) =>
        row.includes('Ana Agent') ? 'Ana Agent' : row.includes('Sam Seller') ? 'Sam Seller' : row,
      );
    assert.deepEqual(await reps(), ['Ana Agent']);

    await page.getByLabel('Search title or rep').fill('');
    await page.getByLabel('Tag').fill('pricing');
    await page.getByRole('button', { name: 'Apply' }).click();
    await rowOf('Sam Seller').waitFor();
    await page.locator('#calls li.call', { hasText: 'Ana Agent' }).waitFor({ state: 'detached' });
    assert.deepEqual(await reps(), ['Sam Seller']);

    await page.getByLabel('Tag').fill('');
    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.locator('#list-message', { hasText: 'No calls match.' }).waitFor();
    assert.equal(await page.locator('#calls li.call').count(), 0);
    await page.getByLabel('Status').selectOption('');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.locator('#calls li.call').nth(1).waitFor();
  });

  test("a call's page shows its transcript turns, summary, score with components, insights with evidence, tags, attribution and timeline", async () => {
    const listed = await rowOf('Sam Seller').locator('.title').innerText();
    await rowOf('Sam Seller').getByRole('link').click();
    await page.locator('#summary').waitFor();
    assert.equal(await page.locator('#call-title').innerText(), listed);
    assert.deepEqual(await page.locator('#transcript .speaker').allInnerTexts(), ['Rep:', 'Dana:']);
    assert.match(await page.locator('#score').innerText(), /^\d+ \/ 100$/);
    assert.ok((await page.locator('section[aria-label="Score"] tbody tr').count()) > 0, 'score components');
    assert.ok((await page.locator('#insights li').count()) > 0, 'insights');
    const timeline = await page.locator('#timeline li').allInnerTexts();
    assert.ok(
      timeline[0]!.endsWith('CallSubmitted') && timeline.at(-1)!.endsWith('CallCompleted'),
      timeline.join(' | '),
    );
    assert.match(await page.locator('section[aria-label="Attribution"]').innerText(), /owner/);
    await shot('call-desktop');
  });

  test("a 400's field errors appear next to their fields", async () => {
    await page.getByRole('link', { name: 'Submit a call' }).click();
    await page.getByLabel('Rep e-mail').fill('not-an-email');
    await page.getByRole('button', { name: 'Submit the call' }).click();
    await page.locator('#submit-answer').waitFor();
    const answer = JSON.parse(await page.locator('#submit-answer').innerText()) as { status: number; code: string };
    assert.equal(answer.code, 'VALIDATION_FAILED');
    assert.match(await page.locator('#e-repEmail').innerText(), /repEmail/);
    assert.equal(await page.getByLabel('Rep e-mail').getAttribute('aria-invalid'), 'true');
    assert.notEqual(
      await page.locator('#e-transcript').innerText(),
      '',
      'the missing transcript or recording is named next to the transcript',
    );
    await shot('form-errors-desktop');
  });

  test('usable at phone width: no horizontal scroll, every control reachable', async () => {
    await page.setViewportSize({ width: 375, height: 812 });
    await page.getByRole('link', { name: 'Call list' }).click();
    await page.locator('#calls li.call').nth(1).waitFor();
    const overflow = await page.evaluate<number>(
      'document.documentElement.scrollWidth - document.documentElement.clientWidth',
    );
    assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px at 375 px`);
    await page.reload();
    await page.locator('#calls li.call').nth(1).waitFor();
    await page.keyboard.press('Tab');
    assert.equal(
      await page.evaluate('document.activeElement?.textContent'),
      'Skip to content',
      'the first Tab reaches the skip link',
    );
    await shot('list-phone');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  test('a transcript line that is not a speaker turn, however long, is read in linear time; a lone CR ends a line', async () => {
    // "A: ", 200,000 blanks, "x", CR, "y": a pattern that backtracks its blanks took minutes here.
    const callId = await settledCall({
      transcript: `A: ${' '.repeat(200_000)}x\ry\rB: z`,
      callTitle: 'Long blank run',
      disableAiTitleGeneration: true,
    });
    const own = await tab();
    try {
      const started = Date.now();
      await own.goto(`${base}/console#/calls/${encodeURIComponent(callId)}`);
      await own.locator('#transcript').waitFor();
      assert.ok(Date.now() - started < 10_000, `the call page took ${Date.now() - started} ms`);
      assert.deepEqual(await own.locator('#transcript .speaker').allInnerTexts(), ['A:', 'B:']);
      assert.equal(
        await own
          .locator('#transcript li')
          .first()
          .evaluate((li) => li.lastChild?.textContent),
        'x\ny',
      );
    } finally {
      await own.close();
    }
  });

  test('long unbroken texts wrap at phone width; transcript, notes and deal notes keep their white space and line breaks', async () => {
    const long = await settledCall({
      transcript: `Rep: ${'x'.repeat(3000)}`,
      repName: 'N'.repeat(200),
      repEmail: `${'e'.repeat(60)}@example.test`,
      tags: ['z'.repeat(50)],
      notes: 'W'.repeat(2000),
      dealSize: 9007199254740991,
      dealNotes: 'D'.repeat(2000),
    });
    const verbatim = await settledCall({
      transcript: 'Rep: one  two\n    indented\n\nthree\nDana: four',
      notes: 'a  b\n  c',
      dealSize: 1,
      dealNotes: 'd  e\n\tf',
    });
    const own = await tab({ width: 375, height: 812 });
    try {
      await own.goto(`${base}/console#/calls/${encodeURIComponent(long)}`);
      await own.locator('#timeline').waitFor();
      const overflow = await own.evaluate<number>(
        'document.documentElement.scrollWidth - document.documentElement.clientWidth',
      );
      assert.ok(overflow <= 0, `the call page scrolls sideways by ${overflow} px at 375 px`);

      await own.goto(`${base}/console#/calls/${encodeURIComponent(verbatim)}`);
      await own.locator('#timeline').waitFor();
      assert.deepEqual(
        await own.locator('#transcript li').evaluateAll((items) => items.map((li) => (li as HTMLElement).innerText)),
        ['Rep:one  two\n    indented\n\nthree', 'Dana:four'],
      );
      assert.equal(await own.locator('#notes').innerText(), 'a  b\n  c');
      assert.equal(await own.locator('#deal-notes').innerText(), 'd  e\n\tf');
    } finally {
      await own.close();
    }
  });

  test('a bidirectional control in one value does not reorder the values drawn after it', async () => {
    const callId = await settledCall({
      transcript: 'Sam\u202eR: hello there\nDana: ok',
      repName: 'x\u202ey',
      repEmail: 'dana@bidi.test',
    });
    const own = await tab();
    try {
      await own.goto(`${base}/console#/calls/${encodeURIComponent(callId)}`);
      await own.locator('#timeline').waitFor();
      // Left edges of the first and the last character of `text` where it is drawn in `selector`.
      const edges = (selector: string, text: string) =>
        own.locator(selector).evaluate((root, wanted) => {
          const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
          for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            const at = node.textContent!.indexOf(wanted);
            if (at < 0) continue;
            return [at, at + wanted.length - 1].map((i) => {
              const range = document.createRange();
              range.setStart(node, i);
              range.setEnd(node, i + 1);
              return range.getBoundingClientRect().left;
            });
          }
          throw new Error(`${wanted} is not drawn`);
        }, text);
      const [emailFirst, emailLast] = await edges('article.detail > p:has(.status)', 'dana@bidi.test');
      assert.ok(emailFirst! < emailLast!, 'the e-mail after the rep name reads left to right');
      const [turnFirst, turnLast] = await edges('#transcript li:first-child', 'hello there');
      assert.ok(turnFirst! < turnLast!, "the turn's text after the speaker reads left to right");
    } finally {
      await own.close();
    }
  });

  test("a late answer never draws over the view that replaced it, and a left call's refresh stops", async () => {
    const own = await tab();
    const detail = /\/api\/calls\/[^/?]+(\/events)?$/;
    try {
      await own.goto(`${base}/console#/`);
      const callId = (await own.locator('#calls li.call').first().getAttribute('data-call-id'))!;
      const callHash = `#/calls/${encodeURIComponent(callId)}`;
      await own.route(detail, async (route) => {
        await new Promise((resolve) => setTimeout(resolve, 1500));
        await route.continue().catch(() => undefined);
      });
      await own.evaluate((hash) => (location.hash = hash), callHash);
      await own.waitForTimeout(300);
      await own.evaluate(() => (location.hash = '#/'));
      await own.locator('#calls li.call').first().waitFor();
      await own.waitForTimeout(2000);
      assert.equal(await own.locator('article.detail').count(), 0, 'the slow call page is not drawn over the list');
      assert.equal(await own.locator('#calls').count(), 1);
      await own.unroute(detail);

      let asked = 0;
      await own.route(/\/api\/calls\/[^/?]+$/, (route) => {
        asked++;
        return asPending(route, 800);
      });
      await own.evaluate((hash) => (location.hash = hash), callHash);
      await own.locator('article.detail').waitFor();
      await until(() => asked, 2); // a refresh is in flight
      await own.evaluate(() => (location.hash = '#/submit'));
      const left = asked;
      await own.waitForTimeout(4500);
      assert.equal(asked, left, 'the call is not asked for again once left');
      assert.equal(await own.locator('article.detail').count(), 0);
      assert.equal(await own.locator('#submit-form').count(), 1);
    } finally {
      await own.close();
    }
  });

  test("a pending call's refresh keeps keyboard focus where it was", async () => {
    const own = await tab();
    try {
      await own.goto(`${base}/console#/`);
      const callId = (await own.locator('#calls li.call').first().getAttribute('data-call-id'))!;
      let asked = 0;
      await own.route(/\/api\/calls\/[^/?]+$/, (route) => {
        asked++;
        return asPending(route);
      });
      await own.evaluate((id) => (location.hash = `#/calls/${encodeURIComponent(id)}`), callId);
      await own.locator('article.detail').waitFor();
      await own.locator('article.detail a[href="#/"]').focus();
      await until(() => asked, 3, 10_000); // two refreshes
      await own.waitForTimeout(300);
      assert.equal(
        await own.evaluate(() => document.activeElement?.closest('article') && document.activeElement.textContent),
        '← All calls',
      );
    } finally {
      await own.close();
    }
  });

  test('a key that cannot be sent, a dropped connection, a 503 while live and a malformed call address are shown', async () => {
    const fresh = await browser.newPage();
    try {
      await fresh.goto(`${base}/console`);
      await fresh.getByLabel('API key', { exact: true }).fill('pk_…');
      await fresh.getByRole('button', { name: 'Use this key' }).click();
      await fresh.locator('#key-error', { hasText: 'cannot be sent' }).waitFor();
      assert.match(await fresh.locator('#key-error').innerText(), /U\+2026/);
      assert.equal(await fresh.evaluate("sessionStorage.getItem('console.apiKey')"), null);
      assert.ok(await fresh.locator('#key-panel').isVisible());
    } finally {
      await fresh.close();
    }

    const own = await tab();
    try {
      await own.goto(`${base}/console#/`);
      const callId = (await own.locator('#calls li.call').first().getAttribute('data-call-id'))!;
      await own.route(/\/api\/calls\//, (route) => route.abort('connectionreset'));
      await own.evaluate((id) => (location.hash = `#/calls/${encodeURIComponent(id)}`), callId);
      await own.locator('.error[role="alert"]', { hasText: 'could not be reached' }).waitFor();
      assert.equal(await own.locator('#calls').count(), 0, 'the list is no longer shown');
      await own.unrouteAll({ behavior: 'ignoreErrors' });

      await own.evaluate(() => (location.hash = '#/calls/abc%E0%A4%A'));
      await own.locator('.error[role="alert"]', { hasText: 'malformed' }).waitFor();
      assert.equal(await own.locator('article.detail').count(), 0);

      let reads = 0;
      await own.route(/\/api\/calls\?/, async (route) => {
        reads++;
        if (reads === 2)
          return route.fulfill({
            status: 503,
            contentType: 'application/problem+json',
            headers: { 'retry-after': '1' },
            body: JSON.stringify({ status: 503, code: 'SERVICE_UNAVAILABLE', detail: 'The service is busy.' }),
          });
        const response = await route.fetch();
        const list = (await response.json()) as { calls: Record<string, unknown>[] };
        list.calls[0] = { ...list.calls[0], status: 'pending', stage: 'analysing' };
        return route.fulfill({ response, json: list });
      });
      await own.evaluate(() => (location.hash = '#/'));
      await own.locator('#list-message', { hasText: 'The service is busy.' }).waitFor();
      await until(() => reads, 4, 12_000);
      await own.locator('#live', { hasText: 'updating' }).waitFor();
      assert.equal(await own.locator('#list-message').innerText(), '');
    } finally {
      await own.close();
    }
  });

  test('the skip link moves focus to the content without leaving the page', async () => {
    const own = await tab();
    try {
      await own.goto(`${base}/console#/submit`);
      await own.getByLabel('Title').fill('Half-written title');
      await own.locator('#skip').focus();
      await own.keyboard.press('Enter');
      await own.waitForTimeout(300);
      assert.equal(await own.evaluate(() => document.activeElement?.id), 'main');
      assert.equal(await own.evaluate(() => location.hash), '#/submit');
      assert.equal(await own.getByLabel('Title').inputValue(), 'Half-written title');
    } finally {
      await own.close();
    }
  });

  test('the tag filter takes a 50-character tag of emoji and keeps a leading U+FEFF', async () => {
    const emoji = '😀'.repeat(50);
    const callId = await settledCall({ transcript: 'Rep: tags', tags: [emoji, '\ufeffvip'] });
    const own = await tab();
    try {
      await own.goto(`${base}/console#/`);
      for (const tag of [emoji, '\ufeffvip']) {
        await own.getByLabel('Tag').fill(tag);
        await own.getByRole('button', { name: 'Apply' }).click();
        await own
          .locator(`#calls li.call[data-call-id="${callId}"], #list-message:text("No calls match.")`)
          .first()
          .waitFor();
        assert.equal(await own.locator(`#calls li.call[data-call-id="${callId}"]`).count(), 1, JSON.stringify(tag));
      }
    } finally {
      await own.close();
    }
  });

  test('a double click on "Submit the call" sends one request, with an Idempotency-Key', async () => {
    const own = await tab();
    try {
      const posts: (string | undefined)[] = [];
      own.on('request', (request) => {
        if (request.method() === 'POST') posts.push(request.headers()['idempotency-key']);
      });
      await own.goto(`${base}/console#/submit`);
      await own.getByLabel('Transcript (Speaker: text lines)').fill('Rep: sent once');
      await own.getByRole('button', { name: 'Submit the call' }).dblclick();
      await own.locator('#submit-answer').waitFor();
      await own.waitForTimeout(500);
      assert.equal(posts.length, 1, `${posts.length} requests`);
      assert.match(posts[0] ?? '', /^[!-~]{1,255}$/);
    } finally {
      await own.close();
    }
  });

  test('the live indicator keeps its size whatever it says', async () => {
    const own = await tab();
    try {
      await own.goto(`${base}/console#/`);
      await own.locator('#live', { hasText: 'Up to date' }).waitFor();
      const idle = await own.locator('#live').evaluate((live) => live.getBoundingClientRect().width);
      await own.route(/\/api\/calls\?/, async (route) => {
        const response = await route.fetch();
        const list = (await response.json()) as { calls: Record<string, unknown>[] };
        list.calls[0] = { ...list.calls[0], status: 'pending', stage: 'analysing' };
        await route.fulfill({ response, json: list });
      });
      await own.getByRole('button', { name: 'Apply' }).click();
      await own.locator('#live', { hasText: 'updating' }).waitFor();
      assert.equal(await own.locator('#live').evaluate((live) => live.getBoundingClientRect().width), idle);
    } finally {
      await own.close();
    }
  });

  test('the operator page shows each projection with the admin token', async () => {
    await page.getByRole('link', { name: 'Operator' }).click();
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Show projections' }).click();
    await page.locator('#projections tbody tr').first().waitFor();
    const rows = await page.locator('#projections tbody tr').allInnerTexts();
    assert.ok(
      rows.some((row) => row.startsWith('call-history')),
      rows.join(' | '),
    );
    await shot('operator-desktop');
  });
});
