import type { ModelTask } from '../engine-interface/index.ts';
import { neededLimits, type AdapterLimits, type DeviceCapabilities } from '../engines/engine-descriptor.ts';
import {
  candidateKey,
  ENGINES,
  engineOf,
  type EngineName,
  type LocalCandidate,
  type ModelCandidate,
  type RemoteCandidate,
  type SpeechVoices,
} from '../engines/engine-registry.ts';

// Each engine's candidate type and device rules live in its folder (`src/engines/<name>/<name>-engine.ts`), registered
// in `src/engines/engine-registry.ts`; they are exported from here too, where profiles are written.
export {
  isHubModel,
  WASM_MEMORY_BYTES,
  type AdapterLimits,
  type DeviceCapabilities,
  type GPUNeeds,
  type ReadsImages,
} from '../engines/engine-descriptor.ts';
export {
  basicCredentials,
  candidateKey,
  candidateSecrets,
  ONNX_FILES,
  redactURL,
  WEB_LLM_LIMITS,
  type EngineName,
  type LlamaCppCandidate,
  type LocalCandidate,
  type ModelCandidate,
  type RemoteCandidate,
  type RemoteTimeouts,
  type SpeechVoices,
  type TransformersCandidate,
  type VoiceAccent,
  type WebLLMCandidate,
} from '../engines/engine-registry.ts';

/**
 * The public model IDs of the API: three chat models and one embedding model (spec §1), one speech-to-text model
 * (`/v1/audio/transcriptions` and `/translations`) and one text-to-speech model (`/v1/audio/speech`).
 */
export const PUBLIC_MODELS = Object.freeze({
  'crimson-falcon-4': 'chat',
  'indigo-owl-4': 'chat',
  'amber-phoenix-4': 'chat',
  'jade-mole-4': 'embeddings',
  'teal-finch-4': 'transcription',
  'ochre-lark-4': 'speech',
} as const satisfies Record<string, ModelTask>);

export type PublicModelId = keyof typeof PUBLIC_MODELS;

/**
 * The OpenAI model names each public ID answers to in `DEFAULT_PROFILE` and `bundledProfile`, so that an app written
 * for OpenAI runs unmodified: the small, fast models to the smallest chat model; the general ones to the middle one;
 * the reasoning models (o-series, `gpt-5`) to the one that thinks by default; the embedding models to the embedding
 * model (whatever dimensions the name has at OpenAI: the vectors are the model's own); the transcription models to the
 * speech-to-text model; the speech models to the text-to-speech model. A profile of the app's own takes
 * them with `aliases: OPENAI_ALIASES[id]`, other names, or none.
 */
export const OPENAI_ALIASES = Object.freeze({
  'crimson-falcon-4': Object.freeze(['gpt-4.1-nano', 'gpt-5-nano', 'gpt-3.5-turbo']),
  'indigo-owl-4': Object.freeze([
    'gpt-4o-mini',
    // The Realtime API's sessions chat with this model (src/realtime/ sends every realtime model name as this one).
    'gpt-realtime',
    'gpt-4.1-mini',
    'gpt-5-mini',
    'gpt-4o',
    'gpt-4.1',
    'gpt-4-turbo',
    'gpt-4',
  ]),
  'amber-phoenix-4': Object.freeze(['o4-mini', 'o3-mini', 'o3', 'o1', 'o1-mini', 'gpt-5']),
  'jade-mole-4': Object.freeze(['text-embedding-3-small', 'text-embedding-3-large', 'text-embedding-ada-002']),
  'teal-finch-4': Object.freeze(['whisper-1', 'gpt-4o-transcribe', 'gpt-4o-mini-transcribe']),
  'ochre-lark-4': Object.freeze(['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts']),
}) satisfies Readonly<Record<PublicModelId, readonly string[]>>;

/**
 * Where a profile's IDs are served when a chain has both kinds: `local-first` (the default) tries the local
 * candidates this device can run, then the remote ones; `remote-first` the remote ones, then the local ones;
 * `local-only` never forwards a request. The order within each kind is the profile's.
 */
export type RoutingPolicy = 'local-first' | 'remote-first' | 'local-only';

