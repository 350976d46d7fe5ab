// The console's shell: the token form and the banner that says whether the server
// accepts the token, the navigation between views (`#/...` in the URL, so that a page
// can be bookmarked), and the refresh of the current view every two seconds.
'use strict';

(() => {
  const main = document.getElementById('main');
  const banner = document.getElementById('auth');
  const REFRESH_MS = 2000;
  let refresh = null;
  let route = '';

  const MESSAGES = {
    unknown: 'Asking strom...',
    accepted: 'Management token accepted.',
    open: 'This server has no management token: the console works without one.',
    missing: 'This server needs its management token (management_token in strom.conf): enter it above',
    refused: 'strom refused the token',
    unreachable: 'strom did not answer',
  };

  function showAuth(auth) {
    const text = MESSAGES[auth.state] || auth.state;
    banner.textContent = auth.detail ? `${text} (strom says: ${auth.detail})` : text;
    banner.className = `auth ${auth.state}`;
    banner.dataset.state = auth.state;
  }

  // `#/stream/<app>/<stream>` and the list views.
  async function show() {
    route = location.hash.replace(/^#\/?/, '') || 'overview';
    const parts = route.split('/').map(decodeURIComponent);
    for (const link of document.querySelectorAll('nav a')) {
      link.classList.toggle('current', link.getAttribute('href') === `#/${parts[0]}`);
    }
    if (parts[0] !== 'stream') StromPlayer.stop();
    const shown = route;
    refresh = null;
    if (parts[0] === 'stream' && parts.length >= 3) {
      const pageRefresh = await StromPlayer.page(main, parts[1], parts.slice(2).join('/'));
      if (shown === route) refresh = pageRefresh;
    } else {
      const views = {
        overview: StromViews.overview,
        streams: StromViews.streams,
        sessions: StromViews.sessions,
        publishers: StromViews.publishers,
        dvr: StromViews.dvr,
      };
      const view = views[parts[0]] || views.overview;
      refresh = () => view(main);
    }
    if (refresh) await refresh();
  }

  async function tick() {
    if (refresh) {
      try {
        await refresh();
      } catch (error) {
        console.error(error);
      }
    }
    setTimeout(tick, REFRESH_MS);
  }

  const form = document.getElementById('token-form');
  const input = document.getElementById('token');
  const remember = document.getElementById('remember');
  input.value = StromSign.token();
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    StromSign.setToken(input.value.trim(), remember.checked);
    show();
  });
  document.getElementById('forget').addEventListener('click', () => {
    StromSign.setToken('', false);
    input.value = '';
    show();
  });
  StromApi.onAuth(showAuth);
  showAuth(StromApi.auth);
  window.addEventListener('hashchange', show);
  show().finally(() => setTimeout(tick, REFRESH_MS));
})();
