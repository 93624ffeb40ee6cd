import {
  AutoModelForSpeechSeq2Seq,
  AutoProcessor,
  LogitsProcessor,
  LogitsProcessorList,
  type PreTrainedModel,
  type PreTrainedTokenizer,
  type Processor,
  type Tensor,
} from '@huggingface/transformers';
import {
  EngineError,
  throwIfAborted,
  type TranscribeRequest,
  type TranscribeResult,
  type TranscriptEvent,
  type TranscriptSegment,
  type TranscriptWord,
} from '../../engine-interface/index.ts';
import type { TaskQueue } from '../task-queue.ts';
import { loadPretrained, progressCallback, type TransformersLoadOptions } from './load-pretrained.ts';
import {
  acceptEncoderOutputs,
  disposeTensors,
  encodeFeatures,
  releaseDroppedCrossAttentionCache,
} from './whisper-tensors.ts';

/**
 * Whisper's fallback (OpenAI's `transcribe()` and the API's `temperature: 0`): a window whose greedy text repeats itself
 * (compresses too well) or that the model doubts (low mean log probability) is decoded again at the next temperature.
 */
const FALLBACK_TEMPERATURES = [0, 0.2, 0.4, 0.6, 0.8, 1];
const COMPRESSION_RATIO_THRESHOLD = 2.4;
const LOGPROB_THRESHOLD = -1;
/** A window the model finds silent (and doubts its text for) is skipped, as Whisper does. */
const NO_SPEECH_THRESHOLD = 0.6;
/** A window decoded hotter than this resets the earlier text the next one reads, as OpenAI's `transcribe()` does. */
const CONDITIONING_RESET_TEMPERATURE = 0.5;
/** Word timestamps mark punctuation as its own token: OpenAI's `words` hold the words alone. */
const PUNCTUATION = /^[\s"'“”‘’.,!?;:()[\]{}¿¡…-]+|[\s"'“”‘’.,!?;:()[\]{}¿¡…-]+$/gu;

export interface SpeechRunOptions {
  signal?: AbortSignal | undefined;
  onEvent?: ((event: TranscriptEvent) => void) | undefined;
}

interface WhisperConfig {
  model_type: string;
  max_source_positions: number;
  max_target_positions: number;
}

interface WhisperGenerationConfig {
  decoder_start_token_id: number;
  eos_token_id: number;
  no_timestamps_token_id: number;
  is_multilingual?: boolean;
  lang_to_id?: Record<string, number>;
  task_to_id?: Record<string, number>;
  alignment_heads?: number[][];
  suppress_tokens?: number[] | null;
}

interface FeatureExtractorConfig {
  sampling_rate: number;
  chunk_length: number;
  hop_length: number;
}

/** A window's log-mel features and the encoder's output for them, which every pass over the window reads. */
interface EncodedWindow {
  features: Tensor;
  encoded: Tensor;
}

/** One decoding pass over one window: what the model wrote, and how sure it was. */
interface Pass {
  /** Generated tokens, the prompt and the start tokens left out, the end token too. */
  tokens: number[];
  logprobs: number[];
  /** With word timestamps: each token's time in the window (seconds), from the cross-attention alignment. */
  times?: number[] | undefined;
  noSpeechProb: number;
  temperature: number;
}

/**
 * A Whisper model on transformers.js, decoding long audio as OpenAI's Whisper does: a window of the model's length
 * (30 s; the fixture's 10 s) at a time from `seek`, in timestamp mode, each window conditioned on the text before it;
 * the next window starts where the last complete segment ended, so no word is cut between windows. Each window is one
 * turn of the realm's queue, so chat and embeddings interleave with long audio; a window's text is reported (`delta`)
 * once it can no longer change (after the temperature fallback and the silence check), and how far through the audio
 * the transcription is (`progress`) after every window.
 */
export class TransformersSpeechModel {
  readonly #model: PreTrainedModel;
  readonly #tokenizer: PreTrainedTokenizer;
  readonly #processor: Processor;
  readonly #queue: TaskQueue;
  readonly #generation: WhisperGenerationConfig;
  /** The model's sampling rate: audio is decoded and resampled to it. */
  readonly sampleRate: number;
  /** Seconds of audio in one window. */
  readonly windowSeconds: number;
  /** Languages it takes (ISO-639-1); empty for an English-only model. */
  readonly languages: readonly string[];
  readonly #timestampBegin: number;
  readonly #timePrecision: number;
  readonly #maxTargetPositions: number;
  /** Log-mel frames per encoder position (Whisper's convolutions halve the rate): word alignment counts positions. */
  readonly #framesPerPosition: number;

  private constructor(model: PreTrainedModel, tokenizer: PreTrainedTokenizer, processor: Processor, queue: TaskQueue) {
    this.#model = model;
    this.#tokenizer = tokenizer;
    this.#processor = processor;
    this.#queue = queue;
    const config = model.config as unknown as WhisperConfig;
    if (config.model_type !== 'whisper') {
      throw new Error(`speech to text runs Whisper models; this one is \`${config.model_type}\``);
    }
    this.#generation = model.generation_config as unknown as WhisperGenerationConfig;
    const features = processor.feature_extractor!.config as unknown as FeatureExtractorConfig;
    this.sampleRate = features.sampling_rate;
    this.windowSeconds = features.chunk_length;
    this.#timePrecision = features.chunk_length / config.max_source_positions;
    this.#framesPerPosition =
      (features.chunk_length * features.sampling_rate) / features.hop_length / config.max_source_positions;
    this.#timestampBegin = this.#generation.no_timestamps_token_id + 1;
    this.#maxTargetPositions = config.max_target_positions;
    this.languages = this.#generation.is_multilingual
      ? Object.keys(this.#generation.lang_to_id ?? {}).map((token) => token.slice(2, -2))
      : [];
    acceptEncoderOutputs(model);
    releaseDroppedCrossAttentionCache(model);
  }

  static async load(source: string, options: TransformersLoadOptions & { queue: TaskQueue }) {
    const progress_callback = progressCallback(options);
    const [[tokenizer, model], processor] = await Promise.all([
      loadPretrained(source, AutoModelForSpeechSeq2Seq, options),
      AutoProcessor.from_pretrained(source, { progress_callback }),
    ]);
    return new TransformersSpeechModel(model, tokenizer, processor, options.queue);
  }

  /** Whether the model can write English for speech in another language (`/v1/audio/translations`). */
  get translates(): boolean {
    return this.#generation.task_to_id?.translate !== undefined;
  }

  /** Whether it can time each word: its generation config names the cross-attention heads that align words. */
  get timesWords(): boolean {
    return (this.#generation.alignment_heads?.length ?? 0) > 0;
  }

  /**
   * Transcribes (or translates) `samples`, mono audio at `sampleRate`. The request was checked against what the model
   * can do (`language`, `translate`, `words`) by the caller.
   */
  async transcribe(
    samples: Float32Array,
    request: Omit<TranscribeRequest, 'audio'>,
    options: SpeechRunOptions = {},
  ): Promise<TranscribeResult> {
    const { signal, onEvent } = options;
    const duration = samples.length / this.sampleRate;
    const windowSamples = Math.round(this.windowSeconds * this.sampleRate);
    const hop = (this.#processor.feature_extractor!.config as unknown as FeatureExtractorConfig).hop_length;
    // Detection reads the first window, which the first pass then reads too: the encoder runs once for both.
    let first: EncodedWindow | undefined;
    let language = request.language ?? 'en';
    if (request.language === undefined && this.languages.length > 0) {
      first = await this.#encode(samples.subarray(0, windowSamples), signal);
      language = await this.#detectLanguage(first, signal).catch((error: unknown) => {
        disposeTensors(first);
        throw error;
      });
    }
    const earlierText = new EarlierText(
      request.prompt ? this.#textTokens(` ${request.prompt.trim()}`) : [],
      (this.#maxTargetPositions >> 1) - 1,
    );

    const segments: (TranscriptSegment & { tokenTimes?: number[] })[] = [];
    const words: TranscriptWord[] = [];
    let outputTokens = 0;
    let seek = 0;
    while (seek < samples.length) {
      const window = samples.subarray(seek, seek + windowSamples);
      const offset = seek / this.sampleRate;
      // The encoder runs once a window; every pass of the fallback reads its output.
      const encoded = first ?? (await this.#encode(window, signal));
      first = undefined;
      // Word alignment reads the encoder positions the audio covers, not the window's padding after it.
      const positions = Math.floor(window.length / hop / this.#framesPerPosition);
      const pass = await this.#decodeWithFallback(
        encoded,
        positions,
        earlierText.tokens,
        language,
        request,
        signal,
      ).finally(() => disposeTensors(encoded));
      outputTokens += pass.tokens.length;
      const found = this.#segments(pass, offset, window.length / this.sampleRate);
      const silent = pass.noSpeechProb > NO_SPEECH_THRESHOLD && average(pass.logprobs) < LOGPROB_THRESHOLD;
      const kept = silent ? [] : found.segments;
      // A window left out as silent is not earlier text, and resets none (OpenAI's `transcribe()` skips it before both).
      const keptTokens = kept.flatMap((s) => s.tokens);
      if (!silent) earlierText.add(keptTokens, pass.temperature);
      for (const segment of kept) {
        segments.push({ ...segment, compressionRatio: await compressionRatio(segment.text) });
        if (request.words && segment.tokenTimes) words.push(...this.#words(segment, offset));
      }
      // A window's text is final once the fallback and the silence check have decided on it: it is reported then.
      const windowText = kept.map((s) => s.text).join('');
      if (windowText)
        onEvent?.({ type: 'delta', text: segments.length === kept.length ? windowText.trimStart() : windowText });
      const consumed = silent ? window.length : Math.round(found.consumed * this.sampleRate);
      seek = Math.min(samples.length, seek + Math.max(1, consumed));
      onEvent?.({ type: 'progress', seconds: seek / this.sampleRate, duration });
    }
    const text = segments
      .map((s) => s.text)
      .join('')
      .trim();
    return {
      text,
      language,
      duration,
      segments: segments.map(({ tokenTimes: _, ...segment }) => segment),
      ...(request.words && { words }),
      usage: { outputTokens },
    };
  }

  /** Decodes one window at temperature 0, then (when the request's temperature is 0) hotter while the text fails. */
  async #decodeWithFallback(
    window: EncodedWindow,
    positions: number,
    earlier: number[],
    language: string,
    request: Omit<TranscribeRequest, 'audio'>,
    signal: AbortSignal | undefined,
  ): Promise<Pass> {
    const temperatures = request.temperature === 0 ? FALLBACK_TEMPERATURES : [request.temperature];
    let pass: Pass | undefined;
    for (const temperature of temperatures) {
      pass = await this.#queue.run(
        () => this.#decodeWindow(window, positions, earlier, language, request, temperature, signal),
        signal,
      );
      const text = this.#decode(pass.tokens.filter((t) => t < this.#timestampBegin));
      const failed =
        (await compressionRatio(text)) > COMPRESSION_RATIO_THRESHOLD || average(pass.logprobs) < LOGPROB_THRESHOLD;
      if (!failed || pass.noSpeechProb > NO_SPEECH_THRESHOLD) break;
    }
    return pass!;
  }

  /** One generate() over one window in timestamp mode; what it returns is disposed once read. */
  async #decodeWindow(
    window: EncodedWindow,
    positions: number,
    earlier: number[],
    language: string,
    request: Omit<TranscribeRequest, 'audio'>,
    temperature: number,
    signal: AbortSignal | undefined,
  ): Promise<Pass> {
    const g = this.#generation;
    const start = [g.decoder_start_token_id];
    if (g.is_multilingual) start.push(g.lang_to_id![`<|${language}|>`]!, g.task_to_id![request.task]!);
    const prevToken = this.#tokenizer.convert_tokens_to_ids('<|startofprev|>') as number;
    const init = earlier.length > 0 ? [prevToken, ...earlier, ...start] : start;

    const noSpeechToken = this.#tokenizer.convert_tokens_to_ids('<|nospeech|>');
    const recorder = new WhisperScoreRecorder(
      typeof noSpeechToken === 'number' ? noSpeechToken : undefined,
      temperature,
    );
    // The recorder first, so that it reads `<|nospeech|>` before the rules suppress it (the model's own suppress_tokens
    // are applied by the rules, not by transformers.js, whose processors would run before the recorder).
    const logits_processor = new LogitsProcessorList();
    logits_processor.push(recorder);
    logits_processor.push(
      new TranscriptRules({
        eot: g.eos_token_id,
        timestampBegin: this.#timestampBegin,
        suppress: g.suppress_tokens ?? [],
        beginIndex: init.length,
      }),
    );

    const tokens: number[] = [];
    const logprobs: number[] = [];
    let prompted = false;
    const streamer = {
      put: (value: bigint[][]) => {
        throwIfAborted(signal); // generate() stops within a token
        if (!prompted) {
          prompted = true; // the first put is the start tokens
          return;
        }
        const token = Number(value[0]![0]);
        tokens.push(token);
        logprobs.push(recorder.logprobOf(token));
      },
      end: () => {},
    };

    const output = (await this.#model.generate({
      inputs: window.features,
      encoder_outputs: window.encoded,
      decoder_input_ids: init,
      return_timestamps: true,
      // transformers.js crops the cross-attention to `num_frames` encoder positions before it aligns the tokens.
      ...(request.words && { return_token_timestamps: true, num_frames: positions }),
      // Whisper's budget: half the decoder's positions, and no more than the prompt leaves.
      max_new_tokens: Math.max(1, Math.min(this.#maxTargetPositions >> 1, this.#maxTargetPositions - init.length)),
      suppress_tokens: null,
      // Sampling from the whole distribution, as OpenAI's Whisper does (transformers.js keeps the top 50 by default).
      ...(temperature > 0 ? { do_sample: true, temperature, top_k: 0 } : { do_sample: false }),
      logits_processor,
      streamer,
    } as never)) as Tensor | { sequences: Tensor; token_timestamps: Tensor };

    let times: number[] | undefined;
    if ('token_timestamps' in output) {
      times = (output.token_timestamps.tolist() as number[][])[0]!.slice(init.length);
    }
    disposeTensors(output);
    if (tokens.at(-1) === g.eos_token_id) {
      tokens.pop();
      logprobs.pop();
      times?.pop();
    }
    return { tokens, logprobs, times, noSpeechProb: recorder.noSpeechProb, temperature };
  }

  /**
   * A pass's segments, placed at `offset` in the audio: text between a start and an end timestamp (a last one with no
   * end runs to the window's end), and how much of the window they consumed: to the last end timestamp when the text
   * went on past it (the rest is decoded again as the next window's start), the whole window otherwise.
   */
  #segments(pass: Pass, offset: number, windowSeconds: number) {
    const segments: (TranscriptSegment & { tokenTimes?: number[] })[] = [];
    let startTime = 0;
    let open: number[] = [];
    let openAt = 0;
    let lastEnd: number | undefined;
    const close = (end: number) => {
      const segmentLogprobs = pass.logprobs.slice(openAt, openAt + open.length);
      // A timestamp the model put past the window (its padding) or an end before its start is kept inside the window.
      const start = Math.min(startTime, windowSeconds);
      segments.push({
        start: round2(offset + start),
        end: round2(offset + Math.min(Math.max(end, start), windowSeconds)),
        text: this.#decode(open),
        tokens: open,
        avgLogprob: average(segmentLogprobs),
        compressionRatio: 0,
        noSpeechProb: pass.noSpeechProb,
        temperature: pass.temperature,
        windowStart: offset,
        ...(pass.times && { tokenTimes: pass.times.slice(openAt, openAt + open.length + 1) }),
      });
      open = [];
    };
    for (const [index, token] of pass.tokens.entries()) {
      if (token >= this.#timestampBegin) {
        const time = (token - this.#timestampBegin) * this.#timePrecision;
        if (open.length > 0) {
          close(time);
          lastEnd = time;
        }
        // A start; or an end, which is where text the model writes next without a start of its own begins.
        startTime = time;
      } else {
        if (open.length === 0) openAt = index;
        open.push(token);
      }
    }
    const endsInText = open.length > 0;
    if (endsInText) close(windowSeconds);
    // Text after the last end timestamp, when there is one, is cut off by the window: it starts the next window instead.
    const cut = endsInText && lastEnd !== undefined;
    if (cut) segments.pop();
    return {
      segments,
      /** Seconds of the window its segments took up: to the last end timestamp when the text ran past it. */
      consumed: cut ? lastEnd! : windowSeconds,
    };
  }

  /**
   * Words of a segment with their times: a word starts at a token with a leading space; punctuation is dropped; times
   * stay within the segment (the alignment may place a token in the window's padding).
   */
  #words(segment: TranscriptSegment & { tokenTimes?: number[] }, offset: number): TranscriptWord[] {
    const { tokens } = segment;
    const times = segment.tokenTimes!;
    const at = (time: number) => round2(Math.min(Math.max(offset + time, segment.start), segment.end));
    const words: TranscriptWord[] = [];
    let current: number[] = [];
    let from = 0;
    const flush = (until: number) => {
      const word = this.#decode(current).replace(PUNCTUATION, '');
      if (word) {
        const start = times[from] ?? 0;
        const end = times[until] ?? times.at(-1) ?? start;
        words.push({ word, start: at(start), end: at(Math.max(start, end)) });
      }
      current = [];
    };
    for (const [index, token] of tokens.entries()) {
      if (current.length > 0 && this.#decode([token]).startsWith(' ')) flush(index);
      if (current.length === 0) from = index;
      current.push(token);
    }
    if (current.length > 0) flush(tokens.length);
    return words;
  }

  /**
   * Whisper's language detection: the language token the model finds most likely after `<|startoftranscript|>`, over
   * the first window.
   */
  async #detectLanguage(window: EncodedWindow, signal: AbortSignal | undefined): Promise<string> {
    const g = this.#generation;
    const languageIds = new Map(Object.entries(g.lang_to_id ?? {}).map(([token, id]) => [id, token.slice(2, -2)]));
    const only = new OnlyTokens(new Set(languageIds.keys()));
    const logits_processor = new LogitsProcessorList();
    logits_processor.push(only);
    const output = (await this.#queue.run(
      () =>
        this.#model.generate({
          inputs: window.features,
          encoder_outputs: window.encoded,
          decoder_input_ids: [g.decoder_start_token_id],
          max_new_tokens: 1,
          do_sample: false,
          logits_processor,
        } as never),
      signal,
    )) as Tensor;
    const token = Number((output.tolist() as bigint[][])[0]!.at(-1));
    disposeTensors(output);
    return languageIds.get(token) ?? 'en';
  }

  /** A window's features and the encoder's output for them, in a turn of the queue. */
  async #encode(window: Float32Array, signal: AbortSignal | undefined): Promise<EncodedWindow> {
    const { input_features: features } = (await this.#processor(window)) as { input_features: Tensor };
    const encoded = await this.#queue.run(() => encodeFeatures(this.#model, features), signal);
    return { features, encoded };
  }

  #textTokens(text: string): number[] {
    return this.#tokenizer.encode(text, { add_special_tokens: false });
  }

  /** Text of `tokens`: empty for none (transformers.js' decode refuses an empty list). */
  #decode(tokens: number[]): string {
    return tokens.length === 0 ? '' : this.#tokenizer.decode(tokens, { skip_special_tokens: true });
  }

  /** Refuses what this model cannot do, naming the parameter. */
  check(request: Omit<TranscribeRequest, 'audio'>): void {
    if (request.language !== undefined && !this.languages.includes(request.language)) {
      const known = this.languages.length > 0 ? this.languages.join(', ') : 'en (this model is English-only)';
      if (!(this.languages.length === 0 && request.language === 'en')) {
        throw new EngineError(
          'invalid_request',
          `This model does not know the language \`${request.language}\`. Languages: ${known}.`,
          { param: 'language' },
        );
      }
    }
    if (request.task === 'translate' && !this.translates) {
      throw new EngineError('invalid_request', 'This model is English-only: it transcribes, it does not translate.', {
        param: 'model',
      });
    }
    if (request.words && !this.timesWords) {
      throw new EngineError(
        'invalid_request',
        'This model cannot time words (its generation config has no `alignment_heads`): ask for segments only.',
        { param: 'timestamp_granularities' },
      );
    }
  }
}

