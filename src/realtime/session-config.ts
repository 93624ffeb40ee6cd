/**
 * The session's configuration on the wire (`RealtimeSessionCreateRequest` of openai-node, GA): OpenAI's defaults, the
 * checks `session.update` gets (a bad value is an `error` event naming its param, the session unchanged) and the merge
 * (fields given replace those held, nested objects field by field, `turn_detection` and `transcription` whole).
 */
import { isRecord, RealtimeClientError } from './realtime-events.ts';

/** The voices the Realtime API names; the speech route maps each to one of the model's own. */
export const REALTIME_VOICES = Object.freeze([
  'alloy',
  'ash',
  'ballad',
  'coral',
  'echo',
  'sage',
  'shimmer',
  'verse',
  'marin',
  'cedar',
]);

export type AudioFormat = { type: 'audio/pcm'; rate: 24000 } | { type: 'audio/pcmu' } | { type: 'audio/pcma' };

export interface ServerVad {
  type: 'server_vad';
  threshold: number;
  prefix_padding_ms: number;
  silence_duration_ms: number;
  idle_timeout_ms: number | null;
  create_response: boolean;
  interrupt_response: boolean;
}

export interface SemanticVad {
  type: 'semantic_vad';
  eagerness: 'low' | 'medium' | 'high' | 'auto';
  create_response: boolean;
  interrupt_response: boolean;
}

export type TurnDetection = ServerVad | SemanticVad;

export interface FunctionTool {
  type: 'function';
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
}

export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; name: string };

export interface RealtimeSessionConfig {
  type: 'realtime';
  object: 'realtime.session';
  id: string;
  model: string;
  output_modalities: ['text'] | ['audio'];
  instructions: string;
  tools: FunctionTool[];
  tool_choice: ToolChoice;
  max_output_tokens: number | 'inf';
  tracing: unknown;
  truncation: unknown;
  prompt: unknown;
  include: unknown;
  expires_at: number;
  audio: {
    input: {
      format: AudioFormat;
      transcription: { model: string; language?: string; prompt?: string } | null;
      noise_reduction: { type: 'near_field' | 'far_field' } | null;
      turn_detection: TurnDetection | null;
    };
    output: { format: AudioFormat; voice: string; speed: number };
  };
}

/** The chat model's default system message when the session gives no instructions. */
export const DEFAULT_INSTRUCTIONS =
  'You are a helpful, friendly voice assistant. Answer briefly, in plain spoken sentences, without markdown.';

/** The largest `max_output_tokens` a session or response may ask for, as OpenAI's Realtime models allow. */
export const MAX_OUTPUT_TOKENS = 4096;

export function defaultServerVad(): ServerVad {
  return {
    type: 'server_vad',
    threshold: 0.5,
    prefix_padding_ms: 300,
    silence_duration_ms: 500,
    idle_timeout_ms: null,
    create_response: true,
    interrupt_response: true,
  };
}

/** A new session as OpenAI opens one: audio out, PCM16 at 24 kHz both ways, server VAD, voice `alloy`. */
export function defaultSession(id: string, model: string, nowMs: number): RealtimeSessionConfig {
  return {
    type: 'realtime',
    object: 'realtime.session',
    id,
    model,
    output_modalities: ['audio'],
    instructions: DEFAULT_INSTRUCTIONS,
    tools: [],
    tool_choice: 'auto',
    max_output_tokens: 'inf',
    tracing: null,
    truncation: 'auto',
    prompt: null,
    include: null,
    expires_at: Math.floor(nowMs / 1000) + 60 * 60,
    audio: {
      input: {
        format: { type: 'audio/pcm', rate: 24000 },
        transcription: null,
        noise_reduction: null,
        turn_detection: defaultServerVad(),
      },
      output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'alloy', speed: 1 },
    },
  };
}

const fail = (param: string, message: string): never => {
  throw new RealtimeClientError(message, param);
};

