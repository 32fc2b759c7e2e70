import type { Db } from '../storage/db.js';
import { createIdentityRepo, type IdentityRepo } from '../storage/identity-repo.js';
import { createFeedbackRepo, type FeedbackRepo } from '../storage/feedback-repo.js';
import { createDeploymentsRepo, type DeploymentsRepo } from '../storage/deployments-repo.js';
import type { AppConfig } from './config.js';
import type { Principal } from './principal.js';

/** Resolves a bearer secret that is not an API key (OAuth access tokens) to a principal. */
export type TokenResolver = (secret: string, now: number) => Principal | null;

/** Everything a handler may use: repositories and domain services, never the database handle. */
export interface Services {
  config: AppConfig;
  identity: IdentityRepo;
  feedback: FeedbackRepo;
  deployments: DeploymentsRepo;
  tokenResolvers: TokenResolver[];
  /** Cross-domain look-ups that later modules (error groups, replays) fill in. */
  lookups: {
    errorGroupExists(projectId: string, errorGroupId: string): boolean;
    replaySessionFor(projectId: string, replayId: string): string | null;
  };
}

export function createServices(db: Db, config: AppConfig): Services {
  return {
    config,
    identity: createIdentityRepo(db),
    feedback: createFeedbackRepo(db),
    deployments: createDeploymentsRepo(db),
    tokenResolvers: [],
    lookups: {
      errorGroupExists: () => false,
      replaySessionFor: () => null,
    },
  };
}