/**
 * The earlier text each window reads (OpenAI's `condition_on_previous_text`): the prompt, then the transcript so far,
 * at most `limit` tokens of it (Whisper's: half its positions, less one). A window decoded hotter than 0.5 resets it,
 * prompt and all, as OpenAI's `transcribe()` does: text the fallback had to sample is likely wrong, and read as earlier
 * text it would lead the next windows astray (or into the same loop).
 */
export class EarlierText {
  readonly #tokens: number[];
  readonly #limit: number;
  #from = 0;

  constructor(prompt: number[], limit: number) {
    this.#tokens = [...prompt];
    this.#limit = limit;
  }

  /** What the next window reads. */
  get tokens(): number[] {
    return this.#tokens.slice(Math.max(this.#from, this.#tokens.length - this.#limit));
  }

  /** A window's kept text, and the temperature it was decoded at. */
  add(tokens: number[], temperature: number): void {
    this.#tokens.push(...tokens);
    if (temperature > CONDITIONING_RESET_TEMPERATURE) this.#from = this.#tokens.length;
  }
}

/**
 * Keeps the scores it is shown (processors after it change them in place: the transcript rules, the timestamp pairs,
 * the suppressed start), so that the log probability of the token drawn from them can be read once it is drawn; and,
 * at the first step, the probability the model gives `<|nospeech|>` before any rule applies. Both are of the model's
 * own distribution, as OpenAI's Whisper measures them: transformers.js divides the scores by the sampling temperature
 * before they reach here, and the recorder multiplies that back.
 */
