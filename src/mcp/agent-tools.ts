/**
 * The in-project agent's Code Mode tools (src/domain/agent/runner.ts `CodeModeTools`), made from
 * this MCP implementation rather than a second one: the same search index and answers, `localCaller`
 * (every call through `core.invoke`, hidden operations refused) and `runExecute` over the sandbox.
 * The agent's principal is API-key-shaped and bound to one project with only the narrowed scopes,
 * so invoke enforces them exactly as for a key.
 */
import type { Logger } from 'pino';
import type { Executor } from '../../sandbox/executor.js';
import { resolveLimits } from '../../sandbox/limits.js';
import type { Core } from '../core/invoke.js';
import type { ApiKeyPrincipal } from '../core/principal.js';
import type { CodeModeTools } from '../domain/agent/runner.js';
import { localCaller, runExecute } from './execute.js';
import { createSearchIndex, type SearchIndex } from './search.js';
import { searchAnswerer, toolDescriptions } from './server.js';

export function createAgentCodeMode(core: Core, executor: () => Executor, log?: Pick<Logger, 'error'>): CodeModeTools {
  const allOps = [...core.operations.values()];
  const hidden = allOps.filter((op) => op.sensitive).map((op) => op.operationId);
  // Built with the first run: a server whose agent never runs pays nothing for it.
  let index: SearchIndex | null = null;
  let answer: ReturnType<typeof searchAnswerer> | null = null;
  const text = toolDescriptions(resolveLimits());
  return {
    descriptions: { search: text.search, execute: text.execute },
    open(spec) {
      index ??= createSearchIndex(allOps);
      answer ??= searchAnswerer(index, allOps);
      const ids = index.operations.map((op) => op.operationId);
      const principal: ApiKeyPrincipal = { kind: 'api_key', keyId: spec.keyId, projectId: spec.projectId, orgId: spec.orgId, scopes: [...spec.scopes] };
      const caller = localCaller(core, principal, { log });
      return {
        search: (args) => answer!(caller, args),
        execute: (code) => runExecute(executor(), code, ids, caller.call, { credential: `agent:${spec.projectId}`, hidden, log }),
      };
    },
  };
}
