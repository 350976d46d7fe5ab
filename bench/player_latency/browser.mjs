// One browser player of bench/player_latency: opens a player page (tests/browser/index.html
// for hls.js, dash.html for dash.js, tests/browser/shaka.html for Shaka) in headless
// Chromium and, from every frame it presents (requestVideoFrameCallback) and every 250 ms
// besides, draws the top 32 rows of the <video> into a canvas and reads the frame-index
// barcode there (the layout of barcode.py), appending "wall-time N" to SAMPLES. Runs until
// SECONDS after playback starts; prints one JSON line: the `waiting` events the video
// fired after playback began, the player's non-fatal errors, and (hls.js) LL-HLS parts
// loaded, so whether a player really fetched parts is on record, and hls.latency.
//
//   node bench/player_latency/browser.mjs <page URL> <seconds> <samples file>
import { appendFileSync } from 'node:fs';
import { launch } from '../../tests/browser/chromium.mjs';

const [pageUrl, seconds, samplesPath] = process.argv.slice(2);

// Runs in the page: reads the barcode of the frame on screen, per presented frame.
function installProbe() {
  const video = document.getElementById('video');
  const canvas = document.createElement('canvas');
  const ctx = canvas.getContext('2d', { willReadFrequently: true });
  const probe = window.barcodeProbe = { samples: [], waiting: 0 };
  video.addEventListener('waiting', () => { probe.waiting += 1; });
  const read = () => {
    const width = video.videoWidth;
    if (!width || video.readyState < 2) return;
    canvas.width = width;
    canvas.height = 32;
    ctx.drawImage(video, 0, 0, width, 32, 0, 0, width, 32);
    const rows = ctx.getImageData(0, 0, width, 32).data;
    let n = 0;
    for (let i = 0; i < 16; i += 1) {
      const x = Math.floor(((2 * i + 1) * width) / 32);
      const bit = rows[(8 * width + x) * 4] > 125;
      if (bit === rows[(24 * width + x) * 4] > 125) return;
      n = n * 2 + (bit ? 1 : 0);
    }
    probe.samples.push([Date.now() / 1000, n]);
  };
  const onFrame = () => { read(); video.requestVideoFrameCallback(onFrame); };
  if ('requestVideoFrameCallback' in video) video.requestVideoFrameCallback(onFrame);
  setInterval(read, 250);
}

const browser = await launch();
let result;
try {
  const page = await browser.newPage();
  await page.goto(pageUrl);
  await page.evaluate(installProbe);
  await page.waitForFunction(() => {
    const video = document.getElementById('video');
    return !video.paused && video.currentTime > 0;
  }, null, { timeout: 60_000, polling: 100 });
  await page.evaluate(() => { window.barcodeProbe.waiting = 0; });
  await page.waitForTimeout(Number(seconds) * 1000);
  const probe = await page.evaluate(() => {
    const state = window.playerState || {};
    return {
      samples: window.barcodeProbe.samples,
      waiting: window.barcodeProbe.waiting,
      nonFatalErrors: (state.nonFatalErrors || []).length,
      // What they were (hls.js: `details`, e.g. fragLoadError, bufferStalledError).
      errorKinds: [...new Set((state.nonFatalErrors || []).concat(state.fatalErrors || [])
        .map((e) => e.details))].slice(0, 3),
      fatalErrors: (state.fatalErrors || []).length,
      partsLoaded: state.partsLoaded ?? null,
      // hls.js's own figure (live edge minus position), to set beside the barcode's.
      hlsLatency: window.hls && Number.isFinite(window.hls.latency) ? +window.hls.latency.toFixed(2) : null,
    };
  });
  appendFileSync(samplesPath, probe.samples.map(([t, n]) => `${t.toFixed(4)} ${n}\n`).join(''));
  delete probe.samples;
  result = probe;
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
