/**
 * Lantern's Node-only parts (`lantern/node`), kept out of the browser's entry points: the Responses API's WebSocket
 * mode for a Node HTTP server that serves the handler.
 */
export {
  handleResponsesWebSocket,
  responsesWebSocket,
  type ResponsesWebSocket,
  type ResponsesWebSocketOptions,
} from './responses-websocket.ts';
export { RESPONSES_WEBSOCKET_PATH, type ResponsesWebSocketError } from '../websocket-mode/responses-session.ts';
