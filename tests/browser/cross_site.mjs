// A page on another origin that the operator happens to visit, in Debian's headless
// Chromium: it sends `no-cors` `text/plain` POSTs to the management API (what a
// cross-site attacker can send without any CORS permission) and tries to read an
// answer. Prints one JSON line: {ok, sent, read, log}, where `sent` counts the POSTs the
// browser let out and `read` is what a CORS read got (null when the browser or the
// server refused it).
//
//   node tests/browser/cross_site.mjs <page URL> <management base URL> <republish rule JSON>
import { launch } from './chromium.mjs';

const [pageUrl, base, rule] = process.argv.slice(2);
if (!pageUrl || !base || !rule) {
  console.error('usage: node cross_site.mjs <page URL> <management base URL> <rule JSON>');
  process.exit(2);
}
const browser = await launch();
const log = [];
let result;
try {
  const page = await browser.newPage();
  page.on('console', (m) => log.push(`console.${m.type()}: ${m.text()}`));
  await page.goto(pageUrl);
  result = await page.evaluate(async ([base, rule]) => {
    const posts = [
      ['/manage/rtmp/republish', rule],
      ['/manage/drain', ''],
      ['/manage/publish_control/deny', '{"PublishControlDenyRequest":["pub-1"]}'],
    ];
    let sent = 0;
    for (const [path, body] of posts) {
      try {
        await fetch(base + path, {
          method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' }, body,
        });
        sent += 1;
      } catch (e) {
        console.log(`POST ${path}: ${e}`);
      }
    }
    let read = null;
    try {
      const answer = await fetch(base + '/manage/server_status');
      read = await answer.text();
    } catch (e) {
      console.log(`read: ${e}`);
    }
    return { ok: true, sent, read };
  }, [base, rule]);
} finally {
  await browser.close();
}
console.log(JSON.stringify({ ...result, log }));
