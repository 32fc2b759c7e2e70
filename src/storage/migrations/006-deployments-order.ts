import type { Migration } from './index.js';

/** deployments.list orders by COALESCE(started_at, created_at): an expression index serves it without a sort. */
export const m006DeploymentsOrder: Migration = {
  version: 6,
  name: 'deployments list order index',
  sql: `CREATE INDEX deployments_project_at ON deployments(project_id, COALESCE(started_at, created_at) DESC, id DESC);`,
};