/** What decides which candidate serves a request: the profile, its policy, and what this device can run. */
export interface RoutingConfig {
  profile: ModelProfile;
  policy: RoutingPolicy;
  device: DeviceCapabilities;
  /**
   * Candidates that failed to load where this device's engine runs, and broke the realm they ran in: the walk skips
   * them (see `withoutFailures`). Kept by whoever replaces that realm (the host page, Node's server) across engines.
   */
  failed?: readonly CandidateFailure[];
}

/** What a public model ID runs: candidates in order of preference; the first this device can run is used. */
export interface ModelEntry {
  task: ModelTask;
  /** When this mapping was published, in Unix seconds (the `created` of `/v1/models`). */
  created: number;
  candidates: readonly ModelCandidate[];
  /**
   * Other names a request may give this model, such as the OpenAI model names an app written for OpenAI sends
   * (`gpt-4o-mini`; see `OPENAI_ALIASES`). A request that names one is served by this entry, and answered under the ID
   * (as OpenAI answers `gpt-4o-mini` with `gpt-4o-mini-2024-07-18`); `/v1/models` lists the IDs only. An alias may be
   * neither an ID nor another entry's alias: such a profile is refused (`validateProfile`).
   */
  aliases?: readonly string[];
  /**
   * For a model with a thinking mode: the reasoning effort of a request that names none (`reasoning_effort`,
   * Responses' `reasoning.effort`). Default `none`: thinking off.
   */
  defaultReasoningEffort?: 'none' | 'minimal' | 'low' | 'medium' | 'high';
}

/** Public model IDs and what each runs. */
export type ModelProfile = Readonly<Record<string, ModelEntry>>;

/** A browser without WebGPU: only CPU candidates, in WebAssembly's memory. */
export const CPU_ONLY: DeviceCapabilities = Object.freeze({ webgpu: false, shaderF16: false });

/** Node: only CPU candidates, run natively (onnxruntime-node, node-llama-cpp), with no 4 GiB limit of WebAssembly's. */
export const NODE_CPU: DeviceCapabilities = Object.freeze({ webgpu: false, shaderF16: false, cpu: 'native' });

/** Whether a candidate runs on the GPU (WebGPU). */
export const runsOnGPU = (candidate: ModelCandidate): boolean => engineOf(candidate).runsOnGPU(candidate);

/** Whether a candidate computes in half precision on the GPU, which needs the adapter's `shader-f16` feature. */
export const needsShaderF16 = (candidate: ModelCandidate): boolean => engineOf(candidate).needsShaderF16(candidate);

/** The adapter limits a GPU candidate needs: its engine's own, raised by the candidate's `requiredLimits`. */
export const requiredLimits = (candidate: ModelCandidate): Partial<AdapterLimits> =>
  neededLimits(engineOf(candidate).limits, 'requiredLimits' in candidate ? candidate : {});

/**
 * Why this device cannot run the candidate, or undefined when it can: its engine's rules (`whyNotRunnable` of its
 * descriptor), such as WebAssembly's 4 GiB only where WebAssembly holds the weights.
 */
export const whyNotRunnable = (candidate: ModelCandidate, device: DeviceCapabilities): string | undefined =>
  engineOf(candidate).whyNotRunnable(candidate, device);

/** Whether this device can run the candidate at all (a remote one it can always call). */
export function canRun(candidate: ModelCandidate, device: DeviceCapabilities): boolean {
  return whyNotRunnable(candidate, device) === undefined;
}

/** Whether a candidate is served by a server rather than run on this device (its engine is not local). */
export const isRemote = (candidate: ModelCandidate): candidate is RemoteCandidate => !engineOf(candidate).local;

/**
 * The entry's local candidates that this device can run, in the order they are tried: the local fallback chain. On a
 * fallback (software) adapter the CPU candidates come before the GPU ones, unless a GPU candidate says otherwise; the
 * candidates that read images and those that do not are reordered apart, so a chain's text models still come before
 * the vision models that follow them (these answer text only when every text model failed).
 */
