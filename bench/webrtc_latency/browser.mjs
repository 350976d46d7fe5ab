// One player of bench/webrtc_latency in Debian's headless Chromium, joined JOINS times
// in a row (a fresh browser context each time, a random pause of up to GAP seconds
// between joins so that they land at different places in the GOP):
//   whep:  bench/webrtc_latency/whep.html, WHEP playback of TARGET (strom's endpoint);
//   janus: bench/webrtc_latency/janus.html, TARGET = '<Janus REST base>#<mountpoint>';
//   hls:   tests/browser/index.html?src=...&lowLatency=1 (hls.js LL-HLS), TARGET unused.
// From every frame the <video> presents (requestVideoFrameCallback) and every 250 ms
// besides, the top 32 rows are drawn into a canvas and the frame-index barcode read
// (bench/player_latency/barcode.py's layout); each join appends "wall-time N" to
// PREFIX.<join>.samples and, for WebRTC frames (whose callback says when the frame's
// packets arrived), "N arrival-wall-time" to PREFIX.<join>.recv. A join holds HOLD
// seconds after its first frame, then ends (WHEP: DELETE; Janus: destroy). One JSON line
// per join: the time to first frame (WebRTC: from the page's play() call, before the
// offer is made; hls: from the navigation start), the WebRTC start-up steps, the
// receiver's getStats figures.
//
//   node bench/webrtc_latency/browser.mjs whep|janus|hls PAGE_URL TARGET JOINS HOLD GAP PREFIX
import { appendFileSync } from 'node:fs';
import { launch } from '../../tests/browser/chromium.mjs';

const [mode, pageUrl, target, joinsText, holdText, gapText, prefix] = process.argv.slice(2);
const webrtc = mode !== 'hls';
if (!['whep', 'janus', 'hls'].includes(mode) || !prefix) {
  console.error('usage: node browser.mjs whep|janus|hls PAGE_URL TARGET JOINS HOLD GAP PREFIX');
  process.exit(2);
}
const joins = Number(joinsText);
const hold = Number(holdText);
const gap = Number(gapText);

// Runs in the page before its scripts: the barcode probe on the page's <video>.
function installProbe() {
  const start = () => {
    const video = document.getElementById('video');
    if (!video) return;
    const canvas = document.createElement('canvas');
    const ctx = canvas.getContext('2d', { willReadFrequently: true });
    const probe = window.barcodeProbe = {
      samples: [], received: [], firstFrameAt: null, firstN: null, waiting: 0,
    };
    video.addEventListener('waiting', () => { if (probe.firstFrameAt !== null) probe.waiting += 1; });
    const read = (metadata) => {
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
      if (metadata && probe.firstFrameAt === null) {
        probe.firstFrameAt = performance.now();
        probe.firstN = n;
      }
      if (metadata && metadata.receiveTime) {
        probe.received.push([n, (performance.timeOrigin + metadata.receiveTime) / 1000]);
      }
    };
    const onFrame = (now, metadata) => { read(metadata); video.requestVideoFrameCallback(onFrame); };
    video.requestVideoFrameCallback(onFrame);
    setInterval(() => read(null), 250);
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
}

const round = (v) => (v === null || v === undefined ? null : Math.round(v));
// A browser that went away (a renderer or GPU process crash takes headless Chromium
// down now and then) is started again for the next join; the failed join says so.
let browser = await launch();
try {
  for (let join = 1; join <= joins; join += 1) {
    if (join > 1) await new Promise((r) => setTimeout(r, Math.random() * gap * 1000));
    if (!browser.isConnected()) browser = await launch();
    const result = { mode, join };
    const log = [];
    let context;
    try {
      context = await browser.newContext();
      const page = await context.newPage();
      page.on('pageerror', (e) => log.push(`pageerror: ${e.message}`));
      page.on('crash', () => log.push('the page crashed'));
      await page.addInitScript(installProbe);
      if (webrtc) {
        await page.goto(pageUrl);
        await page.evaluate((url) => window.play(url), target);
      } else {
        await page.goto(pageUrl);
      }
      await page.waitForFunction(() => window.barcodeProbe && window.barcodeProbe.firstFrameAt !== null,
        null, { timeout: 30_000, polling: 50 });
      await page.waitForTimeout(hold * 1000);
      const probe = await page.evaluate(() => ({
        ...window.barcodeProbe,
        timeOrigin: performance.timeOrigin,
        play: window.playState || null,
        hlsLatency: window.hls && Number.isFinite(window.hls.latency) ? window.hls.latency : null,
        hlsErrors: window.playerState ? window.playerState.nonFatalErrors.length + window.playerState.fatalErrors.length : null,
      }));
      const base = webrtc ? probe.play.start : 0;
      Object.assign(result, {
        joinWall: (probe.timeOrigin + base) / 1000,
        firstFrameMs: round(probe.firstFrameAt - base),
        firstN: probe.firstN,
        frames: probe.samples.length,
        waiting: probe.waiting,
      });
      if (webrtc) {
        const w = probe.play;
        Object.assign(result, {
          answerMs: round(w.answer - w.request),
          connectedMs: round(w.connected === undefined ? null : w.connected - w.start),
          firstFrameAfterConnectMs: round(w.connected === undefined ? null : probe.firstFrameAt - w.connected),
          stats: await page.evaluate(() => window.receiverStats()),
          stopStatus: await page.evaluate(() => window.stop()),
        });
      } else {
        Object.assign(result, {
          hlsLatency: probe.hlsLatency === null ? null : +probe.hlsLatency.toFixed(2),
          hlsErrors: probe.hlsErrors,
        });
      }
      appendFileSync(`${prefix}.${join}.samples`, probe.samples.map(([t, n]) => `${t.toFixed(4)} ${n}\n`).join(''));
      appendFileSync(`${prefix}.${join}.recv`, probe.received.map(([n, t]) => `${n} ${t.toFixed(4)}\n`).join(''));
    } catch (e) {
      result.error = e.message.split('\n')[0];
      if (!browser.isConnected()) result.error += ' (the browser went away)';
    }
    if (log.length) result.log = log.slice(0, 5);
    if (context) await context.close().catch(() => {});
    console.log(JSON.stringify(result));
  }
} finally {
  await browser.close().catch(() => {});
}
