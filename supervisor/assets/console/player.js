// The page of one stream: a player (HLS with hls.js, DASH with dash.js, both embedded in
// strom, and WebRTC over WHEP with the browser's own RTCPeerConnection), the stream's publish and play URLs for every enabled protocol
// (`/manage/stream_urls`) with copy buttons, its details, its ABR ladder when it is
// transcoded (`/manage/transcodes`) and its sessions. The player
// is built once per visit; only the details and sessions are refreshed.
// What the player does is kept in `window.consolePlayer` (shown on the page, and read
// by the browser test).
'use strict';

const StromPlayer = (() => {
  const { el, table } = StromViews;
  let current = null; // { hls, dash, pc, resource }

  function stop() {
    if (!current) return;
    if (current.hls) current.hls.destroy();
    if (current.dash) current.dash.reset();
    if (current.pc) current.pc.close();
    // Ends the WHEP session at once rather than when ICE times out.
    if (current.resource) fetch(current.resource, { method: 'DELETE' }).catch(() => {});
    current = null;
  }

  // WHEP: an offer for video and audio, the answer from strom, the tracks into `video`.
  function playWhep(video, url, state) {
    const pc = new RTCPeerConnection();
    pc.addTransceiver('video', { direction: 'recvonly' });
    pc.addTransceiver('audio', { direction: 'recvonly' });
    const media = new MediaStream();
    video.srcObject = media;
    pc.ontrack = (event) => media.addTrack(event.track);
    state.version = 'WebRTC';
    const session = { pc, resource: null };
    (async () => {
      try {
        await pc.setLocalDescription(await pc.createOffer());
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'Content-Type': 'application/sdp' },
          body: pc.localDescription.sdp,
        });
        const body = await response.text();
        if (response.status !== 201) throw new Error(`WHEP ${response.status}: ${body}`);
        session.resource = new URL(response.headers.get('Location'), url).href;
        await pc.setRemoteDescription({ type: 'answer', sdp: body });
        video.play().catch(() => {});
      } catch (e) {
        state.fatalErrors.push(String(e.message || e));
      }
    })();
    return session;
  }

  // The first play URL of `protocol`, preferring the page's scheme (an https page may
  // not load http media).
  function playUrl(urls, protocol) {
    const candidates = urls.play.filter((u) => u.protocol === protocol);
    return candidates.find((u) => u.url.startsWith(`${location.protocol}//`)) || candidates[0];
  }

  // `kind`: HLS, LL-HLS (hls.js in its low-latency mode), DASH or WHEP (WebRTC).
  function play(video, kind, url) {
    stop();
    const state = window.consolePlayer = { kind, url, fatalErrors: [], version: null };
    video.muted = true;
    video.srcObject = null;
    if (kind === 'WHEP') {
      current = playWhep(video, url, state);
    } else if (kind === 'DASH') {
      const dash = dashjs.MediaPlayer().create();
      state.version = dash.getVersion();
      dash.on(dashjs.MediaPlayer.events.ERROR, (e) => {
        state.fatalErrors.push(String((e.error && e.error.message) || e.error || 'error'));
      });
      dash.initialize(video, url, true);
      current = { dash };
    } else if (typeof Hls !== 'undefined' && Hls.isSupported()) {
      // LL-HLS with hls.js's catch-up on (docs/hls-dash.md, "LL-HLS at about 1.5 s"):
      // its default plays on at whatever lag it started with.
      const hls = new Hls(kind === 'LL-HLS'
        ? { lowLatencyMode: true, maxLiveSyncPlaybackRate: 1.5 }
        : { lowLatencyMode: false });
      state.version = Hls.version;
      hls.on(Hls.Events.ERROR, (_, data) => {
        if (data.fatal) state.fatalErrors.push(`${data.type}: ${data.details}`);
      });
      hls.on(Hls.Events.MANIFEST_PARSED, () => {
        video.play().catch(() => {});
      });
      hls.loadSource(url);
      hls.attachMedia(video);
      current = { hls };
    } else {
      // Safari plays HLS natively.
      video.src = url;
      video.play().catch(() => {});
      current = {};
    }
  }

  function copyButton(text) {
    return el('button', {
      class: 'copy',
      onclick: async (event) => {
        const button = event.currentTarget;
        try {
          await navigator.clipboard.writeText(text);
          button.textContent = 'copied';
        } catch (_) {
          // No clipboard (plain http on another host): select the text instead.
          const range = document.createRange();
          range.selectNodeContents(button.previousSibling);
          window.getSelection().removeAllRanges();
          window.getSelection().addRange(range);
          button.textContent = 'selected: press Ctrl+C';
        }
      },
    }, 'copy');
  }

  function urlList(list, kind) {
    if (list.length === 0) return el('p', { class: 'empty' }, `No ${kind} URL: no protocol enabled for it.`);
    return el('ul', { class: `urls ${kind}` }, list.map((u) => el('li', {},
      el('span', { class: 'protocol' }, u.protocol), ' ',
      el('code', { class: 'url' }, u.url), copyButton(u.url),
      u.note ? el('span', { class: 'note' }, ` (${u.note})`) : null)));
  }

  // The ABR ladder of a transcoded stream: its state and each rendition, linked to the
  // rendition's own page (which plays it), and the group's page.
  function ladderView(app, stream, t) {
    const link = (name) => el('a', {
      href: `#/stream/${encodeURIComponent(app)}/${encodeURIComponent(name)}`,
      class: 'rendition-link',
    }, name);
    const rows = t.renditions.map((r) => [link(r.stream), `${r.width}x${r.height}`,
      `${r.video_bitrate} kbit/s`, r.fps, `${r.speed}x`]);
    return [
      el('h3', {}, 'ABR ladder'),
      el('p', {}, `Transcode ${t.state}, ffmpeg CPU ${t.cpu_percent}%, ${t.restarts} restarts`,
        t.last_error ? ` (last error: ${t.last_error})` : '', '. All renditions: ', link(`${stream}_abr`)),
      table(['rendition', 'size', 'bitrate', 'fps', 'speed'], rows, 'No rendition.'),
    ];
  }

  // Builds the page for `app/stream` in `container`; returns the refresh function.
  async function page(container, app, stream) {
    stop();
    const path = `${encodeURIComponent(app)}/${encodeURIComponent(stream)}`;
    const urls = await StromApi.get(`/manage/stream_urls/${path}`);
    if (!urls.ok) {
      container.replaceChildren(StromViews.problem('stream URLs', urls));
      return null;
    }
    const video = el('video', { id: 'video', controls: '', muted: '', playsinline: '' });
    const status = el('pre', { id: 'player-status' });
    const choices = ['HLS', 'LL-HLS', 'DASH', 'WHEP'].map((protocol) => [protocol, playUrl(urls.data, protocol)])
      .filter(([, url]) => url);
    const buttons = el('div', { class: 'actions' }, choices.map(([protocol, url]) => el('button', {
      id: `play-${protocol.toLowerCase()}`,
      onclick: () => play(video, protocol, url.url),
    }, `Play ${protocol}`)));
    const details = el('div', { id: 'stream-details' });
    const ladder = el('div', { id: 'stream-ladder' });
    const sessions = el('div', { id: 'stream-sessions' });
    container.replaceChildren(
      el('h2', {}, `${app}/${stream}`),
      el('div', { class: 'player' }, video, buttons, status),
      details,
      ladder,
      el('h3', {}, 'Publish'), urlList(urls.data.publish, 'publish'),
      el('h3', {}, 'Play'), urlList(urls.data.play, 'play'),
      sessions);
    if (choices.length > 0) play(video, choices[0][0], choices[0][1].url);
    else status.textContent = 'No HLS, DASH or WebRTC output is enabled for this stream: nothing to play in a browser.';
    const timer = setInterval(() => {
      const state = window.consolePlayer;
      if (!state || !document.body.contains(video)) return clearInterval(timer);
      status.textContent = `${state.kind} ${state.version || ''}  ${state.url}\n`
        + `time ${video.currentTime.toFixed(1)} s  ${video.videoWidth}x${video.videoHeight}  `
        + `${state.fatalErrors.length ? `error: ${state.fatalErrors.join('; ')}` : 'no error'}`;
    }, 500);

    return async function refresh() {
      const [live, list, transcodes] = await Promise.all([
        StromApi.get('/manage/live_streams_status'), StromApi.get('/manage/sessions'),
        StromApi.get('/manage/transcodes')]);
      const transcode = transcodes.ok
        && transcodes.data.find((t) => t.app === app && t.stream === stream);
      ladder.replaceChildren(...(transcode ? ladderView(app, stream, transcode) : []));
      const entry = live.ok && live.data.filter((g) => g.app === app)
        .flatMap((g) => g.streams).find((s) => s.strm === stream);
      details.replaceChildren(entry
        ? el('dl', { class: 'facts' },
          el('dt', {}, 'State'), el('dd', { id: 'stream-state' }, 'live'),
          el('dt', {}, 'Protocol'), el('dd', {}, entry.protocol),
          el('dt', {}, 'Codecs'), el('dd', {}, [entry.vcodec, entry.acodec].filter(Boolean).join(' + ')),
          el('dt', {}, 'Resolution'), el('dd', {}, entry.resolution || ''),
          el('dt', {}, 'Bitrate'), el('dd', {}, StromViews.bits(entry.bandwidth)),
          el('dt', {}, 'Publisher'), el('dd', {}, entry.publisher_ip || entry.source_url || ''),
          el('dt', {}, 'Since'), el('dd', {}, StromViews.since(entry.publish_time)))
        : el('p', { id: 'stream-state', class: 'empty' }, live.ok ? 'Not live now.' : StromApi.failure(live)));
      const mine = list.ok ? list.data.filter((s) => s.app === app && s.stream === stream) : [];
      sessions.replaceChildren(el('h3', {}, 'Sessions'),
        table(StromViews.SESSION_HEADERS, StromViews.sessionRows(mine), 'No session.'));
    };
  }

  return { page, stop };
})();
