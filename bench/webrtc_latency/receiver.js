// What the WebRTC player pages of bench/webrtc_latency share (whep.html, janus.html):
// the receiving RTCPeerConnection into the page's <video>, the moments of its start-up
// in window.playState (performance.now() times: `start` when play() is called, `request`
// when the SDP exchange starts, `answer` when it is done, `connected` when ICE and DTLS
// are), and the receiver's getStats figures. Each page defines window.play(url) and
// window.stop() with its own signaling.
window.playState = { status: null };

// A recvonly peer connection whose tracks play in the <video id="video">.
window.receiver = () => {
  const state = window.playState;
  const pc = window.pc = new RTCPeerConnection();
  const media = new MediaStream();
  document.getElementById('video').srcObject = media;
  pc.ontrack = (event) => media.addTrack(event.track);
  pc.onconnectionstatechange = () => {
    if (pc.connectionState === 'connected' && state.connected === undefined) {
      state.connected = performance.now();
    }
  };
  return pc;
};

// Resolves once the connection has gathered its candidates (for signaling without
// trickle ICE), or after 2 s.
window.gathered = (pc) => new Promise((resolve) => {
  if (pc.iceGatheringState === 'complete') { resolve(); return; }
  const done = () => { if (pc.iceGatheringState === 'complete') resolve(); };
  pc.addEventListener('icegatheringstatechange', done);
  setTimeout(resolve, 2000);
});

// The inbound video and audio as getStats reports them.
window.receiverStats = async () => {
  const stats = await window.pc.getStats();
  const codecs = {};
  stats.forEach((s) => { if (s.type === 'codec') codecs[s.id] = s.mimeType; });
  const out = {};
  stats.forEach((s) => {
    if (s.type !== 'inbound-rtp') return;
    const emitted = s.jitterBufferEmittedCount || 0;
    out[s.kind] = {
      codec: codecs[s.codecId] || null,
      packets: s.packetsReceived ?? 0,
      lost: s.packetsLost ?? 0,
      nacks: s.nackCount ?? null,
      framesDecoded: s.framesDecoded ?? null,
      framesDropped: s.framesDropped ?? null,
      freezes: s.freezeCount ?? null,
      jitterBufferMs: emitted ? +((s.jitterBufferDelay / emitted) * 1000).toFixed(1) : null,
      decodeMs: s.framesDecoded ? +((s.totalDecodeTime / s.framesDecoded) * 1000).toFixed(2) : null,
      samples: s.totalSamplesReceived ?? null,
    };
  });
  return out;
};
