// WHEP playback or WHIP publishing in Debian's headless Chromium through
// tests/browser/webrtc.html (served by the tests on its own origin). Plays or publishes
// for <seconds>, then DELETEs the session and prints one JSON line:
// {ok, resource, postStatus, deleteStatus, first, last, log} where first/last are
// getStats reports (codec, packets, framesDecoded, ...) 1 s after connecting and at
// the end. A failed POST prints ok=false with the error.
//
//   node tests/browser/webrtc.mjs <page URL> whep <WHEP URL> <seconds>
//   node tests/browser/webrtc.mjs <page URL> whip <WHIP URL> <seconds> [bearer token] [vanish]
// With `vanish` the browser closes at the end without DELETE: a peer that went away.
import { launch } from './chromium.mjs';

const [pageUrl, mode, endpoint, secondsText, token, ending] = process.argv.slice(2);
if (!pageUrl || !['whep', 'whip'].includes(mode) || !endpoint || !secondsText) {
  console.error('usage: node webrtc.mjs <page URL> whep|whip <endpoint> <seconds> [token]');
  process.exit(2);
}
const seconds = Number(secondsText);
const browser = await launch();
const log = [];
let result;
try {
  const page = await browser.newPage();
  page.on('console', (m) => log.push(`console.${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => log.push(`pageerror: ${e.message}`));
  await page.goto(pageUrl);
  let resource;
  try {
    resource = mode === 'whep'
      ? await page.evaluate((url) => window.whep(url), endpoint)
      : await page.evaluate(([url, t]) => window.whip(url, t), [endpoint, token || '']);
  } catch (e) {
    const postStatus = await page.evaluate(() => window.state.postStatus);
    result = { ok: false, error: e.message.split('\n')[0], postStatus };
  }
  if (!result) {
    await page.waitForFunction(() => window.pc.connectionState === 'connected', null, { timeout: 20_000 })
      .catch(() => log.push('not connected after 20 s'));
    await page.waitForTimeout(1000);
    const first = await page.evaluate(() => window.report());
    await page.waitForTimeout(Math.max(0, seconds * 1000 - 1000));
    const last = await page.evaluate(() => window.report());
    const deleteStatus = ending === 'vanish' ? null : await page.evaluate(() => window.end());
    const postStatus = await page.evaluate(() => window.state.postStatus);
    result = { ok: true, resource, postStatus, deleteStatus, first, last };
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify({ ...result, log }));