function checkString(value: unknown, param: string): string {
  if (typeof value !== 'string') fail(param, `Invalid type for '${param}': expected a string.`);
  return value as string;
}

function checkBoolean(value: unknown, param: string): boolean {
  if (typeof value !== 'boolean') fail(param, `Invalid type for '${param}': expected a boolean.`);
  return value as boolean;
}

function checkNumber(value: unknown, param: string, min: number, max: number, integer = false): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || (integer && !Number.isInteger(value)))
    fail(param, `Invalid type for '${param}': expected ${integer ? 'an integer' : 'a number'}.`);
  const n = value as number;
  if (n < min) fail(param, `Invalid '${param}': ${n} is below the minimum ${min}.`);
  if (n > max) fail(param, `Invalid '${param}': ${n} is above the maximum ${max}.`);
  return n;
}

/** `audio.*.format`: PCM16 at 24 kHz (the only rate OpenAI takes), G.711 µ-law or A-law (8 kHz). */
export function checkFormat(value: unknown, param: string): AudioFormat {
  if (!isRecord(value)) return fail(param, `Invalid '${param}': expected an object like {"type": "audio/pcm"}.`);
  switch (value.type) {
    case 'audio/pcm':
      if (value.rate !== undefined && value.rate !== 24000)
        fail(`${param}.rate`, `Invalid '${param}.rate': only 24000 is supported for audio/pcm.`);
      return { type: 'audio/pcm', rate: 24000 };
    case 'audio/pcmu':
    case 'audio/pcma':
      return { type: value.type };
    default:
      return fail(
        `${param}.type`,
        `Invalid '${param}.type': ${JSON.stringify(value.type)}. Supported: 'audio/pcm', 'audio/pcmu', 'audio/pcma'.`,
      );
  }
}

export function checkVoice(value: unknown, param: string): string {
  const voice = checkString(value, param);
  if (!REALTIME_VOICES.includes(voice))
    fail(param, `Invalid '${param}': ${JSON.stringify(voice)}. Supported voices: ${REALTIME_VOICES.join(', ')}.`);
  return voice;
}

export function checkModalities(value: unknown, param: string): ['text'] | ['audio'] {
  if (!Array.isArray(value) || value.length !== 1 || (value[0] !== 'text' && value[0] !== 'audio'))
    return fail(param, `Invalid '${param}': expected ["audio"] or ["text"].`);
  return [value[0]] as ['text'] | ['audio'];
}

export function checkMaxOutputTokens(value: unknown, param: string): number | 'inf' {
  if (value === 'inf') return 'inf';
  return checkNumber(value, param, 1, MAX_OUTPUT_TOKENS, true);
}

export function checkTools(value: unknown, param: string): FunctionTool[] {
  if (!Array.isArray(value)) return fail(param, `Invalid type for '${param}': expected an array.`);
  return value.map((tool, i) => {
    const at = `${param}[${i}]`;
    if (!isRecord(tool)) return fail(at, `Invalid '${at}': expected an object.`);
    if (tool.type !== 'function')
      fail(
        `${at}.type`,
        `Unsupported '${at}.type': ${JSON.stringify(tool.type)}. Only function tools run on the device.`,
      );
    const name = checkString(tool.name, `${at}.name`);
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name))
      fail(`${at}.name`, `Invalid '${at}.name': letters, digits, '_' and '-', at most 64.`);
    const out: FunctionTool = { type: 'function', name };
    if (tool.description !== undefined) out.description = checkString(tool.description, `${at}.description`);
    if (tool.parameters !== undefined) {
      if (!isRecord(tool.parameters)) fail(`${at}.parameters`, `Invalid '${at}.parameters': expected a JSON Schema.`);
      out.parameters = tool.parameters as Record<string, unknown>;
    }
    return out;
  });
}

