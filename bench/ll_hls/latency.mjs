// Glass-to-glass latency as the player sees it: opens a player page of tests/browser
// (index.html: hls.js, `&lowLatency=1` for lowLatencyMode; dash.html: dash.js) in
// Debian's headless Chromium, waits until it plays, lets it settle, then samples for
// WINDOW seconds, every 250 ms:
//   wall clock now - wall-clock time of the frame on screen
// (hls.js: hls.playingDate, from #EXT-X-PROGRAM-DATE-TIME; dash.js: player.timeAsUTC(),
// from the manifest's wall-clock anchoring). strom stamps both with its own clock when
// the segment's first frame reached the packager, and Chromium runs on the same machine,
// so the difference is the time from the frame's arrival at strom to its display. Also
// the player's own latency figure (hls.latency: live edge minus position;
// dash.js getCurrentLiveLatency()). Prints one JSON line.
//
//   node bench/ll_hls/latency.mjs <page URL> hls|dash <settle secs> <window secs>
import { launch } from '../../tests/browser/chromium.mjs';

const [pageUrl, kind, settle, window] = process.argv.slice(2);
const browser = await launch();
const quantile = (sorted, q) => sorted.length
  ? +sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))].toFixed(3) : null;
let result;
try {
  const page = await browser.newPage();
  await page.goto(pageUrl);
  await page.waitForFunction(() => {
    const video = document.getElementById('video');
    return !video.paused && video.currentTime > 0;
  }, null, { timeout: 60_000, polling: 100 });
  await page.waitForTimeout(Number(settle) * 1000);
  const glass = [];
  const player = [];
  const end = Date.now() + Number(window) * 1000;
  while (Date.now() < end) {
    const sample = await page.evaluate((kind) => {
      const now = Date.now();
      if (kind === 'dash') {
        const p = window.player;
        return { glass: (now - p.timeAsUTC() * 1000) / 1000, player: p.getCurrentLiveLatency() };
      }
      const date = window.hls.playingDate;
      return { glass: date ? (now - date.getTime()) / 1000 : null, player: window.hls.latency };
    }, kind);
    if (Number.isFinite(sample.glass)) glass.push(sample.glass);
    if (Number.isFinite(sample.player)) player.push(sample.player);
    await page.waitForTimeout(250);
  }
  glass.sort((a, b) => a - b);
  player.sort((a, b) => a - b);
  const stalls = await page.evaluate(() => window.playerState.nonFatalErrors.length);
  result = {
    kind, pageUrl, samples: glass.length,
    glass_p10: quantile(glass, 0.1), glass_p50: quantile(glass, 0.5), glass_p90: quantile(glass, 0.9),
    player_p50: quantile(player, 0.5), nonFatalErrors: stalls,
  };
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
