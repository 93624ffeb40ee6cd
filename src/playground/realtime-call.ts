import type OpenAI from 'openai';
import type {
  RealtimeClientEvent,
  RealtimeFunctionTool,
  RealtimeServerEvent,
  RealtimeSessionCreateRequest,
} from 'openai/resources/realtime/realtime';

/**
 * A Realtime call from the page, as any app makes one against OpenAI's public protocol: an ephemeral client secret
 * minted with the app's key (`POST /v1/realtime/client_secrets`, the session configured there), then a WebRTC offer
 * carrying the microphone and the `oai-events` data channel, posted as `application/sdp` to `/v1/realtime/calls` with
 * that secret; the answer's audio track is the assistant speaking, and the data channel carries the events both ways.
 * Nothing here knows that Lantern answers in the same browser.
 */

/** The demo function tool the voice tab offers; the page answers it (`runDemoTool`), not the model. */
export const GET_TIME_TOOL: RealtimeFunctionTool = {
  type: 'function',
  name: 'get_time',
  description: 'The current date and time, in a time zone (IANA name such as Europe/Paris) or the device’s own.',
  parameters: {
    type: 'object',
    properties: { time_zone: { type: 'string', description: 'An IANA time zone, e.g. Europe/Paris.' } },
    additionalProperties: false,
  },
};

/** The session the voice tab asks for: audio out, the user's speech transcribed, server VAD taking turns. */
export function voiceSession(options: {
  instructions?: string | undefined;
  voice?: string | undefined;
  tools?: RealtimeFunctionTool[] | undefined;
}): RealtimeSessionCreateRequest {
  return {
    type: 'realtime',
    model: 'gpt-realtime',
    output_modalities: ['audio'],
    ...(options.instructions && { instructions: options.instructions }),
    ...(options.tools?.length && { tools: options.tools, tool_choice: 'auto' as const }),
    audio: {
      // Without a transcription model the API sends no transcript of what the user said.
      input: { transcription: { model: 'whisper-1' }, turn_detection: { type: 'server_vad' } },
      output: { ...(options.voice && { voice: options.voice }) },
    },
  };
}

/** What the page answers to a call of the demo tool: JSON, as a function_call_output's `output` is a string. */
export function runDemoTool(name: string, args: string, now = new Date()): string {
  if (name !== GET_TIME_TOOL.name) return JSON.stringify({ error: `The page has no tool named ${name}.` });
  let timeZone: string | undefined;
  try {
    const parsed: unknown = args.trim() ? JSON.parse(args) : {};
    const zone = (parsed as { time_zone?: unknown } | null)?.time_zone;
    if (typeof zone === 'string' && zone) timeZone = zone;
  } catch {
    return JSON.stringify({ error: `The arguments are not JSON: ${args}` });
  }
  try {
    const format = new Intl.DateTimeFormat('en-GB', { dateStyle: 'full', timeStyle: 'long', timeZone });
    return JSON.stringify({ time_zone: format.resolvedOptions().timeZone, time: format.format(now) });
  } catch {
    return JSON.stringify({ error: `Unknown time zone: ${timeZone}` });
  }
}

/**
 * Stops the reply in progress (when one is: cancelling none is an error) and the audio already sent for it, which may
 * still be playing after its reply is done (WebRTC's output buffer).
 */
export const interruptEvents = (responding: boolean): RealtimeClientEvent[] => [
  ...(responding ? [{ type: 'response.cancel' } as const] : []),
  { type: 'output_audio_buffer.clear' },
];

/** A typed user message, and a reply to it. */
export const textMessageEvents = (text: string): RealtimeClientEvent[] => [
  {
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
  },
  { type: 'response.create' },
];

/** The results of the tool calls one response made, and the reply that reads them. */
export const toolOutputEvents = (outputs: { callId: string; output: string }[]): RealtimeClientEvent[] => [
  ...outputs.map(({ callId, output }): RealtimeClientEvent => ({
    type: 'conversation.item.create',
    item: { type: 'function_call_output', call_id: callId, output },
  })),
  { type: 'response.create' },
];

/** The call's ID from the answer's `Location` (`/v1/realtime/calls/rtc_…`). */
export const callIdOf = (location: string | null): string | undefined => location?.split('/').pop() || undefined;

/** An error answer's message: the OpenAI error body's, or the status. */
export async function errorMessageOf(response: Response): Promise<string> {
  const text = await response.text().catch(() => '');
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof message === 'string' && message) return message;
  } catch {
    // Not JSON: the text itself, if any, says more than the status.
  }
  return text.trim() || `${response.status} ${response.statusText}`.trim();
}

export interface RealtimeCallOptions {
  /** Mints the client secret with its key (the app's server would, in an app with one) and names the API's base URL. */
  client: OpenAI;
  session: RealtimeSessionCreateRequest;
  /** Every server event, in order. */
  onEvent(event: RealtimeServerEvent): void;
  /** The assistant's audio, for an `<audio autoplay>`. */
  onAudio(stream: MediaStream): void;
  /** The call ended without a hang-up from the page: the data channel closed or the connection failed. */
  onEnd(reason: string): void;
  /** How long to wait for the data channel to open once the answer is in. */
  openTimeoutMs?: number;
}

