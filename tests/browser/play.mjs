// Opens the player page (tests/browser/index.html with hls.js or dash.html with
// dash.js, served by tests/tests/browser.rs) in Debian's headless Chromium, waits until
// it plays, samples video.currentTime for 10 s of wall time, takes a screenshot and prints one JSON line:
// {started, start, end, wallSeconds, samples, fatalErrors, nonFatalErrors, levels,
// fragLevels, levelsSwitched, widthsSeen, dateRanges, protocols, ...}; `protocols`: the
// HTTP versions (`nextHopProtocol`: `h2`, `http/1.1`) of the requests to the playlist's
// origin. The test servers' self-signed certificates are accepted.
//
//   node tests/browser/play.mjs <page URL> <screenshot.png>
import { launch } from './chromium.mjs';

const [pageUrl, screenshot] = process.argv.slice(2);
if (!pageUrl || !screenshot) {
  console.error('usage: node play.mjs <page URL> <screenshot.png>');
  process.exit(2);
}
const WINDOW_MS = 10_000;
const START_TIMEOUT_MS = 40_000;

const browser = await launch();
const log = [];
let result;
try {
  const page = await browser.newPage({ viewport: { width: 660, height: 540 }, ignoreHTTPSErrors: true });
  page.on('console', (m) => log.push(`console.${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => log.push(`pageerror: ${e.message}`));
  page.on('requestfailed', (r) => log.push(`requestfailed: ${r.url()} ${r.failure()?.errorText}`));
  // The protocol of every response, as Chromium's network stack reports it.
  const responses = [];
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  cdp.on('Network.responseReceived', (e) => responses.push({ url: e.response.url, protocol: e.response.protocol }));
  await page.goto(pageUrl);

  const snapshot = () => page.evaluate(() => {
    const video = document.getElementById('video');
    const quality = video.getVideoPlaybackQuality();
    return {
      ...window.playerState,
      currentTime: video.currentTime,
      paused: video.paused,
      readyState: video.readyState,
      videoWidth: video.videoWidth,
      videoHeight: video.videoHeight,
      totalVideoFrames: quality.totalVideoFrames,
      droppedVideoFrames: quality.droppedVideoFrames,
    };
  });

  let started = true;
  try {
    await page.waitForFunction(() => {
      const state = window.playerState;
      const video = document.getElementById('video');
      return state && (state.fatalErrors.length > 0 || (!video.paused && video.currentTime > 0));
    }, null, { timeout: START_TIMEOUT_MS, polling: 100 });
  } catch (e) {
    started = false;
    log.push(`playback did not start: ${e.message.split('\n')[0]}`);
  }
  const first = await snapshot();
  started = started && first.fatalErrors.length === 0;
  const samples = [];
  const begin = performance.now();
  let last = first;
  if (started) {
    // The measurement window: 10 s of wall time, currentTime sampled twice a second.
    while (performance.now() - begin < WINDOW_MS) {
      await page.waitForTimeout(500);
      last = await snapshot();
      samples.push({ t: +((performance.now() - begin) / 1000).toFixed(2), currentTime: last.currentTime });
      if (last.fatalErrors.length > 0) break;
    }
  }
  await page.screenshot({ path: screenshot });
  result = {
    started,
    start: first.currentTime,
    end: last.currentTime,
    wallSeconds: (performance.now() - begin) / 1000,
    samples,
    fatalErrors: last.fatalErrors,
    nonFatalErrors: last.nonFatalErrors,
    levels: last.levels,
    fragsLoaded: last.fragsLoaded,
    fragLevels: last.fragLevels,
    levelsSwitched: last.levelsSwitched,
    widthsSeen: last.widthsSeen,
    dateRanges: last.dateRanges,
    latency: last.latency,
    latencies: last.latencies,
    partsLoaded: last.partsLoaded,
    playlistOrigin: last.playlistOrigin,
    pageOrigin: last.pageOrigin,
    hlsVersion: last.hlsVersion,
    dashVersion: last.dashVersion,
    shakaVersion: last.shakaVersion,
    videoWidth: last.videoWidth,
    videoHeight: last.videoHeight,
    totalVideoFrames: last.totalVideoFrames,
    droppedVideoFrames: last.droppedVideoFrames,
    protocols: [...new Set(responses
      .filter((r) => last.playlistOrigin && r.url.startsWith(last.playlistOrigin))
      .map((r) => r.protocol))],
    chromium: browser.version(),
    log,
  };
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