export function usableCandidates(entry: ModelEntry, device: DeviceCapabilities): LocalCandidate[] {
  const usable = entry.candidates.filter((c): c is LocalCandidate => !isRemote(c) && canRun(c, device));
  if (!device.fallbackAdapter) return usable;
  const deferred = (candidate: LocalCandidate) => runsOnGPU(candidate) && !candidate.evenOnFallbackAdapter;
  const groups = [...new Set(usable.map((c) => c.images === true))];
  return groups.flatMap((images) => {
    const group = usable.filter((c) => (c.images === true) === images);
    return [...group.filter((c) => !deferred(c)), ...group.filter(deferred)];
  });
}

const aliasMaps = new WeakMap<ModelProfile, ReadonlyMap<string, string>>();

/**
 * Each alias of the profile and the ID it names. Throws a TypeError that names the clash when an alias is also an ID,
 * or belongs to two entries: a request naming it could not say which model it means.
 */
export function profileAliases(profile: ModelProfile): ReadonlyMap<string, string> {
  const known = aliasMaps.get(profile);
  if (known) return known;
  const aliases = new Map<string, string>();
  for (const [id, entry] of Object.entries(profile)) {
    for (const alias of entry.aliases ?? []) {
      if (typeof alias !== 'string' || alias === '') {
        throw new TypeError(
          `The aliases of \`${id}\` must be names (non-empty strings); one is ${JSON.stringify(alias)}.`,
        );
      }
      if (Object.hasOwn(profile, alias)) {
        throw new TypeError(`\`${alias}\` cannot be an alias of \`${id}\`: it is a model ID of the profile.`);
      }
      const other = aliases.get(alias);
      if (other !== undefined && other !== id) {
        throw new TypeError(`\`${alias}\` is an alias of both \`${other}\` and \`${id}\`: an alias names one model.`);
      }
      aliases.set(alias, id);
    }
  }
  aliasMaps.set(profile, aliases);
  return aliases;
}

/**
 * Refuses a profile that cannot be served as it is (a TypeError saying why): today, an alias that is also an ID or
 * belongs to two entries. `createEngine` and `startLocalAPI` call it on the profile they are given.
 */
export function validateProfile(profile: ModelProfile): void {
  profileAliases(profile);
}

/** The ID a request's model name means: the name itself when it is an ID, the ID it is an alias of, or undefined. */
export function resolveModelName(profile: ModelProfile, name: string): string | undefined {
  return Object.hasOwn(profile, name) ? name : profileAliases(profile).get(name);
}

/** A candidate that failed to load, named by its `candidateKey`, and why. */
export interface CandidateFailure {
  candidate: string;
  reason: string;
}

/** What a public model ID will try on this device, and what it will not, with why. */
export interface ModelChain {
  /** What will be tried, first to last (the local candidates; see `candidateChain` for the servers too). */
  candidates: LocalCandidate[];
  /** Candidates that failed to load on this page and are skipped from now on (until `restartEngine()`). */
  failed: CandidateFailure[];
  /** Candidates this device cannot run: no WebGPU, no `shader-f16`, or over the adapter's limits. */
  skipped: { candidate: string; reason: string }[];
}

/**
 * The fallback chain of `entry` on this device, without the candidates that already failed to load here (see
 * {@link withoutFailures}), and the candidates this device cannot run, with why.
 */
export function modelChain(
  entry: ModelEntry,
  device: DeviceCapabilities,
  failures: Iterable<CandidateFailure> = [],
): ModelChain {
  return {
    ...withoutFailures(usableCandidates(entry, device), failures),
    skipped: entry.candidates.flatMap((candidate) => {
      const reason = whyNotRunnable(candidate, device);
      return reason === undefined ? [] : [{ candidate: candidateKey(candidate), reason }];
    }),
  };
}

/**
 * The candidates still to try of a local chain, and those skipped for having failed to load here. The last candidate
 * is never left out for having failed: it is tried again on every request, so that fixing what broke it (a file that
 * was missing, a full disk) heals the model.
 */
export function withoutFailures(
  usable: readonly LocalCandidate[],
  failures: Iterable<CandidateFailure> = [],
): Pick<ModelChain, 'candidates' | 'failed'> {
  const known = new Map([...failures].map((f) => [f.candidate, f]));
  const left = usable.filter((c) => !known.has(candidateKey(c)));
  const candidates = left.length > 0 ? left : usable.slice(-1);
  const tried = new Set(candidates.map(candidateKey));
  // Each failure once, though two candidates of the chain share its key (the same files on the same device, one of
  // them told it reads images).
  const keys = [...new Set(usable.map(candidateKey))];
  return { candidates, failed: keys.flatMap((key) => (tried.has(key) ? [] : [known.get(key)!])) };
}

