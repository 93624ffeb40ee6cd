import { AutoModel, env, Tensor, type PreTrainedModel, type PreTrainedTokenizer } from '@huggingface/transformers';
import type { SynthesisModel } from '../model-loaders.ts';
import { modelFolder } from '../model-files.ts';
import { phonemesFor } from '../speech/kokoro-phonemes.ts';
import { loadPretrained, type TransformersLoadOptions } from './load-pretrained.ts';
import type { SpeechVoices, VoiceAccent } from './transformers-engine.ts';

/** The style vector of a StyleTTS 2 voice: one row of a voice file per input length. */
const STYLE_SIZE = 256;
/** Kokoro's sample rate, and every model's of its layout. */
const SAMPLE_RATE = 24_000;
/** The most phonemes Kokoro reads in one pass (its 512 positions, less the two ends). */
const MAX_INPUT_TOKENS = 510;

/**
 * A StyleTTS 2 text-to-speech model on transformers.js (`style_text_to_speech_2`: Kokoro-82M, Kitten TTS and the bundled
 * tiny-speech): English text read as phonemes (`phonemesFor`), Kokoro's phoneme vocabulary, a voice's style vector
 * for the input's length, and a speed, in one pass to a waveform at 24 kHz. It is what `kokoro-js` does, on Lantern's
 * own loading path (its files downloaded and stored with the model's, and the voices with them).
 */
export class TransformersVoiceModel implements SynthesisModel {
  readonly sampleRate = SAMPLE_RATE;
  readonly maxInputTokens = MAX_INPUT_TOKENS;
  readonly voices: readonly string[];
  readonly openaiVoices: Readonly<Record<string, string>>;
  readonly #model: PreTrainedModel;
  readonly #tokenizer: PreTrainedTokenizer;
  readonly #accents: Readonly<Record<string, VoiceAccent>>;
  /** Each voice's style rows (rows × 256), read as the model loaded. */
  readonly #styles: ReadonlyMap<string, Float32Array>;

  private constructor(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizer,
    speech: SpeechVoices,
    styles: ReadonlyMap<string, Float32Array>,
  ) {
    this.#model = model;
    this.#tokenizer = tokenizer;
    this.#accents = speech.voices;
    this.voices = Object.keys(speech.voices);
    this.openaiVoices = speech.openaiVoices;
    this.#styles = styles;
  }

  static async load(
    source: string,
    options: TransformersLoadOptions & { speech: SpeechVoices; hub?: string | undefined },
  ): Promise<TransformersVoiceModel> {
    const [[tokenizer, model], styles] = await Promise.all([
      loadPretrained(source, AutoModel, options),
      readVoices(source, options.hub, Object.keys(options.speech.voices)),
    ]);
    const type = (model.config as { model_type?: string }).model_type;
    if (type !== 'style_text_to_speech_2') {
      await model.dispose();
      throw new Error(`text to speech runs StyleTTS 2 models (Kokoro's layout); this one is \`${type}\``);
    }
    return new TransformersVoiceModel(model, tokenizer, options.speech, styles);
  }

  tokenCount(text: string, voice: string): number {
    return this.#ids(text, voice).length - 2;
  }

  async synthesize(text: string, voice: string, speed: number) {
    const ids = this.#ids(text, voice);
    const styles = this.#styles.get(voice)!;
    // Kokoro's voices hold a style per input length: the row of this many phonemes (the last for longer ones).
    const rows = styles.length / STYLE_SIZE;
    const row = Math.min(Math.max(ids.length - 2, 0), rows - 1);
    const style = styles.slice(row * STYLE_SIZE, (row + 1) * STYLE_SIZE);
    const output = (await this.#model({
      input_ids: new Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]),
      style: new Tensor('float32', style, [1, STYLE_SIZE]),
      speed: new Tensor('float32', Float32Array.of(speed), [1]),
    })) as { waveform: Tensor };
    const samples = Float32Array.from(output.waveform.data as Float32Array);
    output.waveform.dispose();
    return { samples, inputTokens: ids.length - 2 };
  }

  /** The model's input for `text`: its phonemes in the voice's accent, as ids between the two ends (id 0). */
  #ids(text: string, voice: string): number[] {
    const phonemes = phonemesFor(text, this.#accents[voice] ?? 'en-us');
    const encoded = this.#tokenizer(phonemes, { add_special_tokens: true }) as { input_ids: Tensor };
    return Array.from(encoded.input_ids.data as BigInt64Array, Number);
  }
}

/** Each voice's style rows, read as transformers.js reads the model's other files (from Lantern's store in browsers). */
async function readVoices(
  source: string,
  hub: string | undefined,
  names: readonly string[],
): Promise<Map<string, Float32Array>> {
  const folder = modelFolder(source, hub);
  const entries = await Promise.all(
    names.map(async (name) => {
      const bytes = await readModelFile(folder.url, `voices/${name}.bin`);
      if (bytes.byteLength === 0 || bytes.byteLength % (STYLE_SIZE * 4) !== 0) {
        throw new Error(`its voice \`${name}\` is not rows of ${STYLE_SIZE} float32 (${bytes.byteLength} bytes)`);
      }
      const copy = bytes.slice();
      return [name, new Float32Array(copy.buffer, 0, copy.byteLength / 4)] as const;
    }),
  );
  return new Map(entries);
}

/** What of `node:fs/promises` reads a voice in Node (imported there only: the engine worker bundles this file). */
interface NodeFiles {
  readFile(path: string): Promise<Uint8Array>;
}

/**
 * One file of a model folder: from Lantern's store where transformers.js reads from it (a browser's engine worker),
 * from the disk for a folder path in Node, else fetched as transformers.js fetches (the app's own model folders).
 */
async function readModelFile(folder: string, name: string): Promise<Uint8Array> {
  const url = folder + name;
  const web = /^(https?:)?\/\//i.test(url) || typeof process === 'undefined' || !process.versions?.node;
  if (env.useCustomCache && env.customCache) {
    const stored = (await env.customCache.match(new URL(url, globalThis.location?.href).href)) as Response | undefined;
    if (stored) return new Uint8Array(await stored.arrayBuffer());
  }
  if (!web) {
    const { readFile } = (await import(/* @vite-ignore */ 'node:fs/promises')) as NodeFiles;
    try {
      return new Uint8Array(await readFile(url));
    } catch (error) {
      throw new Error(`its files are missing (${(error as Error).message})`, { cause: error });
    }
  }
  const response = await env.fetch(url);
  if (!response.ok) throw new Error(`its files are missing (${url}: ${response.status} ${response.statusText})`);
  return new Uint8Array(await response.arrayBuffer());
}
