import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { RawData, WebSocketServer } from 'ws';
import { ApiError } from '../api/errors.ts';

/** One of Lantern's WebSocket URLs, for a Node HTTP server's `upgrade` requests. */
export interface WebSocketUpgrades {
  /**
   * Takes an `upgrade` request: true when its URL is this one's (it is then accepted, or refused with the handler's
   * own error answer), false for any other URL, which is left to the caller.
   */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Closes every open socket (1001, going away), aborting the work they run. */
  close(): void;
}

/**
 * The upgrades of one URL (`path`) served by `server` (a `ws` server without its own HTTP server): `accept` checks each
 * upgrade of that URL and opens or refuses it; a socket is never left without an error listener while it waits.
 */
export function webSocketUpgrades(
  server: WebSocketServer,
  path: string,
  accept: (request: IncomingMessage, socket: Duplex, head: Buffer, url: URL) => Promise<void>,
): WebSocketUpgrades {
  return {
    handleUpgrade(request, socket, head) {
      const url = upgradeURL(request);
      if (!url) {
        // A Host no URL can have: no request this server can answer.
        socket.destroy();
        return true;
      }
      if (url.pathname.replace(/\/$/, '') !== path) return false;
      // Node leaves an upgraded socket without an error listener: a client gone while the key is checked must not
      // throw here.
      socket.on('error', () => socket.destroy());
      accept(request, socket, head, url).catch(() => socket.destroy());
      return true;
    },
    close() {
      for (const ws of server.clients) ws.close(1001, 'server closing');
      server.close();
    },
  };
}

/** Request headers that describe the WebSocket handshake itself: not passed on to the handler's requests. */
const HANDSHAKE_HEADERS = new Set(['connection', 'upgrade', 'host', 'content-length', 'transfer-encoding']);

/**
 * `sockets` on `server`'s `upgrade` requests, each taking its own URL; an upgrade of any other URL is answered 404
 * unless the app listens for `upgrade` itself too. The sockets close with the server.
 */
export function handleWebSockets(server: Server, sockets: readonly WebSocketUpgrades[]): void {
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (sockets.some((ws) => ws.handleUpgrade(request, socket, head))) return;
    // The app's other listeners answer their own URLs; without any, the upgrade is refused as an unknown URL is.
    if (server.listeners('upgrade').length > 1) return;
    socket.on('error', () => socket.destroy());
    const error = new ApiError(404, `Unknown WebSocket URL: ${request.url ?? '/'}.`, { code: 'unknown_url' });
    refuseUpgrade(socket, Response.json(error.body(), { status: error.status })).catch(() => socket.destroy());
  };
  server.on('upgrade', onUpgrade);
  server.once('close', () => {
    for (const ws of sockets) ws.close();
  });
}

/** The URL of an upgrade request, or undefined when its Host makes none (no request this server can answer). */
export function upgradeURL(request: IncomingMessage): URL | undefined {
  try {
    return new URL(request.url ?? '/', `http://${request.headers.host ?? 'localhost'}`);
  } catch {
    return undefined;
  }
}

/** The handshake's headers (the key, origin, user agent…) for the requests made on its behalf. */
export function handshakeHeaders(request: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || HANDSHAKE_HEADERS.has(name) || name.startsWith('sec-websocket-')) continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return headers;
}

/** Writes the handler's answer as the HTTP answer to an upgrade it refused, and closes the connection. */
export async function refuseUpgrade(socket: Duplex, answer: Response): Promise<void> {
  const body = Buffer.from(await answer.arrayBuffer());
  const lines = [`HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ''}`];
  answer.headers.forEach((value, name) => {
    if (name !== 'content-length' && name !== 'connection') lines.push(`${name}: ${value}`);
  });
  lines.push(`content-length: ${body.byteLength}`, 'connection: close');
  socket.end(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), body]));
}

/** A message's text, however `ws` handed its bytes over. */
export const messageText = (data: RawData) =>
  (Array.isArray(data) ? Buffer.concat(data) : data instanceof ArrayBuffer ? Buffer.from(data) : data).toString();
