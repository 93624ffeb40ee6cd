/**
 * Notices that an origin's key records changed, for the contexts that share them (pages, the service worker): each
 * KeyRing answers keys it verified from memory, and forgets them all on a notice. A revocation written anywhere thus
 * reaches every context's memory: this context's at once, the others' by a BroadcastChannel message.
 */

/**
 * How long a write waits for its own notice to come back through the channel, in milliseconds. The notice comes back
 * once the browser has handed it to every context of the origin, so a page that revokes a key and then sends a request
 * with it finds the service worker's memory already cleared. It comes back in well under a millisecond; the wait is
 * bounded only so that a browser that never delivers it delays a write rather than hanging it.
 */
const ECHO_WAIT_MS = 250;

export interface KeyChanges {
  /** Calls `listener` on every notice, from this context or another; returns a function that stops the calls. */
  watch(listener: () => void): () => void;
  /**
   * Tells this context's listeners (before it returns) and every other context's (by the time it resolves) that the
   * records changed. Call it after the change is committed: a context that reads again on the notice must see it.
   */
  announce(): Promise<void>;
  /** Tells this context's listeners only: the records may have changed unseen here (the database went away). */
  notifyHere(): void;
}

/** One per database name in this context, so that two stores of one database in a context hear each other at once. */
const byName = new Map<string, KeyChanges>();

/**
 * The notices of the key database `name` in this context, or undefined where there is no BroadcastChannel (Safari
 * before 15.4): a context could then not hear another's revocation, and must read the records on every request.
 */
export function keyChanges(name: string): KeyChanges | undefined {
  if (typeof BroadcastChannel !== 'function') return undefined;
  let changes = byName.get(name);
  if (!changes) byName.set(name, (changes = channelChanges(`lantern:key-changes:${name}`)));
  return changes;
}

function channelChanges(channelName: string): KeyChanges {
  const listeners = new Set<() => void>();
  const notifyHere = () => {
    for (const listener of listeners) listener();
  };
  /** This context's notices in flight, by their id: their echo ends the writer's wait. */
  const echoes = new Map<string, () => void>();
  // Ids unique across contexts without `crypto.randomUUID`, which a page outside a secure context lacks.
  const context = Math.random().toString(36).slice(2);
  let sent = 0;
  // Two channel objects: a channel never delivers a message to the object that posted it, so `inbox` hears this
  // context's own notices (their echo) as well as the other contexts'. Opened on first use; never closed, as the
  // stores that use them live as long as their context. In Node, unref'd so that they keep no process alive.
  let outbox: BroadcastChannel | undefined;
  let inbox: BroadcastChannel | undefined;
  const open = () => {
    if (outbox) return outbox;
    outbox = new BroadcastChannel(channelName);
    inbox = new BroadcastChannel(channelName);
    inbox.onmessage = (event: MessageEvent<unknown>) => {
      const id = typeof event.data === 'string' ? event.data : undefined;
      const echo = id === undefined ? undefined : echoes.get(id);
      if (echo) echo();
      else notifyHere(); // another context's notice (or one whose writer stopped waiting): forget either way
    };
    for (const channel of [outbox, inbox]) (channel as { unref?: () => void }).unref?.();
    return outbox;
  };
  return {
    watch(listener) {
      open();
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    notifyHere,
    async announce() {
      notifyHere();
      const channel = open();
      const id = `${context}:${++sent}`;
      let timer: ReturnType<typeof setTimeout> | undefined;
      try {
        await new Promise<void>((resolve) => {
          echoes.set(id, resolve);
          timer = setTimeout(resolve, ECHO_WAIT_MS);
          channel.postMessage(id);
        });
      } finally {
        clearTimeout(timer);
        echoes.delete(id);
      }
    },
  };
}

/** Notices for records that only this context holds (memory): its listeners hear each change at once. */
export function localKeyChanges(): KeyChanges {
  const listeners = new Set<() => void>();
  const notifyHere = () => {
    for (const listener of listeners) listener();
  };
  return {
    watch(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    notifyHere,
    announce: async () => notifyHere(),
  };
}
