import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RemoteCandidate } from '../../src/index.ts';
import type { UpstreamConfig, UpstreamMessage } from './upstream-server.ts';

/** How long a test waits for the server process to say something before it fails instead of hanging. */
const WAIT_MS = 30_000;

/** An OpenAI-compatible server in a process of its own (see upstream-server.ts), and what it has said. */
export interface Upstream {
  /** `http://127.0.0.1:<port>/v1` */
  baseURL: string;
  /** Its API key (Lantern's own keys: `lt_…`). */
  key: string;
  readonly messages: UpstreamMessage[];
  /** Resolves with the first message (from `from` on) that matches, failing after a while rather than hanging. */
  waitFor<T extends UpstreamMessage['type']>(
    type: T,
    match?: (message: Extract<UpstreamMessage, { type: T }>) => boolean,
    from?: number,
  ): Promise<Extract<UpstreamMessage, { type: T }>>;
  /** Lets a gated server send its next event. */
  next(): void;
  /** A remote candidate for a model of this server. */
  candidate(model: string, extra?: Partial<RemoteCandidate>): RemoteCandidate;
  /** Kills the process at once (SIGKILL: connections drop mid-answer) and waits for it to be gone. */
  kill(): Promise<void>;
}

const SERVER = fileURLToPath(new URL('./upstream-server.ts', import.meta.url));

/** Forks the server and resolves once it listens. */
export async function startUpstream(config: UpstreamConfig): Promise<Upstream> {
  const child: ChildProcess = fork(SERVER, [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, UPSTREAM_CONFIG: JSON.stringify(config) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const messages: UpstreamMessage[] = [];
  const listeners = new Set<() => void>();
  child.on('message', (message: UpstreamMessage) => {
    messages.push(message);
    listeners.forEach((listener) => listener());
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const waitFor: Upstream['waitFor'] = (type, match = () => true, from = 0) =>
    new Promise((resolve, reject) => {
      const check = () => {
        const found = messages.slice(from).find((m) => m.type === type && match(m as never));
        if (!found) return false;
        settle();
        resolve(found as never);
        return true;
      };
      const timer = setTimeout(() => {
        settle();
        reject(new Error(`The upstream server never said ${type} (it said: ${JSON.stringify(messages.slice(-5))}).`));
      }, WAIT_MS);
      const settle = () => {
        clearTimeout(timer);
        listeners.delete(listen);
      };
      const listen = () => void check();
      if (!check()) listeners.add(listen);
    });

  const ready = await waitFor('ready');
  const baseURL = `http://127.0.0.1:${ready.port}/v1`;
  return {
    baseURL,
    key: ready.key,
    messages,
    waitFor,
    next: () => child.send({ type: 'next' }),
    candidate: (model, extra = {}) => ({ engine: 'remote', baseURL, model, apiKey: ready.key, ...extra }),
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}
