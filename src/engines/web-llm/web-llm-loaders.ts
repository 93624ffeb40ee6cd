import type { ChatModel, EngineLoaders } from '../model-loaders.ts';
import type { WebLLMCandidate } from './web-llm-engine.ts';

/**
 * web-llm's loaders (`ENGINE_LOADERS` in `model-loaders.ts`): chat only (its descriptor's tasks). web-llm is imported on
 * first use, so that a realm that never runs it never loads it.
 */
export const WEB_LLM_LOADERS: EngineLoaders<WebLLMCandidate> = {
  async chat(candidate, context): Promise<ChatModel> {
    const { WebLLMChatModel } = await import('./web-llm-chat-model.ts');
    const model = await WebLLMChatModel.load(candidate, context);
    // web-llm decodes one request at a time (its own lock): each runs whole in the realm's queue.
    return {
      runsOn: model.runsOn,
      generate: (request, options) => context.queue.run(() => model.generate(request, options), options?.signal),
    };
  },
};
