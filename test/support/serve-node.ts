import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ServedNode {
  /** `http://127.0.0.1:PORT/v1`. */
  baseURL: string;
  key: string;
  /** The keys of the apps `LANTERN_KEY_NAMES` named after the first, by name. */
  otherKeys: Record<string, string>;
  /** The server's process id. */
  pid: number;
  /** Why each engine thread that had to be replaced was, as the server logged it. */
  replacedThreads(): string[];
  close(): Promise<void>;
}

/**
 * Starts `npm run serve:node` (scripts/serve.ts under tsx) on a free port, as a person would, and reads its address
 * and key from what it prints. `env` adds to the environment (`LANTERN_CORS_ORIGINS`).
 */
export function serveNode(env: Record<string, string> = {}): Promise<ServedNode> {
  const child = spawn(process.execPath, [`${ROOT}/node_modules/tsx/dist/cli.mjs`, 'scripts/serve.ts'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Passed on as it comes, and read for the engine threads the server replaced.
  const replaced: string[] = [];
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text: string) => {
    process.stderr.write(text);
    for (const [, why] of text.matchAll(/the engine thread is replaced: ([^\n]*)/g)) replaced.push(why!);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const close = async () => {
    if (child.exitCode === null) child.kill();
    await exited;
  };
  return new Promise<ServedNode>((resolve, reject) => {
    let printed = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text: string) => {
      printed += text;
      const base = /serving the bundled models at (http:\/\/\S+\/v1)/.exec(printed)?.[1];
      const key = /API key[^\n]*:\s+(lt_\S+)/.exec(printed)?.[1];
      const names = (env.LANTERN_KEY_NAMES ?? '').split(',').slice(1);
      const otherKeys = Object.fromEntries(
        [...printed.matchAll(/API key of ([^:\n]+):\s+(lt_\S+)/g)].map(([, name, other]) => [name!, other!]),
      );
      if (base && key && Object.keys(otherKeys).length >= names.length) {
        resolve({ baseURL: base, key, otherKeys, pid: child.pid!, replacedThreads: () => [...replaced], close });
      }
    });
    child.once('exit', (code) => reject(new Error(`scripts/serve.ts exited (${code}) before serving:\n${printed}`)));
  });
}
