import { PROTOCOL_VERSION } from '../src/worker/protocol.ts';

/** The windows of a service worker, as `clients.matchAll({ type: 'window' })` gives them. */
export interface WindowClients {
  matchAll(options: { type: 'window' }): Promise<readonly { id: string }[]>;
}

/**
 * The protocol version of each window of this service worker, as it told it (a `ProtocolCheck`, sent by every page of
 * Lantern once controlled, on each change of controller and when asked for a port) or offered a port of it; and from
 * them, whether any open window can host an engine worker of this service worker's version.
 */
export class PageVersions {
  readonly #clients: WindowClients;
  readonly #told = new Map<string, number>();

  constructor(clients: WindowClients) {
    this.#clients = clients;
  }

  /** The window `id` speaks `protocol` (absent: a page from before versions, which sends none). */
  note(id: string, protocol: number | undefined): void {
    this.#told.set(id, protocol ?? 0);
  }

  /**
   * Why no open window can host an engine worker of this version, when every open window has told its version and
   * none is this one: a request then waits for no port. Undefined while a window is of this version, or has not told
   * (it may be one that is starting).
   */
  async hostless(): Promise<string | undefined> {
    const windows = await this.#clients.matchAll({ type: 'window' });
    for (const id of this.#told.keys()) if (!windows.some((w) => w.id === id)) this.#told.delete(id);
    const told = windows.map((w) => this.#told.get(w.id));
    if (told.length === 0 || told.some((v) => v === undefined || v === PROTOCOL_VERSION)) return undefined;
    return (
      `The open pages of this app run another version of it than its service worker (protocol ${told.join(', ')} ` +
      `against ${PROTOCOL_VERSION}): reload them, then retry.`
    );
  }
}
