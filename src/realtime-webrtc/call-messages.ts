import type { RealtimeCall } from '../api/options.ts';

/**
 * What the service worker and the page say to each other about a WebRTC call of the Realtime API. The service worker
 * has no RTCPeerConnection: the page that made the call answers it, over a MessagePort the call message carries.
 */

/** Service worker → page: answer this call; reply on the message's port with a {@link CallReply}. */
export interface CallMessage {
  type: 'lantern:realtime-call';
  call: RealtimeCall;
}

/** Page → service worker, on the call's port: the SDP answer, or why there is none. */
export type CallReply = { sdp: string } | { error: string };

/** Service worker → page: the call was hung up (`POST /v1/realtime/calls/{id}/hangup`). */
export interface HangupMessage {
  type: 'lantern:realtime-hangup';
  id: string;
}

export const isCallMessage = (data: unknown): data is CallMessage =>
  typeof data === 'object' && data !== null && (data as { type?: unknown }).type === 'lantern:realtime-call';

export const isHangupMessage = (data: unknown): data is HangupMessage =>
  typeof data === 'object' && data !== null && (data as { type?: unknown }).type === 'lantern:realtime-hangup';