export class WhisperScoreRecorder extends LogitsProcessor {
  readonly #noSpeechToken: number | undefined;
  readonly #temperature: number;
  noSpeechProb = 0;
  #scores: Float32Array | undefined;
  #steps = 0;

  constructor(noSpeechToken: number | undefined, temperature: number) {
    super();
    this.#noSpeechToken = noSpeechToken;
    this.#temperature = temperature > 0 ? temperature : 1;
  }

  override _call(_inputIds: bigint[][], logits: Tensor): Tensor {
    const scores = (logits as unknown as Tensor[])[0]!.data as Float32Array;
    this.#scores = scores;
    if (this.#steps++ === 0 && this.#noSpeechToken !== undefined) {
      this.noSpeechProb = Math.exp(this.#logprob(scores, this.#noSpeechToken));
    }
    return logits;
  }

  logprobOf(token: number): number {
    return this.#scores ? this.#logprob(this.#scores, token) : 0;
  }

  #logprob(scores: Float32Array, token: number): number {
    const t = this.#temperature;
    return t === 1 ? scores[token]! - logSumExp(scores) : t * scores[token]! - logSumExp(scores.map((s) => s * t));
  }
}

/**
 * What a transcript may hold, OpenAI Whisper's rules that transformers.js' timestamp processor lacks:
 * - text, timestamps and the end only: the model's `suppress_tokens` and every special token between the end and the
 *   timestamps (start of transcript, earlier text, languages, task, no speech) are suppressed, as OpenAI's
 *   `_get_suppress_tokens` does; a special token in the text would open a segment with no start of its own;
 * - timestamps never go back, and a segment is never empty (a start timestamp is followed by a later end one), so
 *   segments come out in order and cannot loop.
 */
