import type { RealtimeCall } from '../api/options.ts';
import { RealtimeSession } from '../realtime/realtime-session.ts';
import { captureTrack } from './track-capture.ts';
import { TrackSpeaker } from './track-speaker.ts';

/**
 * How long the answer waits for its ICE candidates. Lantern's answer carries them all (the client's SDK sends its offer
 * as soon as it is set and trickles nothing), and host candidates gather at once; past this, the answer goes with what
 * it has.
 */
const GATHER_TIMEOUT_MS = 5_000;

export interface AnsweredCall {
  /** The SDP answer, with its candidates. */
  sdp: string;
  /** Ends the call: the session stops, the peer connection closes. */
  end(): void;
}

/**
 * Answers one WebRTC call of the Realtime API in this page: a peer connection for the client's offer, whose data
 * channel `oai-events` carries the session's events, whose incoming track is the session's microphone and whose
 * outgoing track plays the session's audio. The session reaches the models through this origin's /v1 (the service
 * worker) with the call's credential. The call ends when the peer goes, the data channel closes, the credential
 * expires or `end` is called.
 */
export async function answerCall(call: RealtimeCall, hooks: { onEnd?: () => void } = {}): Promise<AnsweredCall> {
  const pc = new RTCPeerConnection();
  let ended = false;
  // At the device's own rate: the 24 kHz chunks are resampled as they play, and the track goes to WebRTC at the rate
  // it encodes (48 kHz) without a second conversion.
  const context = new AudioContext();
  void context.resume().catch(() => undefined);
  // Web Audio waits for the page to be allowed sound: a click, or (Chromium) a microphone being captured. Until then
  // the call is silent both ways; say why, once.
  const silent = setTimeout(() => {
    if (context.state === 'suspended' && !ended) {
      console.warn('[lantern] the realtime call is silent until this page may play sound: start the call from a click');
    }
  }, 3000);
  const speaker = new TrackSpeaker(context);
  let channel: RTCDataChannel | undefined;
  let stopCapture: (() => void) | undefined;
  const session = new RealtimeSession({
    model: call.model,
    session: call.session,
    speaker,
    request: (path, init) => {
      const headers = new Headers(init.headers);
      headers.set('Authorization', `Bearer ${call.credential}`);
      return fetch(location.origin + path, { ...init, headers });
    },
    send: (event) => {
      if (channel?.readyState === 'open') channel.send(JSON.stringify(event));
    },
    onClose: () => end(),
  });
  const expiry = setTimeout(() => end(), Math.max(0, call.expiresAt - Date.now()));

  function end(): void {
    if (ended) return;
    ended = true;
    clearTimeout(expiry);
    clearTimeout(silent);
    session.close();
    stopCapture?.();
    speaker.close();
    channel?.close();
    pc.close();
    void context.close().catch(() => undefined);
    // The call's credential is dropped at once rather than at its expiry (a hangup that came from the API finds it gone).
    const headers = { Authorization: `Bearer ${call.credential}` };
    void fetch(`${location.origin}/v1/realtime/calls/${call.id}/hangup`, { method: 'POST', headers }).catch(() => {});
    hooks.onEnd?.();
  }

  pc.onconnectionstatechange = () => {
    if (pc.connectionState === 'failed' || pc.connectionState === 'closed') end();
  };
  pc.ondatachannel = ({ channel: opened }) => {
    if (opened.label !== 'oai-events' || channel) return;
    channel = opened;
    const open = () => session.open();
    if (opened.readyState === 'open') open();
    else opened.addEventListener('open', open, { once: true });
    opened.onmessage = (event: MessageEvent) => {
      if (typeof event.data === 'string') session.receive(event.data);
    };
    opened.onclose = () => end();
  };
  pc.ontrack = ({ track, streams }) => {
    if (track.kind !== 'audio' || stopCapture) return;
    const stream = streams[0] ?? new MediaStream([track]);
    void captureTrack(stream, (samples) => {
      if (!ended) session.appendAudio(samples);
    }).then(
      (stop) => {
        if (ended) stop();
        else stopCapture = stop;
      },
      (error: unknown) => {
        console.error('[lantern] the call’s microphone could not be read:', error);
        end();
      },
    );
  };

  try {
    await pc.setRemoteDescription({ type: 'offer', sdp: call.offer });
    // The offer's audio transceiver takes the outgoing track (addTrack reuses it); with its stream, so that the
    // client's `track` event has `streams[0]` (the Agents SDK plays that stream).
    const [track] = speaker.stream.getAudioTracks();
    if (track) pc.addTrack(track, speaker.stream);
    await pc.setLocalDescription(await pc.createAnswer());
    await gathered(pc);
    const sdp = pc.localDescription?.sdp;
    if (!sdp) throw new Error('the peer connection made no answer');
    return { sdp, end };
  } catch (error) {
    end();
    throw error;
  }
}

/** Resolves once `pc` has gathered its ICE candidates, or after GATHER_TIMEOUT_MS. */
function gathered(pc: RTCPeerConnection): Promise<void> {
  if (pc.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, GATHER_TIMEOUT_MS);
    function done() {
      clearTimeout(timer);
      pc.removeEventListener('icegatheringstatechange', check);
      resolve();
    }
    function check() {
      if (pc.iceGatheringState === 'complete') done();
    }
    pc.addEventListener('icegatheringstatechange', check);
  });
}
