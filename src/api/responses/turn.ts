import {
  EngineError,
  type ChatMessage,
  type ChatOptions,
  type ChatRequest,
  type ChatResult,
} from '../../engine-interface/index.ts';
import { imageLimitsOf } from '../image-parts.ts';
import type { RouteDeps } from '../route-deps.ts';
import { resolveConversation, toChatMessages } from './conversation.ts';
import { searchForTurn, withSources, type Sources } from './file-search.ts';
import type { ConversationItem, ResponsesParams } from './schema.ts';

/**
 * One turn of the Responses API, ready for the model: the conversation it continues with its own input last, the
 * messages the engine renders, and the passages `file_search` found. `POST /v1/responses`, `/compact` and
 * `/input_tokens` all build it here, so that a count is the count of the prompt a response would be given.
 */
export interface Turn {
  conversation: ConversationItem[];
  messages: ChatMessage[];
  /** The engine request but its messages (given by {@link Turn.chat}). */
  request: ChatRequest;
  sources: Sources | null;
  /** How many of the passages found the model is given: fewer once they did not fit its context window. */
  readonly given: number;
  /**
   * Runs the model on the turn with as many passages as fit: a prompt over the window is refused before any output,
   * and tried again with half as many, down to none.
   */
  chat(options: ChatOptions, messages?: ChatMessage[]): Promise<ChatResult>;
}

export async function prepareTurn(
  { engine, files, limits, responses }: Pick<RouteDeps, 'engine' | 'files' | 'limits' | 'responses'>,
  owner: string,
  params: ResponsesParams,
  signal: AbortSignal,
): Promise<Turn> {
  const conversation = await resolveConversation(responses, owner, params);
  // The request's own items come last in the conversation, after those of the response it continues.
  const offset = conversation.length - params.input.length;
  const messages = toChatMessages(params.instructions, conversation, offset);
  // Prompts are cached per key: no key's prompts reach another's answers or `cached_tokens` (issue 41).
  const request: ChatRequest = { ...params.request, messages, cacheScope: owner };
  if (messages.some((m) => m.images)) request.imageLimits = imageLimitsOf(limits);
  // `file_search` runs before the answer (an unknown vector store is a 404 before any stream).
  const sources = params.fileSearch ? await searchForTurn(files, owner, params.fileSearch, conversation, signal) : null;
  let given = sources?.results.length ?? 0;
  return {
    conversation,
    messages,
    request,
    sources,
    get given() {
      return given;
    },
    async chat(options, prompt = messages) {
      for (;;) {
        try {
          const shown = sources ? withSources(prompt, sources, given) : prompt;
          return await engine.chat(params.model, { ...request, messages: shown }, options);
        } catch (error) {
          const tooLong = error instanceof EngineError && error.kind === 'context_length_exceeded';
          if (!tooLong || given === 0) throw error;
          given = Math.floor(given / 2);
        }
      }
    },
  };
}

/**
 * An engine error about the conversation (`messages`, as the engine calls the prompt it renders) is about the
 * request's `input`. (Refusals of `text.format` and of tools' parameters name them already: the request's constraint
 * carries this API's names.)
 */
export function asInputError(error: unknown): never {
  if (error instanceof EngineError && error.param === 'messages') {
    throw new EngineError(error.kind, error.message, { param: 'input', cause: error });
  }
  throw error;
}