export class TranscriptRules extends LogitsProcessor {
  readonly #timestampBegin: number;
  readonly #beginIndex: number;
  readonly #suppress: number[];
  constructor(options: { eot: number; timestampBegin: number; suppress: number[]; beginIndex: number }) {
    super();
    this.#timestampBegin = options.timestampBegin;
    this.#beginIndex = options.beginIndex;
    this.#suppress = [...options.suppress];
    for (let token = options.eot + 1; token < options.timestampBegin; token++) this.#suppress.push(token);
  }
  override _call(inputIds: bigint[][], logits: Tensor): Tensor {
    const scores = (logits as unknown as Tensor[])[0]!.data as Float32Array;
    for (const token of this.#suppress) scores[token] = -Infinity;
    const generated = inputIds[0]!.slice(this.#beginIndex).map(Number);
    const stamps = generated.filter((t) => t >= this.#timestampBegin);
    if (stamps.length > 0) {
      const isStamp = (t: number | undefined) => t === undefined || t >= this.#timestampBegin;
      // After a lone (end) timestamp the next may repeat it (the next segment's start); otherwise it must be later.
      const closing = isStamp(generated.at(-1)) && !isStamp(generated.at(-2));
      const floor = stamps.at(-1)! + (closing ? 0 : 1);
      scores.fill(-Infinity, this.#timestampBegin, floor);
    }
    return logits;
  }
}

/** Leaves only the given tokens possible. */
class OnlyTokens extends LogitsProcessor {
  readonly #allowed: Set<number>;
  constructor(allowed: Set<number>) {
    super();
    this.#allowed = allowed;
  }
  override _call(_inputIds: bigint[][], logits: Tensor): Tensor {
    const scores = (logits as unknown as Tensor[])[0]!.data as Float32Array;
    for (let i = 0; i < scores.length; i++) if (!this.#allowed.has(i)) scores[i] = -Infinity;
    return logits;
  }
}

function logSumExp(scores: Float32Array): number {
  let max = -Infinity;
  for (const s of scores) if (s > max) max = s;
  if (max === -Infinity) return max;
  let sum = 0;
  for (const s of scores) sum += Math.exp(s - max);
  return max + Math.log(sum);
}

const average = (values: number[]) => (values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length);

const round2 = (seconds: number) => Math.round(seconds * 100) / 100;

/** Bytes of the text over bytes of its zlib compression, as Whisper computes it. */
async function compressionRatio(text: string): Promise<number> {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length === 0) return 0;
  const compressed = await new Response(
    new Blob([bytes]).stream().pipeThrough(new CompressionStream('deflate')),
  ).arrayBuffer();
  return round2(bytes.length / compressed.byteLength);
}
