/**
 * XGrammar (`@mlc-ai/web-xgrammar`, the grammar engine web-llm embeds) loaded once per JS realm, and the small
 * synchronous surface Lantern's constraint uses. Why XGrammar rather than `@huggingface/transformers-structured-output`:
 * it enforces `pattern` and string `format`s, which the other refuses; its mask costs well under a millisecond a token
 * where the other's p95 reaches hundreds of milliseconds on a real vocabulary; it compiles tool-call grammars
 * (structural tags) for issue 14; and it is what web-llm runs, so both engines share one grammar. Measured in
 * `bench/structured-output-libraries.ts`; docs/structured-output.md.
 */

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
  };
  dispose(): void;
}

let loading: Promise<XGrammarModule> | undefined;

/**
 * web-xgrammar, loaded and its WebAssembly instantiated. Its bundle is UMD: it sets `globalThis.xgrammar` and exports
 * nothing to ESM. Its Emscripten loader reads `require` and `__filename` when it finds no `document` and no `location`,
 * which in Node (an ES module realm) do not exist: they are lent for the import and the instantiation, then removed.
 * In a browser or a worker `location` exists and nothing is lent. The WebAssembly is inlined as base64 and decoded
 * without `fetch` or `eval`, so it needs only the CSP's `'wasm-unsafe-eval'`.
 */
export function loadXGrammar(): Promise<XGrammarModule> {
  loading ??= (async () => {
    const scope = globalThis as Record<string, unknown>;
    const lend = typeof document === 'undefined' && typeof location === 'undefined' && scope.require === undefined;
    if (lend) {
      const { createRequire } = await import(/* @vite-ignore */ 'node:module');
      scope.require = createRequire(import.meta.url);
      scope.__filename = new URL(import.meta.url).pathname;
    }
    try {
      const module = (await import('@mlc-ai/web-xgrammar')) as Record<string, unknown>;
      // Run as an ES module it registers a global; a bundler that wraps it as CommonJS hands its exports over instead.
      const xg = (scope.xgrammar ?? (module.GrammarCompiler ? module : module.default)) as XGrammarModule | undefined;
      if (!xg) throw new Error('web-xgrammar did not register itself on globalThis.');
      // Instantiates the WebAssembly now, while `require` is lent.
      (await xg.Grammar.fromJSONSchema('{"type":"null"}')).dispose();
      return xg;
    } finally {
      if (lend) {
        delete scope.require;
        delete scope.__filename;
      }
    }
  })();
  loading.catch(() => (loading = undefined));
  return loading;
}

/**
 * The next-token bitmask of a matcher, read synchronously into `target` (one bit per token id, 1 = allowed), as
 * transformers.js' logits processors are synchronous. web-xgrammar's own `getNextTokenBitmask()` is async only to
 * await its module's loading, which {@link loadXGrammar} has done.
 */
export function fillNextTokenBitmask(matcher: XMatcher, vocabSize: number, target: Int32Array): void {
  const vector = matcher.handle.GetNextTokenBitmask(vocabSize);
  try {
    const words = vector.size();
    for (let i = 0; i < words; i++) target[i] = vector.get(i);
  } finally {
    vector.delete();
  }
}