export function checkToolChoice(value: unknown, param: string, tools: FunctionTool[]): ToolChoice {
  if (value === 'auto' || value === 'none' || value === 'required') return value;
  if (isRecord(value) && value.type === 'function') {
    const name = checkString(value.name, `${param}.name`);
    if (!tools.some((t) => t.name === name))
      fail(`${param}.name`, `Invalid '${param}.name': no function tool named ${JSON.stringify(name)}.`);
    return { type: 'function', name };
  }
  return fail(param, `Invalid '${param}': expected 'auto', 'none', 'required' or {"type": "function", "name": …}.`);
}

/**
 * `turn_detection`: server VAD, or semantic VAD. Lantern has no model of turn ends: `semantic_vad` runs the same
 * energy detector as server VAD and maps `eagerness` to how long it waits in silence (see `silenceForEagerness`).
 */
export function checkTurnDetection(value: unknown, param: string): TurnDetection | null {
  if (value === null) return null;
  if (!isRecord(value)) return fail(param, `Invalid '${param}': expected an object or null.`);
  const base = defaultServerVad();
  const flag = (key: 'create_response' | 'interrupt_response') =>
    value[key] === undefined ? base[key] : checkBoolean(value[key], `${param}.${key}`);
  if (value.type === 'server_vad') {
    const num = (key: 'threshold' | 'prefix_padding_ms' | 'silence_duration_ms', max: number) =>
      value[key] === undefined || value[key] === null
        ? base[key]
        : checkNumber(value[key], `${param}.${key}`, 0, max, key !== 'threshold');
    return {
      type: 'server_vad',
      threshold: num('threshold', 1),
      prefix_padding_ms: num('prefix_padding_ms', 10_000),
      silence_duration_ms: num('silence_duration_ms', 10_000),
      idle_timeout_ms:
        value.idle_timeout_ms === undefined || value.idle_timeout_ms === null
          ? null
          : checkNumber(value.idle_timeout_ms, `${param}.idle_timeout_ms`, 5_000, 30_000, true),
      create_response: flag('create_response'),
      interrupt_response: flag('interrupt_response'),
    };
  }
  if (value.type === 'semantic_vad') {
    const eagerness = value.eagerness ?? 'auto';
    if (eagerness !== 'low' && eagerness !== 'medium' && eagerness !== 'high' && eagerness !== 'auto')
      fail(`${param}.eagerness`, `Invalid '${param}.eagerness': expected 'low', 'medium', 'high' or 'auto'.`);
    return {
      type: 'semantic_vad',
      eagerness: eagerness as SemanticVad['eagerness'],
      create_response: flag('create_response'),
      interrupt_response: flag('interrupt_response'),
    };
  }
  return fail(
    `${param}.type`,
    `Invalid '${param}.type': ${JSON.stringify(value.type)}. Supported: 'server_vad', 'semantic_vad'.`,
  );
}

/**
 * What semantic VAD's eagerness means here: the silence after speech that ends a turn (a low eagerness waits for the
 * speaker to finish a thought, a high one answers at the first pause). The detector itself is server VAD's.
 */
export function silenceForEagerness(eagerness: SemanticVad['eagerness']): number {
  return { low: 1500, medium: 800, auto: 800, high: 350 }[eagerness];
}

function checkTranscription(value: unknown, param: string): RealtimeSessionConfig['audio']['input']['transcription'] {
  if (value === null) return null;
  if (!isRecord(value)) return fail(param, `Invalid '${param}': expected an object or null.`);
  const out: { model: string; language?: string; prompt?: string } = {
    model: value.model === undefined ? 'whisper-1' : checkString(value.model, `${param}.model`),
  };
  if (value.language !== undefined && value.language !== null)
    out.language = checkString(value.language, `${param}.language`);
  if (value.prompt !== undefined && value.prompt !== null) out.prompt = checkString(value.prompt, `${param}.prompt`);
  return out;
}

/**
 * `noise_reduction` is checked, kept and echoed, but Lantern filters nothing itself: a WebRTC microphone track comes
 * through the browser's own noise suppression (getUserMedia's default), and the detector's threshold sets what counts
 * as speech.
 */