/** How long ICE gathering may take before the offer goes as it is (candidates on a local machine come at once). */
const GATHER_TIMEOUT_MS = 3_000;

/** One call in progress: events out, hang-up. */
export class RealtimeCall {
  #ended = false;

  private constructor(
    readonly id: string | undefined,
    readonly model: string,
    private readonly peer: RTCPeerConnection,
    private readonly channel: RTCDataChannel,
    private readonly microphone: MediaStream,
    private readonly hangUpURL: string | undefined,
    private readonly apiKey: string | null,
  ) {}

  /** Mints the secret, opens the microphone, makes the offer, and resolves once the data channel is open. */
  static async start(options: RealtimeCallOptions): Promise<RealtimeCall> {
    const { client } = options;
    const secret = await client.realtime.clientSecrets.create({ session: options.session });
    const microphone = await navigator.mediaDevices.getUserMedia({ audio: true });
    const peer = new RTCPeerConnection();
    try {
      const channel = peer.createDataChannel('oai-events');
      peer.addEventListener('track', (event) => options.onAudio(event.streams[0] ?? new MediaStream([event.track])));
      for (const track of microphone.getAudioTracks()) peer.addTrack(track, microphone);
      await peer.setLocalDescription(await peer.createOffer());
      await iceGathered(peer, GATHER_TIMEOUT_MS);
      const base = client.baseURL.replace(/\/$/, '');
      const response = await fetch(`${base}/realtime/calls`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/sdp', Authorization: `Bearer ${secret.value}` },
        body: peer.localDescription!.sdp,
      });
      if (!response.ok) throw new Error(`The call was refused: ${await errorMessageOf(response)}`);
      const id = callIdOf(response.headers.get('Location'));
      await peer.setRemoteDescription({ type: 'answer', sdp: await response.text() });
      const model = (secret.session as { model?: string }).model ?? options.session.model ?? 'gpt-realtime';
      const call = new RealtimeCall(
        id,
        model,
        peer,
        channel,
        microphone,
        id && `${base}/realtime/calls/${id}/hangup`,
        client.apiKey,
      );
      channel.addEventListener('message', (message) => {
        if (typeof message.data !== 'string') return;
        try {
          options.onEvent(JSON.parse(message.data) as RealtimeServerEvent);
        } catch (error) {
          console.warn('A Realtime event that is not JSON:', message.data, error);
        }
      });
      await opened(channel, options.openTimeoutMs ?? 15_000);
      // From here the call is the caller's: an end it did not ask for is told, not thrown.
      channel.addEventListener('close', () => call.#end(options.onEnd, 'The call ended.'));
      peer.addEventListener('connectionstatechange', () => {
        if (peer.connectionState === 'failed') call.#end(options.onEnd, 'The connection failed.');
      });
      return call;
    } catch (error) {
      peer.close();
      for (const track of microphone.getTracks()) track.stop();
      throw error;
    }
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Sends client events on the data channel, in order. */
  send(...events: RealtimeClientEvent[]): void {
    if (this.#ended || this.channel.readyState !== 'open') throw new Error('The call has ended.');
    for (const event of events) this.channel.send(JSON.stringify(event));
  }

  /** Ends the call: tells the API (`POST …/hangup`, so the call's credential stops at once), closes the connection. */
  async hangUp(): Promise<void> {
    if (this.#ended) return;
    this.#close();
    if (!this.hangUpURL || !this.apiKey) return;
    // Closing the connection ends the call anyway: a failed hang-up request is only logged.
    try {
      const response = await fetch(this.hangUpURL, {
        method: 'POST',
        headers: { Authorization: `Bearer ${this.apiKey}` },
      });
      if (!response.ok) console.warn('The hang-up request was refused:', await errorMessageOf(response));
    } catch (error) {
      console.warn('The hang-up request failed:', error);
    }
  }

  #end(onEnd: (reason: string) => void, reason: string) {
    if (this.#ended) return;
    this.#close();
    onEnd(reason);
  }

  #close() {
    this.#ended = true;
    this.channel.close();
    this.peer.close();
    for (const track of this.microphone.getTracks()) track.stop();
  }
}

/** Resolves when the offer holds its candidates (no trickle ICE over one POST), or after `timeoutMs` regardless. */
function iceGathered(peer: RTCPeerConnection, timeoutMs: number): Promise<void> {
  if (peer.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      peer.removeEventListener('icegatheringstatechange', check);
      resolve();
    };
    const check = () => void (peer.iceGatheringState === 'complete' && done());
    const timer = setTimeout(done, timeoutMs);
    peer.addEventListener('icegatheringstatechange', check);
  });
}

function opened(channel: RTCDataChannel, timeoutMs: number): Promise<void> {
  if (channel.readyState === 'open') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('The call’s event channel did not open.')), timeoutMs);
    channel.addEventListener('open', () => (clearTimeout(timer), resolve()), { once: true });
    channel.addEventListener(
      'close',
      () => (clearTimeout(timer), reject(new Error('The call’s event channel closed before it opened.'))),
      { once: true },
    );
  });
}
