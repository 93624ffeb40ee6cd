/**
 * XGrammar (`@mlc-ai/web-xgrammar`, the grammar engine web-llm embeds), loaded once per JS realm and started afresh
 * after it fails, and the small synchronous surface Lantern's constraint uses. Why XGrammar rather than
 * `@huggingface/transformers-structured-output`: it enforces `pattern` and string `format`s, which the other refuses;
 * its mask costs well under a millisecond a token where the other's p95 reaches hundreds of milliseconds on a real
 * vocabulary; it compiles tool-call grammars (structural tags) for issue 14; and it is what web-llm runs, so both
 * engines share one grammar. Measured in `bench/structured-output-libraries.ts`; docs/structured-output.md.
 */

import type * as XGrammarBundle from './xgrammar-bundle.ts';

/** The classes of web-xgrammar that Lantern uses, typed as far as it uses them. */
export interface XGrammarModule {
  TokenizerInfo: {
    createTokenizerInfo(
      encodedVocab: string[],
      vocabType: 'byte_level' | 'byte_fallback' | 'raw',
      prependSpace: boolean,
      vocabSize: number,
      stopTokenIds: number[],
    ): Promise<XTokenizerInfo>;
  };
  GrammarCompiler: { createGrammarCompiler(info: XTokenizerInfo, cacheEnabled?: boolean): Promise<XGrammarCompiler> };
  GrammarMatcher: {
    createGrammarMatcher(
      grammar: XCompiledGrammar,
      stopTokens?: number[],
      terminateWithoutStop?: boolean,
    ): Promise<XMatcher>;
  };
  Grammar: {
    fromJSONSchema(
      schema: string,
      anyWhitespace?: boolean,
      indent?: number,
      separators?: [string, string],
      strictMode?: boolean,
      maxWhitespace?: number,
    ): Promise<{ toString(): string; dispose(): void }>;
  };
}

export interface XTokenizerInfo {
  getVocabSize(): number;
  dispose(): void;
}

export interface XGrammarCompiler {
  compileJSONSchema(
    schema: string,
    anyWhitespace?: boolean,
    indent?: number,
    separators?: [string, string],
    strictMode?: boolean,
    maxWhitespace?: number,
  ): Promise<XCompiledGrammar>;
  compileGrammar(ebnf: string, rootRule?: string): Promise<XCompiledGrammar>;
  compileStructuralTag(tag: unknown): Promise<XCompiledGrammar>;
  dispose(): void;
}

export interface XCompiledGrammar {
  dispose(): void;
}

/** web-xgrammar's embind vector of int32. */
interface EmbindIntVector {
  size(): number;
  get(index: number): number;
  delete(): void;
}

export interface XMatcher {
  /** The raw embind handle: its methods are synchronous once the module is loaded. */
  handle: {
    AcceptToken(token: number, verbose: boolean): boolean;
    GetNextTokenBitmask(vocabSize: number): EmbindIntVector;
    IsTerminated(): boolean;
    Reset(): void;
    FindJumpForwardString(): string;
  };
  dispose(): void;
}

/** How a call into XGrammar failed inside its WebAssembly (see {@link xgrammarFailure}). */
export interface XGrammarFailure {
  /** The instance it failed in: 1 for the first one loaded, counting up with each fresh one. */
  generation: number;
  /**
   * `input`: this call aborted an instance that worked until then, so what it was given (a schema, a grammar) is the
   * likely cause — XGrammar aborts on every input it rejects, and a schema nested deep enough overflows its stack.
   * `module`: the instance had already failed (or an object of a replaced instance was used), whatever the input.
   */
  blame: 'input' | 'module';
  /** What XGrammar printed before it aborted (its `[FATAL]` line, without the source location), if anything. */
  detail: string | undefined;
}

/**
 * One evaluation of web-xgrammar: its exports, their WebAssembly instance, and the view of them that
 * {@link loadXGrammar} hands out, whose every call is watched for the failure that ends the instance.
 */
interface Instance {
  readonly generation: number;
  readonly raw: XGrammarModule;
  module: XGrammarModule;
  /** Set by the first call that failed inside the WebAssembly: nothing may call into this instance again. */
  broken: boolean;
  /** XGrammar's first `[FATAL]` line in this instance: the reason of its first (and, here, only) abort. */
  lastWords: string | undefined;
}

/** web-xgrammar's UMD factory: each call evaluates the library afresh, with a WebAssembly instance of its own. */
type Factory = (exports: Record<string, unknown>) => void;

