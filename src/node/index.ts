/**
 * Lantern's Node-only parts (`lantern/node`), kept out of the browser's entry points: the Responses API's WebSocket
 * mode for a Node HTTP server that serves the handler.
 */
export {
  handleResponsesWebSocket,
  responsesWebSocket,
  RESPONSES_WEBSOCKET_PATH,
  type ResponsesWebSocket,
  type ResponsesWebSocketError,
  type ResponsesWebSocketOptions,
} from './responses-websocket.ts';