/**
 * Every candidate that can serve the entry here, in the order the policy tries them: the local chain (`modelChain`,
 * without the candidates that failed to load here), and the remote candidates before it, after it, or not at all.
 */
export function candidateChain(
  entry: ModelEntry,
  device: DeviceCapabilities,
  policy: RoutingPolicy = 'local-first',
  failures: Iterable<CandidateFailure> = [],
): ModelCandidate[] {
  const local = modelChain(entry, device, failures).candidates;
  const remote = policy === 'local-only' ? [] : entry.candidates.filter(isRemote);
  return policy === 'remote-first' ? [...remote, ...local] : [...local, ...remote];
}

/**
 * The profile with every hub download (hub IDs, web-llm models) fetched from `hub`, a mirror of the Hugging Face hub
 * (its host, with the hub's paths: `https://hf-mirror.example/`), for apps that serve models from their own CDN or
 * cannot reach huggingface.co. Files are stored per host: a model stored from the hub downloads again from a mirror.
 *
 * @example startLocalAPI({ profile: withHub(DEFAULT_PROFILE, 'https://models.example.com/') })
 */
export function withHub(profile: ModelProfile, hub: string): ModelProfile {
  const mirrored = (candidate: ModelCandidate): ModelCandidate =>
    // Only engines whose candidates have a `hub` say that a mirror applies.
    engineOf(candidate).usesHub(candidate) ? ({ ...candidate, hub } as ModelCandidate) : candidate;
  return Object.freeze(
    Object.fromEntries(
      Object.entries(profile).map(([id, entry]) => [id, { ...entry, candidates: entry.candidates.map(mirrored) }]),
    ),
  );
}

/**
 * The profile with only the named engines' candidates in every chain, and only the IDs that keep any: a profile of one
 * engine, to serve or test that engine alone, or to keep an app off an engine it does not ship.
 *
 * @example createEngine({ profile: withEngines(bundledProfile(modelsFolder), ['llama.cpp']) })
 */
export function withEngines(profile: ModelProfile, engines: readonly EngineName[]): ModelProfile {
  const unknown = engines.filter((name) => !Object.hasOwn(ENGINES, name));
  if (unknown.length > 0) {
    throw new TypeError(`Unknown engine ${unknown.join(', ')}: the engines are ${Object.keys(ENGINES).join(', ')}.`);
  }
  const kept = new Set<string>(engines);
  return Object.freeze(
    Object.fromEntries(
      Object.entries(profile).flatMap(([id, entry]) => {
        const candidates = entry.candidates.filter((candidate) => kept.has(candidate.engine));
        return candidates.length > 0 ? [[id, { ...entry, candidates }]] : [];
      }),
    ),
  );
}

/** The bundled models that have a GGUF too (`<model>/gguf/<model>-f32.gguf`). */
const GGUF_FIXTURES = new Set(['tiny-chat', 'tiny-think', 'tiny-embed']);

/** tiny-speech's voices (each imitates an espeak-ng voice), and OpenAI's names mapped onto them by gender and accent. */
const TINY_SPEECH: SpeechVoices = Object.freeze({
  voices: Object.freeze({ us_female: 'en-us', us_male: 'en-us', gb_female: 'en-gb', gb_male: 'en-gb' }),
  openaiVoices: Object.freeze({
    alloy: 'us_female',
    ash: 'us_male',
    ballad: 'gb_male',
    coral: 'us_female',
    echo: 'us_male',
    fable: 'gb_male',
    onyx: 'us_male',
    nova: 'us_female',
    sage: 'gb_female',
    shimmer: 'gb_female',
    verse: 'gb_male',
    marin: 'us_female',
    cedar: 'us_male',
  }),
});

/** The date the bundled fixture models were generated (`scripts/fixtures/generate.py`). */
const BUNDLED_CREATED = Date.UTC(2026, 10, 21) / 1000;

