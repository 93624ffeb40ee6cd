import { EngineError, OPENAI_VOICES, type OpenAIVoice } from '../../engine-interface/index.ts';

export { OPENAI_VOICES, type OpenAIVoice };

/** What a speech model says its voices are: its own names, and OpenAI's names mapped onto them. */
export interface VoiceTable {
  readonly voices: readonly string[];
  readonly openaiVoices: Readonly<Record<string, string>>;
}

/** The voices a model answers to, as `/v1/models` lists them: OpenAI's names first, then its own. */
export const voiceNames = (table: VoiceTable): string[] => [
  ...OPENAI_VOICES.filter((name) => Object.hasOwn(table.openaiVoices, name)),
  ...table.voices,
];

/**
 * The model's own voice for a requested name: one of its own as it is, an OpenAI name through its map. Any other is
 * refused (400 `voice`), naming the voices it has.
 */
export function resolveVoice(table: VoiceTable, name: string): string {
  if (table.voices.includes(name)) return name;
  if (Object.hasOwn(table.openaiVoices, name)) return table.openaiVoices[name]!;
  throw new EngineError(
    'invalid_request',
    `Unknown voice \`${name}\`. This model speaks in ${voiceNames(table)
      .map((v) => `\`${v}\``)
      .join(', ')}.`,
    { param: 'voice' },
  );
}
