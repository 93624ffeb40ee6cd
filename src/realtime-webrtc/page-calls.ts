import { answerCall } from './answer-call.ts';
import type { CallReply } from './call-messages.ts';
import { isCallMessage, isHangupMessage } from './call-messages.ts';

/** The calls this page answers, each with what ends it. */
const live = new Map<string, () => void>();

/**
 * A call message from the service worker: answers a call (the SDP answer, or why not, goes back on `port`) or ends
 * one that was hung up.
 */
export async function onCallMessage(data: unknown, port: MessagePort | undefined): Promise<void> {
  if (isHangupMessage(data)) {
    live.get(data.id)?.();
    return;
  }
  if (!isCallMessage(data) || !port) return;
  const { call } = data;
  let reply: CallReply;
  try {
    const answered = await answerCall(call, { onEnd: () => live.delete(call.id) });
    live.set(call.id, answered.end);
    reply = { sdp: answered.sdp };
  } catch (error) {
    reply = { error: error instanceof Error ? error.message : String(error) };
  }
  port.postMessage(reply);
  port.close();
}
