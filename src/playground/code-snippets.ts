/** The code that makes a request the playground just made: with `fetch`, and with the openai SDK. */
export interface ExchangeRequest {
  method: string;
  path: string; // e.g. /v1/chat/completions
  body?: unknown;
}

const indent = (text: string, spaces: number) => text.replace(/\n/g, `\n${' '.repeat(spaces)}`);

export function fetchSnippet(request: ExchangeRequest): string {
  const body =
    request.body === undefined ? '' : `,\n  body: JSON.stringify(${indent(JSON.stringify(request.body, null, 2), 2)})`;
  const stream = (request.body as { stream?: boolean } | undefined)?.stream === true;
  return [
    `const response = await fetch(\`\${location.origin}${request.path}\`, {`,
    `  method: '${request.method}',`,
    `  headers: { Authorization: \`Bearer \${apiKey}\`${request.body === undefined ? '' : ", 'Content-Type': 'application/json'"} }${body},`,
    `});`,
    stream
      ? `// Server-sent events: read response.body line by line; each "data: {...}" is a chunk, "data: [DONE]" ends it.`
      : `const data = await response.json();`,
  ].join('\n');
}

/** The openai SDK call for an endpoint of the API, with the request's own parameters. */
export function sdkSnippet(request: ExchangeRequest): string {
  const setup = [
    `import OpenAI from 'openai';`,
    `import { startLocalAPI } from 'lantern/client';`,
    ``,
    `const lantern = await startLocalAPI();`,
    `const client = new OpenAI({ baseURL: lantern.baseURL, apiKey, fetch: lantern.fetch, dangerouslyAllowBrowser: true });`,
    ``,
  ];
  const params = indent(JSON.stringify(request.body ?? {}, null, 2), 0);
  const body = request.body as { stream?: boolean } | undefined;
  switch (request.path) {
    case '/v1/chat/completions':
      return [
        ...setup,
        body?.stream
          ? `const stream = await client.chat.completions.create(${params});\nfor await (const chunk of stream) console.log(chunk.choices[0]?.delta.content ?? '');`
          : `const completion = await client.chat.completions.create(${params});`,
      ].join('\n');
    case '/v1/embeddings':
      return [...setup, `const embeddings = await client.embeddings.create(${params});`].join('\n');
    default:
      return [...setup, `const models = await client.models.list();`].join('\n');
  }
}
