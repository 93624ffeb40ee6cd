import { describe, expect, it } from 'vitest';
import { routeFetch, type FetchEventLike } from './route-fetch.ts';

const origin = 'https://app.example';

function fetchEvent(url: string) {
  const responses: Promise<Response>[] = [];
  const event: FetchEventLike = {
    request: new Request(url),
    clientId: 'client-1',
    respondWith: (response) => void responses.push(Promise.resolve(response)),
  };
  return { event, responses };
}

describe('routeFetch', () => {
  const handler = async ({ request }: FetchEventLike) => new Response(`handled ${new URL(request.url).pathname}`);

  it.each(['/v1/models', '/v1/chat/completions', '/v1/unknown', '/v1'])('answers %s with the handler', async (path) => {
    const { event, responses } = fetchEvent(origin + path);
    expect(routeFetch(event, handler, origin)).toBe(true);
    expect(await (await responses[0]!).text()).toBe(`handled ${path}`);
  });

  it.each([`${origin}/`, `${origin}/v1x/models`, `${origin}/app/v1/models`, 'https://cdn.example/v1/models'])(
    'leaves %s to the network',
    (url) => {
      const { event, responses } = fetchEvent(url);
      expect(routeFetch(event, handler, origin)).toBe(false);
      expect(responses).toHaveLength(0);
    },
  );
});
