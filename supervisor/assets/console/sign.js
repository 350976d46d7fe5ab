// The console's side of the management API's authentication: where the token is kept
// and how a request is signed with it. strom checks `hash = base64(md5("<salt>/<token>"))`
// (spec section 5); browsers offer no MD5 (WebCrypto refuses it), so it is computed here.
// The token never leaves the browser: only salt and hash go into request URLs.
'use strict';

const StromSign = (() => {
  const KEY = 'strom.managementToken';

  // Per-round shift amounts and constants of RFC 1321.
  const SHIFTS = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];
  const K = Array.from({ length: 64 }, (_, i) => Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32) >>> 0);

  // MD5 of `bytes` (a Uint8Array): 16 bytes.
  function md5(bytes) {
    const length = bytes.length;
    const padded = new Uint8Array((((length + 8) >> 6) + 1) * 64);
    padded.set(bytes);
    padded[length] = 0x80;
    const view = new DataView(padded.buffer);
    view.setUint32(padded.length - 8, (length * 8) >>> 0, true);
    view.setUint32(padded.length - 4, Math.floor(length / 2 ** 29), true);
    let a0 = 0x67452301;
    let b0 = 0xefcdab89;
    let c0 = 0x98badcfe;
    let d0 = 0x10325476;
    for (let offset = 0; offset < padded.length; offset += 64) {
      let [a, b, c, d] = [a0, b0, c0, d0];
      for (let i = 0; i < 64; i += 1) {
        let f;
        let g;
        if (i < 16) {
          f = (b & c) | (~b & d);
          g = i;
        } else if (i < 32) {
          f = (d & b) | (~d & c);
          g = (5 * i + 1) % 16;
        } else if (i < 48) {
          f = b ^ c ^ d;
          g = (3 * i + 5) % 16;
        } else {
          f = c ^ (b | ~d);
          g = (7 * i) % 16;
        }
        f = (f + a + K[i] + view.getUint32(offset + 4 * g, true)) >>> 0;
        const shift = SHIFTS[(i >> 4) * 4 + (i % 4)];
        a = d;
        d = c;
        c = b;
        b = (b + ((f << shift) | (f >>> (32 - shift)))) >>> 0;
      }
      a0 = (a0 + a) >>> 0;
      b0 = (b0 + b) >>> 0;
      c0 = (c0 + c) >>> 0;
      d0 = (d0 + d) >>> 0;
    }
    const digest = new DataView(new ArrayBuffer(16));
    [a0, b0, c0, d0].forEach((word, i) => digest.setUint32(4 * i, word, true));
    return new Uint8Array(digest.buffer);
  }

  function hashFor(salt, token) {
    const digest = md5(new TextEncoder().encode(`${salt}/${token}`));
    return btoa(String.fromCharCode(...digest));
  }

  // The token: this tab's (sessionStorage) unless the user chose to remember it
  // (localStorage).
  function token() {
    return sessionStorage.getItem(KEY) || localStorage.getItem(KEY) || '';
  }

  function setToken(value, remember) {
    sessionStorage.removeItem(KEY);
    localStorage.removeItem(KEY);
    if (value) (remember ? localStorage : sessionStorage).setItem(KEY, value);
  }

  // `path` with `salt` and `hash` appended when a token is set; a fresh salt each time,
  // drawn as the reference generator does (0 to 1000000).
  function sign(path) {
    const current = token();
    if (!current) return path;
    const salt = Math.floor(Math.random() * 1000001);
    const separator = path.includes('?') ? '&' : '?';
    return `${path}${separator}salt=${salt}&hash=${encodeURIComponent(hashFor(salt, current))}`;
  }

  // A download link for `path` alone, valid until `expires` (Unix seconds on the
  // server's clock): `sig = base64(md5("<token>/<expires>/<path>/<token>"))`. A link
  // lands in the download history, where a salt and hash would stay valid for every
  // endpoint forever; this one opens one export for a few minutes
  // (supervisor/src/link_signature.rs).
  function linkSignature(expires, path, secret) {
    const digest = md5(new TextEncoder().encode(`${secret}/${expires}/${path}/${secret}`));
    return btoa(String.fromCharCode(...digest));
  }

  function signLink(path, expires) {
    const current = token();
    if (!current) return path;
    const [bare] = path.split('?');
    const separator = path.includes('?') ? '&' : '?';
    const sig = encodeURIComponent(linkSignature(expires, bare, current));
    return `${path}${separator}expires=${expires}&sig=${sig}`;
  }

  return { hashFor, linkSignature, token, setToken, sign, signLink };
})();
