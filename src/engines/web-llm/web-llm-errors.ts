import { EngineError, type EngineErrorKind } from '../../engine-interface/index.ts';

/*
 * web-llm's errors as typed engine errors. Its classes are not exported and may come from another bundle, so they are
 * told apart by name (the names its constructors set, read from @mlc-ai/web-llm 0.2.86 lib/index.js).
 */

/** Failures while loading a model: the chain moves on to its next candidate, unless the device itself was lost. */
const LOAD_ERRORS: Readonly<Record<string, EngineErrorKind>> = {
  // A lost device leaves the engine unusable: an internal error, after which the host replaces the worker.
  DeviceLostError: 'internal',
};

/**
 * web-llm's refusals of a request's values, by class name: the client's errors, answered 400 naming the parameter.
 * The value is that parameter where a class always concerns one; `null` where its message names it (its
 * ConfigValueError family: "Make sure 0 < top_p <= 1.", "top_logprobs requires logprobs to be true.").
 */
const CLIENT_ERRORS: Readonly<Record<string, string | null>> = {
  ConfigValueError: null,
  MinValueError: null,
  RangeError: null,
  NonNegativeError: null,
  InvalidNumberStringError: null,
  DependencyError: null,
  UnsupportedFieldsError: null,
  SeedTypeError: 'seed',
  StreamingCountError: 'n',
  InvalidStreamOptionsError: 'stream_options',
  SystemMessageOrderError: 'messages',
  MessageOrderError: 'messages',
  UnsupportedRoleError: 'messages',
  ContentTypeError: 'messages',
  UserMessageContentErrorForNonVLM: 'messages',
  UnsupportedContentPartError: 'messages',
  MultipleTextContentError: 'messages',
  UnsupportedDetailError: 'messages',
  UnsupportedImageURLError: 'messages',
  CustomSystemPromptError: 'messages',
  InvalidResponseFormatError: 'response_format',
  InvalidResponseFormatGrammarError: 'response_format',
  InvalidResponseFormatStructuralTagError: 'response_format',
  CustomResponseFormatError: 'response_format',
  UnsupportedModelIdError: 'tools',
};

/**
 * web-llm's RangeError by its message (`Make sure 0 < top_p <= 1.`, its RangeError's only form): the built-in
 * RangeError has the same name, and is no client's error (`Array buffer allocation failed`, `Invalid array length`).
 */
const WEB_LLM_RANGE = /^Make sure -?[\d.]+ < \w+ <= -?[\d.]+\./;

/** An XGrammar that aborted (its WebAssembly's `Aborted()`): dead for every later grammar in this worker. */
const XGRAMMAR_ABORTED = /\bAborted\(/;

/**
 * The request fields web-llm's messages name. Its names are the OpenAI API's (`logit_bias's keys` is about
 * `logit_bias`); `repetition_penalty` is web-llm's own, which Lantern always sends as 1.
 */
const PARAMETERS = [
  'frequency_penalty',
  'presence_penalty',
  'repetition_penalty',
  'max_tokens',
  'top_p',
  'temperature',
  'logit_bias',
  'top_logprobs',
  'logprobs',
  'seed',
  'stream_options',
  'response_format',
  'tool_choice',
  'tools',
  'messages',
];

/** The parameter a message names first, as a whole word (`top_logprobs` is not `logprobs`). */
function parameterIn(message: string): string | undefined {
  let found: { param: string; at: number } | undefined;
  for (const param of PARAMETERS) {
    const at = message.search(new RegExp(`(?<![\\w])${param}(?![\\w])`));
    if (at !== -1 && (!found || at < found.at)) found = { param, at };
  }
  return found?.param;
}

const nameOf = (error: unknown) => (error instanceof Error ? error.name : '');
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * What web-llm throws before it touches the conversation it holds (`asyncGenerate`: its generation-config check, the
 * seed, then `preparePrefillInput`'s `getConversationFromChatCompletionRequest`), so that its KV cache is intact.
 * (What its `create` throws, `postInitAndCheckFields`, comes before all of it too.)
 */
const BEFORE_PREFILL = new Set([
  'ConfigValueError',
  'MinValueError',
  'NonNegativeError',
  'InvalidNumberStringError',
  'DependencyError',
  'MessageOrderError',
  'SystemMessageOrderError',
  'ContentTypeError',
  'UnsupportedRoleError',
]);

/** The plain Errors of tvmjs' random generator for a seed it cannot use (`setSeed`, lib/index.js 3839). */
const SEED_ERRORS = /^(Seed should be an integer\.|Random state is unexpectedly not (strictly positive|an integer)\.)$/;

/** Whether web-llm threw this before it touched the conversation it holds (see BEFORE_PREFILL). */
export function failedBeforePrefill(error: unknown): boolean {
  const name = nameOf(error);
  const message = messageOf(error);
  if (name === 'RangeError') return WEB_LLM_RANGE.test(message);
  return BEFORE_PREFILL.has(name) || (name === 'Error' && SEED_ERRORS.test(message));
}

/** Every web-llm error name mapped here. */
export const WEB_LLM_ERROR_NAMES: readonly string[] = [...Object.keys(LOAD_ERRORS), ...Object.keys(CLIENT_ERRORS)];

/** A failure while loading a model, as a typed EngineError. */
export function loadError(error: unknown): EngineError {
  if (error instanceof EngineError) return error;
  return new EngineError(LOAD_ERRORS[nameOf(error)] ?? 'load_failed', messageOf(error), { cause: error });
}

/**
 * A failure while generating, as a typed EngineError: a value web-llm refuses is the client's (`invalid_request`,
 * naming the parameter, so it never counts as a broken engine); a prompt over the window is `context_length_exceeded`;
 * a grammar web-llm's XGrammar could not compile (GrammarMatcherInitError) is the request's, naming its constraint's
 * parameter (`constraintParam`), unless XGrammar aborted, which leaves it unusable; anything else (a lost device, a
 * failure inside the model, a buffer that could not be allocated) is `internal`.
 */
export function runError(error: unknown, { constraintParam }: { constraintParam?: string } = {}): EngineError {
  if (error instanceof EngineError) return error;
  const name = nameOf(error);
  const message = messageOf(error);
  if (name === 'ContextWindowSizeExceededError') {
    return new EngineError('context_length_exceeded', message, { cause: error, param: 'messages' });
  }
  if (name === 'GrammarMatcherInitError') {
    const cause = error instanceof Error ? messageOf(error.cause) : '';
    if (XGRAMMAR_ABORTED.test(message) || XGRAMMAR_ABORTED.test(cause)) {
      return new EngineError('internal', message, { cause: error });
    }
    return new EngineError('invalid_request', message, {
      cause: error,
      ...(constraintParam && { param: constraintParam }),
    });
  }
  if (name === 'RangeError' && !WEB_LLM_RANGE.test(message))
    return new EngineError('internal', message, { cause: error });
  if (name in CLIENT_ERRORS) {
    const param = CLIENT_ERRORS[name] ?? parameterIn(message);
    return new EngineError('invalid_request', param ? `Invalid value for '${param}': ${message}` : message, {
      cause: error,
      ...(param && { param }),
    });
  }
  return new EngineError('internal', message, { cause: error });
}
