import { openDB, type DBSchema, type IDBPDatabase, type OpenDBCallbacks } from 'idb';

/** What a call meets when the browser takes its connection away under it, before the `close` event says so. */
const CONNECTION_LOST = new Set(['InvalidStateError', 'AbortError', 'UnknownError']);

/** Runs `use` on the database's connection: the one way Lantern's IndexedDB stores reach their database. */
export type WithDatabase<DB extends DBSchema> = <T>(use: (database: IDBPDatabase<DB>) => Promise<T>) => Promise<T>;

/**
 * A long-lived IndexedDB connection that the browser may take away. The browser closes a connection when the origin's
 * storage is cleared (`close` event), and another context deleting or upgrading the database asks it to close
 * (`versionchange`), waiting until it does. So the connection closes on request, one that closed or failed to open is
 * forgotten and a fresh one opens on the next call, and a call that meets a connection closed under it is tried once
 * more on a fresh one: whether it found the connection closed (`InvalidStateError`) or its transaction was aborted by
 * the closing (`AbortError`, and Chromium's `UnknownError` when the backing store goes; an aborted transaction
 * committed nothing, so running it again is safe). Without this, one cleared storage answered 500 until the service
 * worker restarted, a request that met the clearing half-way answered 500, and a page deleting the database waited for
 * as long as the service worker lived. `onLost` is called whenever a connection is given up: what the database held may
 * have changed without this context writing it (deleted, cleared).
 */
export function reopeningDatabase<DB extends DBSchema>(
  name: string,
  version: number,
  upgrade: NonNullable<OpenDBCallbacks<DB>['upgrade']>,
  onLost?: () => void,
): WithDatabase<DB> {
  let current: Promise<IDBPDatabase<DB>> | undefined;
  const forget = (connection: Promise<IDBPDatabase<DB>>) => {
    if (current !== connection) return;
    current = undefined;
    onLost?.();
  };
  const open = (): Promise<IDBPDatabase<DB>> => {
    if (current) return current;
    const connection: Promise<IDBPDatabase<DB>> = openDB<DB>(name, version, {
      upgrade,
      blocking: () => {
        forget(connection);
        void connection.then((database) => database.close());
      },
      terminated: () => forget(connection),
    });
    current = connection;
    connection.catch(() => forget(connection));
    return connection;
  };
  return async (use) => {
    const connection = open();
    try {
      return await use(await connection);
    } catch (error) {
      if (!(error instanceof DOMException && CONNECTION_LOST.has(error.name))) throw error;
      forget(connection);
      return use(await open());
    }
  };
}