/**
 * The bundled profile: the project's own tiny fixture models (`public/models`), so all six IDs answer offline and in
 * tests, on WebGPU where there is an adapter (a software one included) and on the CPU everywhere. The three chat IDs
 * share one tiny chat model, and the two that do not think one tiny vision model for requests with images; each ID
 * answers to its `OPENAI_ALIASES` too, and `amber-phoenix-4` thinks by default (`defaultReasoningEffort: 'medium'`),
 * as in `DEFAULT_PROFILE`.
 *
 * The chat models and the embedding model are also GGUF files (`scripts/fixtures/gguf_convert.py`, the same weights),
 * for llama.cpp: last in their chains, or alone with `{ engines: ['llama.cpp'] }`.
 *
 * @param base - where `public/models` is: an absolute folder path in Node, a URL path such as `/models` in a browser.
 * @param options.engines - keep only these engines' candidates (see {@link withEngines}).
 */
export function bundledProfile(base: string, options: { engines?: readonly EngineName[] } = {}): ModelProfile {
  const profile = bundledModels(base);
  return options.engines ? withEngines(profile, options.engines) : profile;
}

function bundledModels(base: string): ModelProfile {
  const at = (name: string) => `${base.replace(/\/+$/, '')}/${name}`;
  // The tiny fixtures answer in moments even on a software adapter, and there they test the WebGPU path (SwiftShader
  // is the only WebGPU of headless Chromium): they keep WebGPU first everywhere.
  const anywhere = (name: string): ModelCandidate[] => [
    { engine: 'transformers', model: at(name), dtype: 'fp32', device: 'webgpu', evenOnFallbackAdapter: true },
    { engine: 'transformers', model: at(name), dtype: 'fp32', device: 'cpu' },
    ...(GGUF_FIXTURES.has(name)
      ? [{ engine: 'llama.cpp' as const, model: at(name), file: `gguf/${name}-f32.gguf` }]
      : []),
  ];
  // tiny-vision: a LLaVA-layout model trained on images it draws (scripts/fixtures/vision_fixture.py). It serves a
  // request with images (the router keeps only the candidates that read them); text alone goes to tiny-chat first.
  const seeing = anywhere('tiny-vision').map((candidate) => ({ ...candidate, images: true }));
  const chat = (id: keyof typeof OPENAI_ALIASES, model = 'tiny-chat', vision = true): ModelEntry => ({
    task: 'chat',
    created: BUNDLED_CREATED,
    candidates: [...anywhere(model), ...(vision ? seeing : [])],
    aliases: OPENAI_ALIASES[id],
  });
  return Object.freeze({
    'crimson-falcon-4': chat('crimson-falcon-4'),
    'indigo-owl-4': chat('indigo-owl-4'),
    // The reasoning ID thinks, as the real profile's Qwen3-4B does: tiny-think, trained on Qwen3's template.
    'amber-phoenix-4': { ...chat('amber-phoenix-4', 'tiny-think', false), defaultReasoningEffort: 'medium' },
    'jade-mole-4': {
      task: 'embeddings',
      created: BUNDLED_CREATED,
      candidates: anywhere('tiny-embed'),
      aliases: OPENAI_ALIASES['jade-mole-4'],
    },
    // tiny-whisper: a Whisper trained on espeak-ng speech of a small vocabulary (scripts/fixtures/speech_fixture.py).
    'teal-finch-4': {
      task: 'transcription',
      created: BUNDLED_CREATED,
      candidates: anywhere('tiny-whisper'),
      aliases: OPENAI_ALIASES['teal-finch-4'],
    },
    // tiny-speech: a StyleTTS 2-layout model (Kokoro's inputs, vocabulary and voices) trained on espeak-ng speech of
    // tiny-whisper's vocabulary (scripts/fixtures/tts_fixture.py), so the two make a round trip.
    'ochre-lark-4': {
      task: 'speech',
      created: BUNDLED_CREATED,
      candidates: anywhere('tiny-speech').map((candidate) => ({ ...candidate, speech: TINY_SPEECH })),
      aliases: OPENAI_ALIASES['ochre-lark-4'],
    },
  });
}
