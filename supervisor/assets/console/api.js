// Calls to strom's management API, each signed with the token (StromSign), and what the
// last answer said about that token: the console shows it in its banner, so that a user
// without a token, or with a refused one, is told so instead of seeing empty pages.
'use strict';

const StromApi = (() => {
  // How long an export link stays valid (the server accepts at most 300 s).
  const LINK_SECS = 120;
  // 'unknown' until an answer came; 'accepted' (2xx with a token), 'open' (2xx without
  // one: the server has no token), 'missing' or 'refused' (403), 'unreachable'.
  const auth = { state: 'unknown', detail: '' };
  const listeners = [];
  // The server's clock less this browser's, in ms, from the last answer's `Date`: a
  // signed link's expiry is checked by the server's clock.
  let clockOffset = 0;

  function report(state, detail) {
    if (auth.state === state && auth.detail === detail) return;
    auth.state = state;
    auth.detail = detail;
    listeners.forEach((listener) => listener(auth));
  }

  // `method` `path` (under /manage, without salt and hash) with an optional JSON body:
  // `{ok, status, data}`, where `data` is the parsed JSON answer (or null).
  async function call(method, path, body) {
    let response;
    try {
      response = await fetch(StromSign.sign(path), {
        method,
        headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: 'no-store',
      });
    } catch (error) {
      report('unreachable', String(error));
      return { ok: false, status: 0, data: null };
    }
    const date = Date.parse(response.headers.get('Date') || '');
    if (!Number.isNaN(date)) clockOffset = date - Date.now();
    let data = null;
    try {
      data = await response.json();
    } catch (_) {
      data = null;
    }
    if (response.status === 403) {
      const reason = (data && data.error) || 'forbidden';
      report(StromSign.token() ? 'refused' : 'missing', reason);
    } else if (response.ok) {
      report(StromSign.token() ? 'accepted' : 'open', '');
    }
    return { ok: response.ok, status: response.status, data };
  }

  const get = (path) => call('GET', path);
  const post = (path, body) => call('POST', path, body);

  // The text of a failed answer, for the page to show.
  function failure(result) {
    if (result.status === 0) return 'strom did not answer';
    const reason = result.data && (result.data.error || result.data.status);
    return `HTTP ${result.status}${reason ? `: ${reason}` : ''}`;
  }

  return {
    auth,
    onAuth: (listener) => listeners.push(listener),
    get,
    post,
    failure,
    // A link that works on its own (an MP4 download), for a short while and for that
    // path only: it stays in the download history.
    link: (path) => StromSign.signLink(path, Math.floor((Date.now() + clockOffset) / 1000) + LINK_SECS),
  };
})();
