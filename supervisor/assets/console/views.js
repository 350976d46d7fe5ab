// The console's list pages: server overview (with reloads), live streams, sessions
// (with disconnect), publishers (with deny) and DVR archives (with MP4 export). Each
// view is a function that fills a container from the API and is called again on every
// refresh. Text from the server only ever goes into text nodes (no innerHTML).
'use strict';

const StromViews = (() => {
  // el('td', {class: 'x'}, 'text', child, ...): a DOM element.
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
      else if (value !== undefined && value !== null) node.setAttribute(name, value);
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function table(headers, rows, empty) {
    if (rows.length === 0) return el('p', { class: 'empty' }, empty);
    return el('table', {}, el('thead', {}, el('tr', {}, headers.map((h) => el('th', {}, h)))),
      el('tbody', {}, rows.map((cells) => el('tr', {}, cells.map((c) => el('td', {}, c))))));
  }

  const bits = (value) => {
    const n = Number(value) || 0;
    if (n >= 1e6) return `${(n / 1e6).toFixed(2)} Mbit/s`;
    if (n >= 1e3) return `${(n / 1e3).toFixed(1)} kbit/s`;
    return `${n} bit/s`;
  };
  const bytes = (value) => {
    const n = Number(value) || 0;
    if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(2)} GiB`;
    if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(1)} MiB`;
    if (n >= 2 ** 10) return `${(n / 2 ** 10).toFixed(1)} KiB`;
    return `${n} B`;
  };
  const duration = (seconds) => {
    const s = Math.max(0, Math.floor(Number(seconds) || 0));
    const h = Math.floor(s / 3600);
    const m = Math.floor((s % 3600) / 60);
    return h ? `${h}h ${m}m` : m ? `${m}m ${s % 60}s` : `${s}s`;
  };
  const since = (unix) => (unix ? new Date(Number(unix) * 1000).toLocaleString() : '');

  // A button that runs `action` (async) and says how it went (`<label> <what>: done`) in
  // the notice line, which (unlike the views, redrawn every refresh) keeps the message
  // until the next action.
  function actionButton(label, action, what, confirmText) {
    const button = el('button', {
      class: 'action',
      onclick: async () => {
        if (confirmText && !window.confirm(confirmText)) return;
        button.disabled = true;
        const result = await action();
        button.disabled = false;
        const notice = document.getElementById('notice');
        const done = [label, what].filter(Boolean).join(' ');
        notice.textContent = `${done}: ${result.ok ? 'done' : StromApi.failure(result)}`;
        notice.className = result.ok ? 'ok' : 'failed';
      },
    }, label);
    return button;
  }

  // What failed, in place of a view's content.
  const problem = (what, result) => el('p', { class: 'failed' }, `${what}: ${StromApi.failure(result)}`);

  const streamLink = (app, stream) => el('a', {
    href: `#/stream/${encodeURIComponent(app)}/${encodeURIComponent(stream)}`,
    class: 'stream-link',
    'data-stream': `${app}/${stream}`,
  }, `${app}/${stream}`);

  // Viewers of each `app/stream`: its sessions that send more than they receive (a
  // publisher's session is the other way round).
  function viewersByStream(sessions) {
    const viewers = {};
    for (const s of sessions || []) {
      if (Number(s.bytes_sent) >= Number(s.bytes_recv)) {
        const key = `${s.app}/${s.stream}`;
        viewers[key] = (viewers[key] || 0) + 1;
      }
    }
    return viewers;
  }

  async function overview(container) {
    const [status, workers] = await Promise.all([
      StromApi.get('/manage/server_status'), StromApi.get('/manage/workers')]);
    if (!status.ok) return container.replaceChildren(problem('server status', status));
    const s = status.data;
    const sys = s.SysInfo || {};
    const facts = el('dl', { class: 'facts' },
      el('dt', {}, 'Connections'), el('dd', { id: 'connections' }, s.Connections),
      el('dt', {}, 'Out rate'), el('dd', {}, bits(s.OutRate)),
      el('dt', {}, 'CPU load'), el('dd', {}, `${sys.scl} (${sys.ap} processors)`),
      el('dt', {}, 'Memory free'), el('dd', {}, `${bytes(sys.fpms)} of ${bytes(sys.tpms)}`),
      el('dt', {}, 'RAM cache'), el('dd', {}, `${s.RamCacheSize} of ${s.MaxRamCacheSize} MB`));
    const workerRows = (workers.ok ? workers.data : []).map((w) => [
      w.kind, w.pid, el('span', { class: `state ${w.state}` }, w.state), w.restarts,
      duration(w.uptime), bytes(w.bytes_received)]);
    const reloads = el('div', { class: 'actions' },
      actionButton('Reload rules.conf', () => StromApi.post('/manage/reload_config')),
      actionButton('Reload TLS certificates', () => StromApi.post('/manage/reload_ssl_certificates')),
      actionButton('Sync panel settings', () => StromApi.post('/manage/sync_panel_settings')));
    container.replaceChildren(el('h2', {}, 'Server'), facts,
      el('h2', {}, 'Workers'),
      workers.ok
        ? table(['worker', 'pid', 'state', 'restarts', 'uptime', 'received'], workerRows, 'no worker')
        : problem('workers', workers),
      el('h2', {}, 'Reload'), reloads);
  }

  async function streams(container) {
    const [live, sessions, cluster] = await Promise.all([
      StromApi.get('/manage/live_streams_status'), StromApi.get('/manage/sessions'),
      StromApi.get('/manage/cluster')]);
    if (!live.ok) return container.replaceChildren(problem('live streams', live));
    const viewers = viewersByStream(sessions.data);
    // With a `Cluster` block: which server of the cluster holds each stream.
    const registry = cluster.ok && cluster.data.enabled ? cluster.data : null;
    const holders = {};
    for (const s of registry ? registry.streams : []) holders[`${s.app}/${s.stream}`] = s.server;
    const rows = [];
    for (const group of live.data) {
      for (const s of group.streams) {
        const row = [streamLink(group.app, s.strm), s.protocol,
          [s.vcodec, s.acodec].filter(Boolean).join(' + '), s.resolution || '',
          bits(s.bandwidth), s.publisher_ip || s.source_url || '',
          viewers[`${group.app}/${s.strm}`] || 0, since(s.publish_time)];
        if (registry) row.push(holders[`${group.app}/${s.strm}`] || 'unclaimed');
        rows.push(row);
      }
    }
    const headers = ['stream', 'protocol', 'codecs', 'resolution', 'bitrate', 'publisher', 'viewers', 'since'];
    const parts = [el('h2', {}, 'Live streams'),
      table(registry ? headers.concat(['held by']) : headers, rows, 'No stream is live.')];
    if (registry) {
      const state = registry.connected ? 'connected' : `unreachable: ${registry.last_error || ''}`;
      const held = registry.streams.map((s) => [`${s.app}/${s.stream}`, s.server]);
      parts.push(el('h2', {}, `Cluster registry (${registry.server_id}, ${state})`),
        table(['stream', 'held by'], held, 'No stream is held in the cluster.'));
    }
    container.replaceChildren(...parts);
  }

  function sessionRows(list) {
    return list.map((s) => [s.id, `${s.app}/${s.stream}`, s.type, s.client_ip, s.user_agent,
      bytes(s.bytes_sent), bytes(s.bytes_recv), since(s.created),
      actionButton('Disconnect', () => StromApi.post('/manage/sessions/delete', [s.id]), `session ${s.id}`)]);
  }
  const SESSION_HEADERS = ['id', 'stream', 'type', 'client', 'user agent', 'sent', 'received', 'since', ''];

  async function sessions(container, filter) {
    const result = await StromApi.get('/manage/sessions');
    if (!result.ok) return container.replaceChildren(problem('sessions', result));
    const list = filter ? result.data.filter(filter) : result.data;
    container.replaceChildren(el('h2', {}, 'Sessions'),
      table(SESSION_HEADERS, sessionRows(list), 'No session.'));
  }

  async function publishers(container) {
    const deny = (id) => StromApi.post('/manage/publish_control/deny', { PublishControlDenyRequest: [id] });
    // The deny form is built once, so that a refresh does not wipe what is being typed.
    let list = container.querySelector('#publishers');
    if (!list) {
      list = el('div', { id: 'publishers' });
      const input = el('input', { type: 'text', placeholder: 'publisher id', id: 'deny-id' });
      container.replaceChildren(el('h2', {}, 'Publishers'), list, el('h2', {}, 'Deny an id'),
        el('p', {}, input, ' ', actionButton('Deny', () => deny(input.value.trim()), 'the id')));
    }
    const result = await StromApi.get('/manage/publish_control/status');
    if (!result.ok) return list.replaceChildren(problem('publishers', result));
    const rows = (result.data.PublishControlStatus || []).map((p) => [p.stream, p.id, p.ip, p.key,
      p.id ? actionButton('Deny', () => deny(p.id), `publisher ${p.id}`, `Deny publisher id ${p.id}?`) : '']);
    return list.replaceChildren(
      table(['stream', 'publisher id', 'address', 'key', ''], rows, 'No publisher goes through publish control.'));
  }

  async function dvr(container) {
    const result = await StromApi.get('/manage/dvr_status');
    if (!result.ok) return container.replaceChildren(problem('DVR archives', result));
    const rows = result.data.map((a) => {
      const [app, ...rest] = a.stream.split('/');
      const path = `/manage/dvr/export_mp4/${encodeURIComponent(app)}/${encodeURIComponent(rest.join('/'))}`;
      return [streamLink(app, rest.join('/')), duration(a.duration), bytes(a.size), a.resolution,
        [a.vcodec, a.acodec].filter(Boolean).join(' + '), a.periods,
        // Signed when clicked, so that a token entered later is used.
        el('a', {
          href: path,
          class: 'export',
          'data-stream': a.stream,
          download: `${a.stream.replace('/', '_')}.mp4`,
          onclick: (e) => { e.currentTarget.href = StromApi.link(path); },
        }, 'Export MP4')];
    });
    container.replaceChildren(el('h2', {}, 'DVR archives'),
      table(['stream', 'duration', 'size', 'resolution', 'codecs', 'periods', ''], rows, 'No DVR archive.'));
  }

  return {
    el, table, bits, since, problem, actionButton, sessionRows, SESSION_HEADERS,
    overview, streams, sessions, publishers, dvr,
  };
})();
