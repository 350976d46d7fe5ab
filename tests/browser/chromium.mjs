// Debian's headless Chromium as the browser scripts here launch it (play.mjs,
// console.mjs, webrtc.mjs): no sandbox, GPU or background traffic, autoplay without a
// gesture, and the fake camera and microphone for WebRTC publishing.
import { chromium } from 'playwright-core';

export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--autoplay-policy=no-user-gesture-required',
      // WHIP tests publish Chromium's fake camera and microphone (a moving test
      // pattern and a beep) without a permission prompt.
      '--use-fake-device-for-media-stream',
      '--use-fake-ui-for-media-stream',
    ],
  });
}
