/**
 * OpenAI's built-in voices (`POST /v1/audio/speech`'s `voice`): each speech model maps them onto its own, and a page
 * offers them where a model card lists none (a server's model). One list, for both sides of the wire.
 */
export const OPENAI_VOICES = Object.freeze([
  'alloy',
  'ash',
  'ballad',
  'coral',
  'echo',
  'fable',
  'onyx',
  'nova',
  'sage',
  'shimmer',
  'verse',
  'marin',
  'cedar',
] as const);

export type OpenAIVoice = (typeof OPENAI_VOICES)[number];