function checkNoiseReduction(
  value: unknown,
  param: string,
): RealtimeSessionConfig['audio']['input']['noise_reduction'] {
  if (value === null) return null;
  if (!isRecord(value) || (value.type !== 'near_field' && value.type !== 'far_field'))
    return fail(`${param}.type`, `Invalid '${param}.type': expected 'near_field' or 'far_field'.`);
  return { type: value.type };
}

/**
 * The session after `update` (a `session.update`'s `session`, or the secret's), or a {@link RealtimeClientError}
 * naming the first bad param (`session.…`). Fields Lantern does not act on (tracing, prompt, include, truncation) are
 * kept as given; undefined fields are left as they were.
 */
export function mergeSession(
  current: RealtimeSessionConfig,
  update: unknown,
  prefix = 'session',
): RealtimeSessionConfig {
  if (!isRecord(update)) return fail(prefix, `Invalid type for '${prefix}': expected an object.`);
  if (update.type !== undefined && update.type !== 'realtime')
    fail(`${prefix}.type`, `Invalid '${prefix}.type': ${JSON.stringify(update.type)}. This session is 'realtime'.`);
  const next: RealtimeSessionConfig = structuredClone(current);
  const given = (v: unknown) => v !== undefined;
  if (given(update.model)) next.model = checkString(update.model, `${prefix}.model`);
  if (given(update.instructions)) next.instructions = checkString(update.instructions, `${prefix}.instructions`);
  if (given(update.output_modalities))
    next.output_modalities = checkModalities(update.output_modalities, `${prefix}.output_modalities`);
  if (given(update.tools)) next.tools = checkTools(update.tools, `${prefix}.tools`);
  if (given(update.tool_choice))
    next.tool_choice = checkToolChoice(update.tool_choice, `${prefix}.tool_choice`, next.tools);
  else if (
    typeof next.tool_choice === 'object' &&
    !next.tools.some((t) => t.name === (next.tool_choice as { name: string }).name)
  )
    next.tool_choice = 'auto';
  if (given(update.max_output_tokens))
    next.max_output_tokens = checkMaxOutputTokens(update.max_output_tokens, `${prefix}.max_output_tokens`);
  for (const key of ['tracing', 'truncation', 'prompt', 'include'] as const)
    if (given(update[key])) next[key] = update[key];
  if (given(update.audio)) {
    const audio = update.audio;
    if (!isRecord(audio)) return fail(`${prefix}.audio`, `Invalid type for '${prefix}.audio': expected an object.`);
    if (given(audio.input)) {
      const input = audio.input;
      const at = `${prefix}.audio.input`;
      if (!isRecord(input)) return fail(at, `Invalid type for '${at}': expected an object.`);
      if (given(input.format)) next.audio.input.format = checkFormat(input.format, `${at}.format`);
      if (given(input.transcription))
        next.audio.input.transcription = checkTranscription(input.transcription, `${at}.transcription`);
      if (given(input.noise_reduction))
        next.audio.input.noise_reduction = checkNoiseReduction(input.noise_reduction, `${at}.noise_reduction`);
      if (given(input.turn_detection))
        next.audio.input.turn_detection = checkTurnDetection(input.turn_detection, `${at}.turn_detection`);
    }
    if (given(audio.output)) {
      const output = audio.output;
      const at = `${prefix}.audio.output`;
      if (!isRecord(output)) return fail(at, `Invalid type for '${at}': expected an object.`);
      if (given(output.format)) next.audio.output.format = checkFormat(output.format, `${at}.format`);
      if (given(output.voice)) next.audio.output.voice = checkVoice(output.voice, `${at}.voice`);
      if (given(output.speed)) next.audio.output.speed = checkNumber(output.speed, `${at}.speed`, 0.25, 1.5);
    }
  }
  return next;
}
