// Drives strom's web console (served by strom at /console/ on the management port) in
// Debian's headless Chromium, as a user would, for tests/tests/console.rs:
// 1. opens it without a token and reads the banner; 2. enters a wrong token, then the
// right one (as typed into the form), reading the banner each time; 3. reads the
// overview's worker table and reloads rules.conf with its button; 4. reads the stream
// list, opens the stream's page, where the HLS player starts by itself, and samples
// video.currentTime for 8 s of wall time; 5. switches to DASH and samples again, reads
// the stream's sessions and disconnects one; 6. downloads the stream's DVR archive as
// MP4 from the DVR page. Prints one JSON line with what it saw. Token `-`: the server
// has none (the banner must say so); stream `-`: stop after the overview.
//
// `--ladder` (after the screenshot path) stops after the stream's details and its ABR
// ladder (the transcoded stream's renditions, read as `ladder`). `--row` stops after the
// stream's row in the stream list (`streamRow`), and reads the cluster registry's table
// there as `clusterRows` (a server with a `Cluster` block).
//
//   node tests/browser/console.mjs <console URL> <token> <app/stream> <screenshot.png> [--ladder|--row]
import { readFileSync } from 'node:fs';
import { launch } from './chromium.mjs';

const [consoleUrl, token, stream, screenshot, mode] = process.argv.slice(2);
if (!consoleUrl || !token || !stream || !screenshot) {
  console.error('usage: node console.mjs <console URL> <token> <app/stream> <screenshot.png>');
  process.exit(2);
}
const WAIT_MS = 40_000;
const WINDOW_MS = 8_000;