let current: Instance | undefined;
let starting: Promise<Instance> | undefined;
let generations = 0;
/** Captured on the first load where web-xgrammar runs as an ES module (Node, vitest, unbundled browsers). */
let factory: Factory | undefined;
/** The module that holds web-xgrammar, and where a bundler put it (see xgrammar-bundle.ts). */
let bundle: typeof XGrammarBundle | undefined;
/** The guarded view of every object an instance made, to its object and instance. */
const guarded = new WeakMap<object, { target: object; instance: Instance }>();
const AsyncFunction = (async () => {}).constructor;
/** The failures seen, by error. */
const failures = new WeakMap<object, XGrammarFailure>();

/**
 * web-xgrammar, loaded and its WebAssembly instantiated: a working instance. When a call into XGrammar fails inside its
 * WebAssembly (an Emscripten abort: every input it rejects, and its stack overflowing on a deep schema; or "memory
 * access out of bounds" once aborts have leaked its memory), that instance is marked broken and never called again
 * (every later call on it, and on every object it made, throws a `WebAssembly.RuntimeError`), and the next call of
 * this function starts a fresh one. Callers that keep XGrammar objects (grammar-mask.ts) compare the module they got
 * with the one they made them from, and make them again.
 *
 * How a fresh instance is made: web-xgrammar's bundle is UMD, and its Emscripten module factory and the binding it
 * makes live in the closure of the UMD factory. Where the bundle runs as an ES module, an AMD `define` is lent for
 * its first evaluation: the UMD wrapper hands it the factory, which is then called once per instance. Where a bundler
 * has wrapped it as CommonJS (Vite's build of the engine worker), its chunk (xgrammar-bundle.ts) is imported again
 * under a new URL fragment, which evaluates it afresh. Neither uses `eval`: the CSP's `'wasm-unsafe-eval'` is enough
 * (the WebAssembly is inlined as base64 and decoded without `fetch`).
 *
 * Its Emscripten loader reads `require` and `__filename` when it finds no `document` and no `location`, which in Node
 * (an ES module realm) do not exist: they are lent for the evaluation and the instantiation, then removed. In a
 * browser or a worker `location` exists and nothing is lent.
 */
export function loadXGrammar(): Promise<XGrammarModule> {
  if (current && !current.broken) return Promise.resolve(current.module);
  starting ??= start().finally(() => (starting = undefined));
  return starting.then((instance) => instance.module);
}

/** The generation of the instance {@link loadXGrammar} last started (0 before the first). */
export function xgrammarGeneration(): number {
  return current?.generation ?? 0;
}

/**
 * Whether `error` (or its `cause`, as an EngineError wraps it) is a failure inside XGrammar's WebAssembly that
 * {@link loadXGrammar}'s instances saw, and whose input it blames.
 */
