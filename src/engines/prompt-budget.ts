import { EngineError, type ChatRequest } from '../engine-interface/index.ts';

/*
 * A prompt that cannot fit a model's context window is refused before it is tokenized. Tokenizing (and rendering a
 * chat template) runs on one thread, in one call: a 4 MB prompt held Node's event loop for 6 s, every other key's
 * request waiting behind it, only to learn that it did not fit. Characters are counted in microseconds, and no text
 * packs more than a few characters into a token (English about 4, code about 3, runs of spaces in code up to 8 or so),
 * so a prompt of more than `MAX_CHARS_PER_TOKEN` characters for every token of the window cannot fit.
 */

/** More characters per token than any real text averages: a prompt past this many per token of the window is refused. */
export const MAX_CHARS_PER_TOKEN = 16;

/**
 * The characters that a request puts in the prompt: the messages' text and calls, the raw prompt, and the tools'
 * definitions (chat templates render them into the prompt).
 */
export function promptChars(request: ChatRequest): number {
  let chars = request.prompt?.length ?? 0;
  for (const message of request.messages) {
    chars += message.content.length;
    for (const call of message.toolCalls ?? []) chars += call.name.length + call.arguments.length;
  }
  if (request.constraint?.type === 'tools') {
    for (const tool of request.constraint.tools) {
      chars += tool.name.length + (tool.description?.length ?? 0) + JSON.stringify(tool.parameters ?? {}).length;
    }
  }
  return chars;
}

/** Refuses (400 `context_length_exceeded`) a prompt too long for a window of `contextLength` tokens, unread. */
export function refuseUnfittablePrompt(request: ChatRequest, contextLength: number): void {
  const chars = promptChars(request);
  const budget = contextLength * MAX_CHARS_PER_TOKEN;
  if (chars <= budget) return;
  const what = request.prompt !== undefined ? 'prompt' : 'messages';
  throw new EngineError(
    'context_length_exceeded',
    `This model's maximum context length is ${contextLength} tokens. However, your ${what} ${what === 'prompt' ? 'is' : 'are'} ` +
      `${chars} characters long, more than ${contextLength} tokens can hold (at most ${budget} characters, ` +
      `${MAX_CHARS_PER_TOKEN} a token). Please reduce the length of the ${what}.`,
    { param: what },
  );
}

/**
 * Refuses (400 `context_length_exceeded` naming `input`) an embeddings input of `tokens` tokens, once tokenized, over the
 * model's `maxInputTokens`: every engine's embedding model checks every input so before it embeds any, and never
 * truncates one.
 */
export function refuseLongInput(index: number, tokens: number, maxInputTokens: number): void {
  if (tokens <= maxInputTokens) return;
  throw new EngineError(
    'context_length_exceeded',
    `This model's maximum input length is ${maxInputTokens} tokens, but input[${index}] has ${tokens} tokens. ` +
      'Please shorten or split it.',
    { param: 'input' },
  );
}

/** Refuses (400 `context_length_exceeded`) an embeddings input too long for `maxInputTokens`, unread. */
export function refuseUnfittableInput(input: readonly string[], maxInputTokens: number): void {
  const budget = maxInputTokens * MAX_CHARS_PER_TOKEN;
  const index = input.findIndex((text) => text.length > budget);
  if (index < 0) return;
  throw new EngineError(
    'context_length_exceeded',
    `This model's maximum input length is ${maxInputTokens} tokens, but input[${index}] is ${input[index]!.length} ` +
      `characters long, more than ${maxInputTokens} tokens can hold (at most ${budget} characters, ` +
      `${MAX_CHARS_PER_TOKEN} a token). Please shorten or split it.`,
    { param: 'input' },
  );
}
