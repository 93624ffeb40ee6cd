/**
 * Lantern's Node-only parts (`lantern/node`), kept out of the browser's entry points: the Responses API's WebSocket
 * mode and the Realtime API's WebSocket form for a Node HTTP server that serves the handler.
 */
export {
  handleResponsesWebSocket,
  responsesWebSocket,
  type ResponsesWebSocket,
  type ResponsesWebSocketOptions,
} from './responses-websocket.ts';
export { RESPONSES_WEBSOCKET_PATH, type ResponsesWebSocketError } from '../websocket-mode/responses-session.ts';
export {
  handleRealtimeWebSocket,
  REALTIME_WEBSOCKET_PATH,
  realtimeWebSocket,
  type RealtimeWebSocket,
  type RealtimeWebSocketOptions,
} from './realtime-websocket.ts';
export { handleWebSockets, type WebSocketUpgrades } from './websocket-upgrade.ts';
