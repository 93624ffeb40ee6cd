import type { RunItem } from '@openai/agents-core';

/**
 * An OpenAI Agents SDK run's items as plain data a test can compare (in Node, or handed out of a browser page): their
 * kinds (a hosted tool's call by its name), the file searches (status, queries, files found) and the citations of its
 * messages.
 */
export function agentRunItems(items: RunItem[]) {
  return {
    kinds: items.map((item) =>
      item.type !== 'tool_call_item'
        ? item.type
        : item.rawItem.type === 'hosted_tool_call'
          ? item.rawItem.name
          : item.rawItem.type,
    ),
    searches: items.flatMap((item) => {
      if (item.type !== 'tool_call_item' || item.rawItem.type !== 'hosted_tool_call') return [];
      const data = item.rawItem.providerData as { queries: string[]; results?: { filename: string }[] | null };
      return [{ status: item.rawItem.status, queries: data.queries, files: data.results?.map((r) => r.filename) }];
    }),
    citations: items.flatMap((item) =>
      item.type === 'message_output_item'
        ? item.rawItem.content.flatMap((part) =>
            ((part.providerData?.annotations ?? []) as { type: string; file_id: string; filename: string }[]).map(
              ({ type, file_id, filename }) => ({ type, file_id, filename }),
            ),
          )
        : [],
    ),
  };
}
