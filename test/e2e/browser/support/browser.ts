/**
 * Real headless Chromium (the Debian package at /usr/bin/chromium) driven by playwright-core. A launch
 * failure is printed in full and fails the test: these tests never skip silently.
 */
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { Teardown } from '../../../support/stack.js';
import { AUTH_COOKIE } from './mesh.js';

export const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** Launches Chromium; closed at teardown. */
export async function launchBrowser(t: Teardown): Promise<Browser> {
  let browser: Browser;
  try {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, timeout: 30_000 });
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    console.error(`\n*** Chromium failed to launch from ${CHROMIUM} ***\n${detail}\n`);
    throw new Error(`Chromium failed to launch from ${CHROMIUM}: ${detail.split('\n')[0]}`);
  }
  t.teardown(() => browser.close());
  return browser;
}

/**
 * A fresh browser profile (its own cookie jar). With a token, it holds the `authentication_token`
 * cookie for 127.0.0.1, HttpOnly, as the login flow would leave it; cookies ignore ports, so every
 * loopback server of the test receives it.
 */
export async function profile(browser: Browser, token?: string): Promise<BrowserContext> {
  const context = await browser.newContext();
  if (token !== undefined) {
    await context.addCookies([{ name: AUTH_COOKIE, value: token, domain: '127.0.0.1', path: '/', httpOnly: true, sameSite: 'Lax' }]);
  }
  return context;
}

/** Opens a page that records its uncaught errors and console errors. */
export async function openPage(context: BrowserContext, url: string): Promise<{ page: Page; errors: string[] }> {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  await page.goto(url);
  return { page, errors };
}

/** Where screenshots go: outside the repository, overwritten by each run. */
export function screenshotPath(name: string): string {
  const dir = join(tmpdir(), 'lintel-e2e-browser');
  mkdirSync(dir, { recursive: true });
  return join(dir, name);
}

/** Polls `condition` in Node until it holds, or fails after `timeoutMs` naming `what`. */
export async function waitFor(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