export function xgrammarFailure(error: unknown): XGrammarFailure | undefined {
  for (let e = error, depth = 0; typeof e === 'object' && e !== null && depth < 8; depth++) {
    const failure = failures.get(e);
    if (failure) return failure;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Runs `call`, synchronous calls on the raw embind handle of `owner` (an object that a module from
 * {@link loadXGrammar} made, e.g. a matcher), as the module's own methods run: refused once its instance is broken,
 * and a failure inside the WebAssembly marks it broken.
 */
export function callXGrammar<T>(owner: object, call: () => T): T {
  const instance = guarded.get(owner)?.instance;
  if (!instance) return call();
  if (instance.broken) throw unusable(instance, 'an object it made was used');
  try {
    return call();
  } catch (error) {
    throw noted(instance, error);
  }
}

/**
 * The next-token bitmask of a matcher, read synchronously into `target` (one bit per token id, 1 = allowed), as
 * transformers.js' logits processors are synchronous. web-xgrammar's own `getNextTokenBitmask()` is async only to
 * await its module's loading, which {@link loadXGrammar} has done.
 */
export function fillNextTokenBitmask(matcher: XMatcher, vocabSize: number, target: Int32Array): void {
  callXGrammar(matcher, () => {
    const vector = matcher.handle.GetNextTokenBitmask(vocabSize);
    try {
      const words = vector.size();
      for (let i = 0; i < words; i++) target[i] = vector.get(i);
    } finally {
      vector.delete();
    }
  });
}

async function start(): Promise<Instance> {
  const generation = ++generations;
  const scope = globalThis as Record<string, unknown>;
  const lend = typeof document === 'undefined' && typeof location === 'undefined' && scope.require === undefined;
  if (lend) {
    const { createRequire } = await import(/* @vite-ignore */ 'node:module');
    scope.require = createRequire(import.meta.url);
    scope.__filename = new URL(import.meta.url).pathname;
  }
  try {
    const raw = await evaluate(generation);
    const instance: Instance = { generation, raw, module: raw, broken: false, lastWords: undefined };
    instance.module = guardModule(raw, instance);
    await instantiate(instance);
    current = instance;
    return instance;
  } finally {
    if (lend) {
      delete scope.require;
      delete scope.__filename;
    }
  }
}

/** web-xgrammar's exports, evaluated afresh for this generation (not yet instantiated). */
async function evaluate(generation: number): Promise<XGrammarModule> {
  if (factory) return made(factory);
  const scope = globalThis as Record<string, unknown>;
  const first = bundle === undefined;
  // The UMD wrapper calls an AMD `define` with its factory when it runs where `exports` and `module` do not exist.
  let captured: Factory | undefined;
  const define = Object.assign(
    (dependencies: unknown, make?: unknown) => {
      const maker = typeof dependencies === 'function' ? dependencies : make;
      if (typeof maker === 'function') captured ??= maker as Factory;
    },
    { amd: {} },
  );
  const own = Object.getOwnPropertyDescriptor(scope, 'define');
  scope.define = define;
  let loaded: typeof XGrammarBundle;
  try {
    loaded = bundle
      ? // Wrapped as CommonJS by a bundler: the chunk again, under a fragment of its own.
        ((await import(/* @vite-ignore */ `${bundle.url.split('#')[0]}#xgrammar-${generation}`)) as typeof bundle)
      : await import('./xgrammar-bundle.ts');
  } finally {
    if (own) Object.defineProperty(scope, 'define', own);
    else delete scope.define;
  }
  bundle ??= loaded;
  if (captured) {
    factory = captured;
    return made(factory);
  }
  // Wrapped as CommonJS, its exports are an object that the chunk's module record keeps for the life of the realm.
  const namespace = loaded.bundled as Record<string, unknown>;
  const exported = (namespace.default ?? (first ? scope.xgrammar : undefined)) as Record<string, unknown> | undefined;
  const source = exported?.GrammarCompiler ? exported : namespace;
  if (!source.GrammarCompiler) throw new Error('web-xgrammar did not load: its bundle exported nothing Lantern knows.');
  const xg = { ...source } as unknown as XGrammarModule;
  // Emptied, so that the module record does not keep this instance (its WebAssembly memory) once it is dropped.
  if (source === exported && exported !== scope.xgrammar) for (const key of Object.keys(exported)) delete exported[key];
  if (xg.GrammarCompiler === current?.raw.GrammarCompiler) {
    throw new Error(
      `web-xgrammar could not be evaluated afresh (${loaded.url}): its bundle is shared with another chunk, so the ` +
        'instance that aborted cannot be replaced.',
    );
  }
  return xg;
}

function made(make: Factory): XGrammarModule {
  const exports: Record<string, unknown> = {};
  make(exports);
  return exports as unknown as XGrammarModule;
}

/**
 * Instantiates the WebAssembly now (web-xgrammar does on its first call), while `require` is lent. Its Emscripten
 * runtime binds `console.error` when it starts, to print XGrammar's `[FATAL]` lines before each abort: a relay is lent
 * for that start, which keeps the first such line as the instance's last words and prints every line as before.
 */
async function instantiate(instance: Instance): Promise<void> {
  const previous = console.error;
  let relaying = false;
  const relay = (...args: unknown[]) => {
    const print = console.error === relay || relaying ? previous : console.error;
    if (instance.lastWords === undefined) {
      const fatal = /\[FATAL\][^:]*:\d+: ([^\n]*)/.exec(args.map(String).join(' '));
      if (fatal) instance.lastWords = fatal[1]!.trim();
    }
    relaying = true;
    try {
      print.apply(console, args);
    } finally {
      relaying = false;
    }
  };
  console.error = relay;
  try {
    (await instance.raw.Grammar.fromJSONSchema('{"type":"null"}')).dispose();
  } finally {
    if (console.error === relay) console.error = previous;
  }
}

/** The exports of an instance as callers see them: each class's static methods watched (see {@link guard}). */
function guardModule(raw: XGrammarModule, instance: Instance): XGrammarModule {
  const module: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (name !== 'default') module[name] = typeof value === 'function' ? guard(value as object, instance) : value;
  }
  module.default = module;
  return module as unknown as XGrammarModule;
}

/**
 * `target` (a class of web-xgrammar, or an object it made) with its methods watched: each call is refused once the
 * instance is broken (but `dispose`, which then does nothing), a failure inside the WebAssembly marks it
 * broken, the objects a call returns are watched too, and watched objects passed to a call are unwrapped (refused if
 * another instance made them). Properties that are not functions (a matcher's raw `handle`) are left as they are: see
 * {@link callXGrammar}.
 */
function guard<T extends object>(target: T, instance: Instance): T {
  const proxy = new Proxy(target, {
    get(object, key) {
      const value: unknown = Reflect.get(object, key);
      if (typeof value !== 'function' || key === 'constructor') return value;
      const own = Reflect.getOwnPropertyDescriptor(object, key);
      if (own && !own.configurable && !own.writable) return value;
      const method = value as (...args: unknown[]) => unknown;
      const disposing = key === 'dispose' || key === 'delete';
      return (...args: unknown[]) => {
        const call = () =>
          invoke(instance, disposing, () =>
            method.apply(
              object,
              args.map((a) => unwrap(a, instance)),
            ),
          );
        if (!(method instanceof AsyncFunction)) return call();
        // An async method (most of web-xgrammar's) rejects, as it would, rather than throw when it is refused.
        try {
          return call();
        } catch (error) {
          return Promise.reject(error as Error);
        }
      };
    },
  });
  guarded.set(proxy, { target, instance });
  return proxy;
}

function invoke(instance: Instance, disposing: boolean, call: () => unknown): unknown {
  if (instance.broken) {
    // Nothing of a broken instance is worth freeing: it is dropped whole (embind registers no finalizer for XGrammar's
    // objects, so none runs on it later either).
    if (disposing) return undefined;
    throw unusable(instance, 'it was called');
  }
  let result: unknown;
  try {
    result = call();
  } catch (error) {
    throw noted(instance, error);
  }
  if (result instanceof Promise) {
    return result.then(
      (value) => watched(value, instance),
      (error: unknown) => {
        throw noted(instance, error);
      },
    );
  }
  return watched(result, instance);
}

function watched(value: unknown, instance: Instance): unknown {
  if (typeof value !== 'object' || value === null || guarded.has(value)) return value;
  if (Array.isArray(value) || ArrayBuffer.isView(value) || value instanceof Promise) return value;
  return guard(value, instance);
}

function unwrap(arg: unknown, instance: Instance): unknown {
  const entry = typeof arg === 'object' && arg !== null ? guarded.get(arg) : undefined;
  if (!entry) return arg;
  if (entry.instance !== instance) {
    throw unusable(entry.instance, `an object it made was passed to instance ${instance.generation}`);
  }
  return entry.target;
}

/** A failure inside the WebAssembly (an abort, a trap, its stack overflowing), not an argument refused in JS. */
function isAbort(error: unknown): error is Error {
  return (
    error instanceof WebAssembly.RuntimeError ||
    (error instanceof Error && /^Aborted\(|call stack|too much recursion/i.test(error.message))
  );
}

/** `error`, noted as a failure of `instance` if it is one; the first marks the instance broken. */
function noted(instance: Instance, error: unknown): unknown {
  if (!isAbort(error) || failures.has(error)) return error;
  const blame = instance.broken ? 'module' : 'input';
  const detail = blame === 'input' ? instance.lastWords : undefined;
  failures.set(error, { generation: instance.generation, blame, detail });
  if (!instance.broken) {
    instance.broken = true;
    console.warn(
      `[lantern] XGrammar's WebAssembly failed (${detail ?? error.message}); instance ${instance.generation} is ` +
        'dropped and the next grammar use starts a fresh one.',
    );
  }
  return error;
}

/** The error of a call refused because `instance` is broken: a RuntimeError, as a call into it would throw. */
function unusable(instance: Instance, what: string): WebAssembly.RuntimeError {
  const error = new WebAssembly.RuntimeError(
    `XGrammar's WebAssembly instance ${instance.generation} failed earlier and is no longer used, but ${what}.`,
  );
  failures.set(error, { generation: instance.generation, blame: 'module', detail: undefined });
  return error;
}
