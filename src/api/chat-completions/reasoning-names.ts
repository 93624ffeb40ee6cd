import { isWireObject, type WireObject } from '../../engine-interface/index.ts';

/*
 * A reasoning model's thought goes out under both names that clients read: `reasoning_content` (vLLM, llama.cpp's
 * server and DeepSeek write it; the AI SDK's OpenAI-compatible provider and LangChain read it) and `reasoning` (Ollama
 * and OpenRouter write it; the OpenAI Agents SDK's chat-completions model reads only it: `message.reasoning` in
 * `getResponse`, `delta.reasoning` in `convertChatCompletionsStreamToResponses`, @openai/agents-openai).
 */

/** The part of a choice that holds its text: a completion's `message`, or a chunk's `delta`. */
const partOf = (choice: WireObject) =>
  isWireObject(choice.message) ? 'message' : isWireObject(choice.delta) ? 'delta' : undefined;

/** The thought a message or delta holds under one name only (the other absent or null); undefined otherwise. */
function loneThought(part: WireObject): string | undefined {
  const [content, reasoning] = [part.reasoning_content, part.reasoning];
  if (typeof content === 'string' && reasoning == null) return content;
  if (typeof reasoning === 'string' && content == null) return reasoning;
  return undefined;
}

/**
 * A server's chat completion or chunk (passed through: `serverBody`, `onServerChunk`), each choice's thought under both
 * names where the server wrote it under one. The same object when no choice needs it, as most chunks do not; a server
 * that wrote both keeps its own.
 */
export function withBothReasoningNames(answer: WireObject): WireObject {
  const { choices } = answer;
  if (!Array.isArray(choices)) return answer;
  const needs = (choice: unknown) => {
    const key = isWireObject(choice) ? partOf(choice) : undefined;
    return key !== undefined && loneThought((choice as WireObject)[key] as WireObject) !== undefined;
  };
  if (!choices.some(needs)) return answer;
  return {
    ...answer,
    choices: choices.map((choice: unknown) => {
      if (!needs(choice)) return choice;
      const key = partOf(choice as WireObject)!;
      const part = (choice as WireObject)[key] as WireObject;
      const thought = loneThought(part);
      return { ...(choice as WireObject), [key]: { ...part, reasoning_content: thought, reasoning: thought } };
    }),
  };
}
