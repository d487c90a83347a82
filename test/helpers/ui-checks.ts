/**
 * Checks of the asset browser in a real browser (playwright-core), shared by the UI tests: axe-core's accessibility
 * rules, the layout at a viewport (no horizontal scroll, every control on screen), and small page fixtures.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import type { Page } from 'playwright-core';

// Functions given to page.evaluate run in the page, whose globals these are (the tests' tsconfig has no DOM library).
declare const document: any;
declare const window: any;
declare const axe: any;

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS = path.join(__dirname, '..', '..', 'test-artifacts');
export const LAUNCH = {
  executablePath: CHROMIUM,
  args: [
    '--no-sandbox',
    '--disable-background-networking',
    '--disable-gpu',
    '--disable-component-update',
    '--no-first-run',
  ],
};

/** The four viewports of issue 30; the last is 1440×900 at 200 % zoom (CSS pixels halved, twice the device pixels). */
export const VIEWPORTS = [
  { name: 'phone-390x844', viewport: { width: 390, height: 844 }, deviceScaleFactor: 1 },
  { name: 'tablet-768x1024', viewport: { width: 768, height: 1024 }, deviceScaleFactor: 1 },
  { name: 'desktop-1440x900', viewport: { width: 1440, height: 900 }, deviceScaleFactor: 1 },
  { name: 'zoom200-1440x900', viewport: { width: 720, height: 450 }, deviceScaleFactor: 2 },
] as const;

const AXE_SOURCE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/**
 * axe-core run in the page (evaluated through the debugging protocol, which the page's CSP does not govern): the
 * serious and critical violations, as `rule: target` lines.
 */
export async function axeViolations(page: Page, context = 'body'): Promise<string[]> {
  if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) await page.evaluate(AXE_SOURCE);
  const found: { id: string; impact: string; nodes: { target: string[] }[] }[] = await page.evaluate(
    async (ctx) => (await axe.run(document.querySelector(ctx), { resultTypes: ['violations'] })).violations,
    context,
  );
  return found
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}`));
}

/**
 * The layout at this viewport: the page does not scroll sideways, and every control the user can see lies fully
 * inside the window horizontally, big enough to use (`what` names the state in the messages).
 */
export async function layoutProblems(page: Page, what: string): Promise<string[]> {
  return page.evaluate((state) => {
    const problems: string[] = [];
    const W = window.innerWidth;
    const root = document.documentElement;
    if (root.scrollWidth > W) problems.push(`${state}: the page is ${root.scrollWidth} px wide in a ${W} px window`);
    if (document.body.scrollWidth > W)
      problems.push(`${state}: the body is ${document.body.scrollWidth} px wide in a ${W} px window`);
    const controls = [...document.querySelectorAll('button, a[href], input, select, textarea, [tabindex="0"]')];
    for (const el of controls) {
      if (el.closest('.sr-only') || el.classList.contains('sr-only')) continue;
      if (!el.checkVisibility({ checkOpacity: false, checkVisibilityCSS: true })) continue;
      const r = el.getBoundingClientRect();
      const name = (el.getAttribute('aria-label') || el.textContent || el.id || el.tagName).trim().slice(0, 40);
      if (r.width < 16 || r.height < 16)
        problems.push(`${state}: "${name}" is ${Math.round(r.width)}×${Math.round(r.height)} px`);
      if (r.left < -0.5 || r.right > W + 0.5)
        problems.push(`${state}: "${name}" spans x ${Math.round(r.left)}–${Math.round(r.right)} of ${W}`);
    }
    return problems;
  }, what);
}

/** True when the element is on screen (inside the window both ways). */
export async function onScreen(page: Page, selector: string): Promise<boolean> {
  return page
    .locator(selector)
    .first()
    .evaluate((el: any) => {
      const r = el.getBoundingClientRect();
      return (
        r.width > 0 &&
        r.height > 0 &&
        r.left >= 0 &&
        r.top >= 0 &&
        r.right <= window.innerWidth &&
        r.bottom <= window.innerHeight
      );
    });
}

/** A small picture that looks like one: a two-hue gradient with a disc, different for every seed. */
export function picture(seed: number): Promise<Buffer> {
  const h1 = (seed * 47) % 360;
  const h2 = (h1 + 50) % 360;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="320" height="240">
    <defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1">
      <stop offset="0" stop-color="hsl(${h1},70%,62%)"/><stop offset="1" stop-color="hsl(${h2},65%,38%)"/></linearGradient></defs>
    <rect width="320" height="240" fill="url(#g)"/>
    <circle cx="${90 + ((seed * 37) % 140)}" cy="${80 + ((seed * 23) % 80)}" r="${30 + (seed % 4) * 10}" fill="hsl(${(h1 + 180) % 360},80%,85%)" fill-opacity="0.85"/>
  </svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

/** A safetensors file with this `__metadata__` (kohya keys give the derived `base_model`). */
export function safetensors(meta: Record<string, string>): Buffer {
  const header = Buffer.from(JSON.stringify({ __metadata__: meta }));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(header.length));
  return Buffer.concat([len, header]);
}

/** A quarter second of a 440 Hz tone as 8 kHz mono 16-bit WAV. */
export function wav(): Buffer {
  const rate = 8000;
  const samples = rate / 4;
  const data = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++)
    data.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), i * 2);
  const h = Buffer.alloc(44);
  h.write('RIFF', 0);
  h.writeUInt32LE(36 + data.length, 4);
  h.write('WAVEfmt ', 8);
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36);
  h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

/** A half-second 64x48 VP8 clip (WebM, which every browser plays), made by ffmpeg (a prerequisite of the suite). */
export function webm(): Buffer {
  const r = spawnSync(
    'ffmpeg',
    [
      '-v',
      'error',
      '-f',
      'lavfi',
      '-i',
      'testsrc=size=64x48:rate=10',
      '-t',
      '0.5',
      '-c:v',
      'libvpx',
      '-f',
      'webm',
      '-',
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  if (r.status !== 0) throw new Error(`ffmpeg could not make a WebM clip: ${String(r.stderr)}`);
  return r.stdout;
}
