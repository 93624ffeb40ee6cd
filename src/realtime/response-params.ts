/**
 * What one response runs with: the session's settings, overridden field by field by `response.create`'s `response`
 * (checked as `session.update` checks them, each error naming its `response.…` param).
 */
import { parseClientItem } from './client-items.ts';
import { isRecord, RealtimeClientError, type RealtimeItem } from './realtime-events.ts';
import {
  checkFormat,
  checkMaxOutputTokens,
  checkModalities,
  checkToolChoice,
  checkTools,
  checkVoice,
  type AudioFormat,
  type FunctionTool,
  type RealtimeSessionConfig,
  type ToolChoice,
} from './session-config.ts';

export interface ResponseParams {
  instructions: string;
  tools: FunctionTool[];
  toolChoice: ToolChoice;
  modalities: ['text'] | ['audio'];
  maxTokens: number | 'inf';
  inConversation: boolean;
  /** The items the model reads instead of the conversation (`response.input`). */
  input: RealtimeItem[] | undefined;
  metadata: Record<string, string> | null;
  voice: string;
  format: AudioFormat;
}

/** The response's settings; `raw` is `response.create`'s `response` (undefined for the session's own). */
export function responseParams(
  session: RealtimeSessionConfig,
  raw: unknown,
  lookup: (id: string) => RealtimeItem | undefined,
): ResponseParams {
  const s = session;
  const params: ResponseParams = {
    instructions: s.instructions,
    tools: s.tools,
    toolChoice: s.tool_choice,
    modalities: s.output_modalities,
    maxTokens: s.max_output_tokens,
    inConversation: true,
    input: undefined,
    metadata: null,
    voice: s.audio.output.voice,
    format: s.audio.output.format,
  };
  if (raw === undefined || raw === null) return params;
  if (!isRecord(raw))
    throw new RealtimeClientError("Invalid type for 'response': expected an object.", 'response', 'invalid_type');
  if (raw.conversation !== undefined) {
    if (raw.conversation !== 'auto' && raw.conversation !== 'none')
      throw new RealtimeClientError(
        "Invalid 'response.conversation': expected 'auto' or 'none'.",
        'response.conversation',
      );
    params.inConversation = raw.conversation === 'auto';
  }
  if (raw.instructions !== undefined) {
    if (typeof raw.instructions !== 'string')
      throw new RealtimeClientError(
        "Invalid type for 'response.instructions': expected a string.",
        'response.instructions',
      );
    params.instructions = raw.instructions;
  }
  if (raw.tools !== undefined) params.tools = checkTools(raw.tools, 'response.tools');
  if (raw.tool_choice !== undefined)
    params.toolChoice = checkToolChoice(raw.tool_choice, 'response.tool_choice', params.tools);
  if (raw.output_modalities !== undefined)
    params.modalities = checkModalities(raw.output_modalities, 'response.output_modalities');
  if (raw.max_output_tokens !== undefined)
    params.maxTokens = checkMaxOutputTokens(raw.max_output_tokens, 'response.max_output_tokens');
  if (raw.metadata !== undefined && raw.metadata !== null) {
    const m = raw.metadata;
    if (
      !isRecord(m) ||
      Object.keys(m).length > 16 ||
      Object.values(m).some((v) => typeof v !== 'string' || v.length > 512)
    )
      throw new RealtimeClientError(
        "Invalid 'response.metadata': at most 16 string values of 512 characters.",
        'response.metadata',
      );
    params.metadata = m as Record<string, string>;
  }
  if (raw.audio !== undefined) {
    const output = isRecord(raw.audio) ? raw.audio.output : undefined;
    if (isRecord(output)) {
      if (output.voice !== undefined) params.voice = checkVoice(output.voice, 'response.audio.output.voice');
      if (output.format !== undefined) params.format = checkFormat(output.format, 'response.audio.output.format');
    }
  }
  if (raw.input !== undefined) {
    if (!Array.isArray(raw.input))
      throw new RealtimeClientError("Invalid type for 'response.input': expected an array.", 'response.input');
    params.input = raw.input.map((entry, i) => {
      if (isRecord(entry) && entry.type === 'item_reference') {
        const found = typeof entry.id === 'string' ? lookup(entry.id) : undefined;
        if (!found)
          throw new RealtimeClientError(
            `Item with id '${String(entry.id)}' not found.`,
            `response.input[${i}].id`,
            'item_not_found',
          );
        return found;
      }
      const { item, audio } = parseClientItem(entry, `response.input[${i}]`);
      if (audio)
        throw new RealtimeClientError(
          'Audio in response.input needs a transcript: add it to the conversation first.',
          `response.input[${i}].content[${audio.contentIndex}]`,
        );
      return item;
    });
  }
  return params;
}
