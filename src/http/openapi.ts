import type { AnyOperation } from '../../operations/define.js';
import { fieldLocations } from '../../operations/define.js';
import type { AppConfig } from '../core/config.js';
import { KNOWN_SCOPES } from '../core/scopes.js';
import { pickSchema, toJsonSchema, type JsonSchema } from '../core/json-schema.js';

const errorRef = { $ref: '#/components/schemas/Error' };

const COMPONENTS = {
  schemas: {
    ErrorShapeA: {
      type: 'object',
      description: 'The error shape of every operation: branch on the HTTP status first, then on `code`.',
      required: ['type', 'code', 'message'],
      properties: {
        type: { type: 'string', examples: ['invalid_request_error', 'authentication_error', 'permission_error', 'not_found_error', 'conflict_error', 'rate_limit_error', 'api_error'] },
        code: { type: 'string' },
        message: { type: 'string', description: 'Safe text for a person fixing the request.' },
        param: { type: 'string', description: 'The input field at fault.' },
        doc_url: { type: 'string' },
        retry_after: { type: 'integer', description: 'Seconds to wait (rate limits).' },
      },
    },
    ErrorShapeB: {
      type: 'object',
      description: 'Legacy error shape of some specialised endpoints, documented during the migration.',
      required: ['error'],
      properties: { error: { type: 'string' }, message: { type: 'string' }, hint: { type: 'string' } },
    },
    Error: { oneOf: [{ $ref: '#/components/schemas/ErrorShapeA' }, { $ref: '#/components/schemas/ErrorShapeB' }] },
  },
  responses: Object.fromEntries(
    [
      ['BadRequest', 'The input breaks a rule: see `param` and `message`.'],
      ['Unauthorized', 'Credentials missing or not valid.'],
      ['Forbidden', 'The credential lacks a scope or the project access this operation needs.'],
      ['NotFound', 'The resource does not exist, or belongs to a project this credential cannot reach.'],
      ['TooManyRequests', 'Rate or quota exceeded; see Retry-After.'],
    ].map(([name, description]) => [name, { description, content: { 'application/json': { schema: errorRef } } }]),
  ),
  securitySchemes: {
    apiKey: { type: 'apiKey', in: 'header', name: 'x-service-key', description: 'A project API key.' },
    bearer: { type: 'http', scheme: 'bearer', description: 'An API key or an OAuth access token.' },
    mcp: {
      type: 'oauth2',
      description: 'OAuth 2.1 authorization code with PKCE, as used by MCP clients.',
      flows: {
        authorizationCode: {
          authorizationUrl: '{mcp_url}/authorize',
          tokenUrl: '{mcp_url}/token',
          refreshUrl: '{mcp_url}/token',
          scopes: Object.fromEntries(KNOWN_SCOPES.map((s) => [s, `scope ${s}`])),
        },
      },
    },
  },
};

const STD_ERRORS: Record<string, string> = { '400': 'BadRequest', '401': 'Unauthorized', '403': 'Forbidden', '404': 'NotFound', '429': 'TooManyRequests' };

function operationObject(op: AnyOperation): JsonSchema {
  const where = fieldLocations(op);
  const shape = op.input.shape as Record<string, { isOptional(): boolean }>;
  const fieldSchema = (name: string) => {
    const s = pickSchema(op.input, [name]);
    return ((s.properties as JsonSchema)[name] ?? {}) as JsonSchema;
  };
  const param = (name: string, location: 'path' | 'query' | 'header', headerName?: string) => {
    const schema = fieldSchema(name);
    const { description, ...rest } = schema;
    return {
      name: headerName ?? name,
      in: location,
      required: location === 'path' ? true : !shape[name]!.isOptional(),
      ...(description ? { description } : {}),
      schema: rest,
    };
  };
  const parameters = [
    ...where.path.map((p) => param(p, 'path')),
    ...where.query.map((q) => param(q, 'query')),
    ...Object.entries(op.headerInputs ?? {}).map(([h, field]) => param(field, 'header', h.replace(/(^|-)([a-z])/g, (_m, d, c) => d + c.toUpperCase()))),
  ];
  const responses: JsonSchema = {
    [String(op.successStatus ?? 200)]: {
      description: 'Success',
      content: {
        // A streaming operation answers REST calls with chunks of this type; the JSON output is what other faces get.
        ...(op.streams ? { [op.streams.contentType.split(';')[0]!]: { schema: { type: 'string' } } } : {}),
        'application/json': { schema: toJsonSchema(op.output, 'output') },
      },
    },
  };
  const declared = new Map<string, string[]>();
  for (const e of op.errors) declared.set(String(e.status), [...(declared.get(String(e.status)) ?? []), `\`${e.code}\`: ${e.when}`]);
  for (const status of new Set([...Object.keys(STD_ERRORS), ...declared.keys()])) {
    if (status === '404' && !where.path.length && !declared.has('404')) continue;
    const notes = declared.get(status);
    responses[status] = notes
      ? { description: notes.join('; '), content: { 'application/json': { schema: errorRef } } }
      : { $ref: `#/components/responses/${STD_ERRORS[status]}` };
  }
  const obj: JsonSchema = {
    operationId: op.operationId,
    tags: [op.tag],
    summary: op.summary,
    description: `${op.description}\n\nScopes: ${op.scopes.length ? op.scopes.join(' AND ') : 'any valid credential'}.`,
    parameters,
    responses,
    security: [{ apiKey: [] }, { bearer: [] }, { mcp: [...op.scopes] }],
    'x-project-scoped': op.projectScoped,
    'x-sensitive': op.sensitive,
    'x-risk': op.risk,
    'x-scopes': [...op.scopes],
  };
  if (where.body.length) {
    obj.requestBody = { required: true, content: { 'application/json': { schema: pickSchema(op.input, where.body) } } };
  }
  return obj;
}

/** The OpenAPI 3.1 contract, derived from the catalogue. */
export function buildOpenApi(operations: Iterable<AnyOperation>, config: Pick<AppConfig, 'baseUrl' | 'mcpUrl'>): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const tags = new Set<string>();
  for (const op of operations) {
    (paths[op.path] ??= {})[op.method.toLowerCase()] = operationObject(op);
    tags.add(op.tag);
  }
  const components = JSON.parse(JSON.stringify(COMPONENTS).replaceAll('{mcp_url}', config.mcpUrl));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Sightline API',
      version: '1.0.0',
      description: 'Errors, logs, metrics, traces, releases, feedback and deployments of your projects. Every operation is also reachable over MCP (search/execute), the CLI and the TypeScript client.',
    },
    servers: [{ url: config.baseUrl }],
    tags: [...tags].map((name) => ({ name })),
    paths,
    components,
    security: [{ apiKey: [] }, { bearer: [] }, { mcp: [] }],
  };
}