const browser = await launch();
const log = [];
const result = { log };
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  page.on('console', (m) => log.push(`console.${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => log.push(`pageerror: ${e.message}`));
  page.on('requestfailed', (r) => log.push(`requestfailed: ${r.url()} ${r.failure()?.errorText}`));
  // Every request the page makes to the management API, to check they are all signed.
  const apiRequests = [];
  page.on('request', (r) => {
    const url = new URL(r.url());
    if (url.pathname.startsWith('/manage/')) apiRequests.push(url.search);
  });

  const banner = async (state) => {
    await page.waitForFunction((s) => document.getElementById('auth').dataset.state === s,
      state, { timeout: WAIT_MS, polling: 100 });
    return page.textContent('#auth');
  };
  const step = async (name, action) => {
    try {
      result[name] = await action();
    } catch (e) {
      result[name] = { failed: e.message.split('\n')[0] };
    }
  };

  await page.goto(consoleUrl);
  let signedFrom = 0;
  if (token === '-') {
    // A server without a management token: the console works at once.
    await step('withoutToken', () => banner('open'));
  } else {
    await step('withoutToken', () => banner('missing'));
    await page.fill('#token', 'not-the-token');
    await page.click('#use-token');
    await step('wrongToken', () => banner('refused'));
    await page.fill('#token', token);
    signedFrom = apiRequests.length;
    await page.click('#use-token');
    await step('rightToken', () => banner('accepted'));
  }

  await step('workers', async () => {
    await page.waitForSelector('main table tbody tr', { timeout: WAIT_MS });
    return page.$$eval('main table tbody tr', (rows) => rows.map((r) => r.textContent));
  });
  await step('reload', async () => {
    await page.click('button:has-text("Reload rules.conf")');
    await page.waitForFunction(() => document.getElementById('notice').textContent.startsWith('Reload rules.conf: '),
      null, { timeout: WAIT_MS, polling: 100 });
    return page.textContent('#notice');
  });
  // The stream's pages, unless the run stops after the overview.
  if (stream !== '-') {
    await page.click('nav a[href="#/streams"]');
    const link = `a.stream-link[data-stream="${stream}"]`;
    await step('streamRow', async () => {
      await page.waitForSelector(link, { timeout: WAIT_MS });
      return page.$eval(link, (a) => [...a.closest('tr').cells].map((c) => c.textContent));
    });
    if (mode === '--row') {
      await step('clusterRows', async () => {
        await page.waitForSelector('main h2:has-text("Cluster registry")', { timeout: WAIT_MS });
        return {
          heading: await page.textContent('main h2:has-text("Cluster registry")'),
          rows: await page.$$eval('main table:last-of-type tbody tr', (rows) => rows.map((r) => r.textContent)),
        };
      });
      result.apiRequests = apiRequests.slice(signedFrom);
      await browser.close();
      console.log(JSON.stringify(result));
      process.exit(0);
    }
    await page.click(link).catch((e) => log.push(`no stream link: ${e.message.split('\n')[0]}`));

    const sample = async (kind) => {
      await page.waitForFunction((k) => {
        const video = document.getElementById('video');
        const state = window.consolePlayer;
        return video && state && state.kind === k
          && (state.fatalErrors.length > 0 || (!video.paused && video.currentTime > 0));
      }, kind, { timeout: WAIT_MS, polling: 100 });
      const read = () => page.evaluate(() => {
        const video = document.getElementById('video');
        return {
          ...window.consolePlayer,
          currentTime: video.currentTime,
          videoWidth: video.videoWidth,
          videoHeight: video.videoHeight,
          frames: video.getVideoPlaybackQuality().totalVideoFrames,
        };
      });
      const first = await read();
      const begin = Date.now();
      let last = first;
      while (Date.now() - begin < WINDOW_MS && last.fatalErrors.length === 0) {
        await page.waitForTimeout(500);
        last = await read();
      }
      return { ...last, start: first.currentTime, end: last.currentTime, framesAtStart: first.frames };
    };
    await step('hls', () => sample('HLS'));
    await step('urls', () => page.$$eval('ul.urls', (lists) => Object.fromEntries(lists.map((list) => [
      list.classList.contains('publish') ? 'publish' : 'play',
      [...list.querySelectorAll('li')].map((li) => [li.querySelector('.protocol').textContent,
        li.querySelector('code.url').textContent]),
    ]))));
    await step('details', () => page.textContent('#stream-details'));
    await step('ladder', async () => {
      if (mode === '--ladder') {
        await page.waitForSelector('#stream-ladder tbody tr', { timeout: WAIT_MS });
      }
      return page.$$eval('#stream-ladder tbody tr', (rows) => rows.map((r) => r.textContent));
    });
    // The rest of the stream's pages, unless only the ladder was asked for.
    if (mode !== '--ladder') {
      await page.click('#play-dash').catch((e) => log.push(`no DASH button: ${e.message.split('\n')[0]}`));
      await step('dash', () => sample('DASH'));
      await page.click('#play-whep').catch((e) => log.push(`no WHEP button: ${e.message.split('\n')[0]}`));
      await step('whep', () => sample('WHEP'));
      await step('sessions', () => page.$$eval('#stream-sessions tbody tr', (rows) => rows.map((r) => r.textContent)));
      // Disconnect the first session listed on the stream's page; the notice names it.
      await step('disconnect', async () => {
        await page.locator('#stream-sessions tbody tr button.action').first().click();
        await page.waitForFunction(() => /^Disconnect session \d+: /.test(document.getElementById('notice').textContent),
          null, { timeout: WAIT_MS, polling: 100 });
        return page.textContent('#notice');
      });
      await page.screenshot({ path: screenshot, fullPage: true });
      // The DVR page's export link, clicked as a user would: until the archive has
      // something to export, strom answers with a JSON error instead of an MP4.
      await page.click('nav a[href="#/dvr"]');
      await step('export', async () => {
        const link = `a.export[data-stream="${stream}"]`;
        await page.waitForSelector(link, { timeout: WAIT_MS });
        let last = null;
        for (let attempt = 0; attempt < 20; attempt += 1) {
          const [download] = await Promise.all([page.waitForEvent('download', { timeout: WAIT_MS }), page.click(link)]);
          const bytes = readFileSync(await download.path());
          last = { bytes: bytes.length, box: bytes.subarray(4, 8).toString('latin1'), url: download.url() };
          if (last.box === 'ftyp') return last;
          last.text = bytes.subarray(0, 200).toString('utf8');
          await page.waitForTimeout(2000);
        }
        return { failed: 'no MP4', last };
      });
    }
  }
  // The API requests made once the right token was entered (all must be signed).
  result.apiRequests = apiRequests.slice(signedFrom);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
