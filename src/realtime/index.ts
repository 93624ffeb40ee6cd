/** The Realtime API's session core: transport-agnostic (no DOM, no socket); WebRTC and WebSocket transports run it. */
export {
  RealtimeSession,
  chatModelFor,
  CONTEXT_ITEMS,
  MAX_CLIENT_EVENT_CHARS,
  type RealtimeMetrics,
  type RealtimeSessionOptions,
  type RealtimeSpeaker,
} from './realtime-session.ts';
export type { RealtimeServerEvent, RealtimeItem, RealtimeResponse, RealtimeErrorBody } from './realtime-events.ts';
export { REALTIME_VOICES, defaultSession, mergeSession, type RealtimeSessionConfig } from './session-config.ts';
export { MAX_CONVERSATION_ITEMS } from './conversation.ts';
export { MAX_INPUT_BUFFER_MS } from './input-audio-buffer.ts';
export {
  SESSION_RATE,
  base64ToBytes,
  bytesToBase64,
  pcm16FromBytes,
  pcm16ToBytes,
  pcm16ToFloat,
  floatToPcm16,
  muLawDecode,
  muLawEncode,
  aLawDecode,
  aLawEncode,
} from './pcm-audio.ts';
