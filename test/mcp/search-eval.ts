/**
 * Evaluation set for MCP `search`: natural-language tasks, as the spec words them and as developers
 * ask, each with the operationId it needs. Only tasks whose operationId is in the catalogue at test
 * time are evaluated (the catalogue grows issue by issue); every MCP-visible operation must have at
 * least one task (test/mcp/search.test.ts checks both).
 */
export interface SearchTask {
  task: string;
  operationId: string;
}

export const SEARCH_EVAL: readonly SearchTask[] = [
  // projects
  { task: 'which projects can this API key access', operationId: 'projects.list' },
  { task: 'list my projects', operationId: 'projects.list' },
  { task: 'what projects exist in my organization', operationId: 'projects.list' },
  { task: 'get the details of my project, its name and feature flags', operationId: 'projects.get' },
  { task: 'is product analytics enabled for this project', operationId: 'projects.get' },
  { task: 'show the current spike protection settings of the project', operationId: 'projects.get' },
  { task: 'set the spike protection threshold to 500 error events per minute', operationId: 'projects.updateSpikeProtection' },
  { task: 'turn off spike protection', operationId: 'projects.updateSpikeProtection' },
  { task: 'stop a flood of errors from eating our quota: drop events above a rate limit', operationId: 'projects.updateSpikeProtection' },

  // feedback
  { task: 'show me new user feedback', operationId: 'feedback.list' },
  { task: 'what are users complaining about this week', operationId: 'feedback.list' },
  { task: 'list user reports that mention checkout', operationId: 'feedback.list' },
  { task: 'page through all feedback with next_cursor', operationId: 'feedback.list' },
  { task: 'feedback submitted by ana@example.com', operationId: 'feedback.list' },
  { task: 'submit user feedback: the export button does nothing', operationId: 'feedback.create' },
  { task: 'capture a feedback record with contact email and url', operationId: 'feedback.create' },
  { task: 'send a bug report from a customer on behalf of the widget', operationId: 'feedback.create' },
  { task: 'open one feedback record by its id and see its session replay', operationId: 'feedback.get' },
  { task: 'get feedback details for feedback_id 3f2a', operationId: 'feedback.get' },
  { task: 'mark a feedback record as reviewed', operationId: 'feedback.update' },
  { task: 'archive user feedback we already handled', operationId: 'feedback.update' },
  { task: 'change the status of a feedback record', operationId: 'feedback.update' },

  // deployments
  { task: 'record a deployment from our CI pipeline', operationId: 'deployments.create' },
  { task: 'we just shipped version 1.4.2 of the api service to production', operationId: 'deployments.create' },
  { task: 'mark the deployment gh-run-4312 as ready', operationId: 'deployments.create' },
  { task: 'list recent deployments', operationId: 'deployments.list' },
  { task: 'what was deployed to production yesterday', operationId: 'deployments.list' },
  { task: 'show deploys of the checkout service with status failed', operationId: 'deployments.list' },

  // releases
  { task: 'list releases per service and environment', operationId: 'releases.list' },
  { task: 'which releases regressed compared with the previous release', operationId: 'releases.list' },
  { task: 'health of one release: error rate and p95 compared with the previous release', operationId: 'releases.get' },

  // errors
  { task: 'show unresolved errors in production', operationId: 'errors.list' },
  { task: 'what are the top bugs right now by event count', operationId: 'errors.list' },
  { task: 'list exceptions of the checkout service', operationId: 'errors.list' },
  { task: 'get one error group with its latest event and stack trace', operationId: 'errors.get' },
  { task: 'details of issue 8b1f including session replays', operationId: 'errors.get' },
  { task: 'resolve an error group', operationId: 'errors.update' },
  { task: 'assign this bug to a teammate and set priority high', operationId: 'errors.update' },
  { task: 'ignore the noisy exception', operationId: 'errors.update' },
  { task: 'merge duplicate error groups into one', operationId: 'errors.merge' },
  { task: 'unmerge a group that was merged by mistake', operationId: 'errors.unmerge' },
  { task: 'which traces did this error occur in', operationId: 'errors.listRelatedTraces' },
  { task: 'which commit caused this error, suspect commits', operationId: 'errors.listSuspectCommits' },
  { task: 'what deploy introduced this regression', operationId: 'errors.listSuspectCommits' },
  { task: 'run AI triage on an error group to find the probable cause', operationId: 'errors.createTriage' },
  { task: 'history of triage runs for an issue', operationId: 'errors.listTriageRuns' },

  // events
  { task: 'search error events with a field query like level:error release:1.2', operationId: 'events.search' },
  { task: 'find events whose message mentions timeout', operationId: 'events.search' },
  { task: 'how long do error events take to arrive, ingestion latency by source', operationId: 'events.latency' },

  // logs
  { task: 'search logs for "connection refused" in the api service', operationId: 'logs.search' },
  { task: 'show error level log lines from the last hour', operationId: 'logs.search' },
  { task: 'log volume over time by severity', operationId: 'logs.histogram' },
  { task: 'histogram of log counts per level', operationId: 'logs.histogram' },
  { task: 'common log patterns and top values of log attributes', operationId: 'logs.insights' },

  // metrics
  { task: 'which metrics does the checkout service send', operationId: 'metrics.list' },
  { task: 'find metric names containing http', operationId: 'metrics.list' },
  { task: 'p95 of http.server.duration over the last day as a time series', operationId: 'metrics.timeline' },
  { task: 'chart a metric over time with 5 minute granularity', operationId: 'metrics.timeline' },
  { task: 'inspect one metric: its attributes, temporality and summary', operationId: 'metrics.inspect' },

  // overview
  { task: 'give me an overview of the health of the project: log levels, notable logs and key metrics', operationId: 'observability.summary' },
  { task: 'observability summary for the api service in production', operationId: 'observability.summary' },

  // traces
  { task: 'list slow traces over 2 seconds', operationId: 'traces.list' },
  { task: 'find traces with status error for the checkout service', operationId: 'traces.list' },
  { task: 'slowest endpoints by p95 latency and error rate', operationId: 'traces.operations' },
  { task: 'show all spans of trace 4bf92f3577b34da6a3ce929d0e0e4736', operationId: 'traces.get' },
  { task: 'error groups correlated with one trace', operationId: 'traces.errors' },
  { task: 'service map: which services call which, dependencies', operationId: 'traces.serviceMap' },
  // monitors, incidents, status pages (issue 17)
  // run for months (issue 22)
  { task: 'how healthy is the server itself: database size, request counts, readiness', operationId: 'system.status' },
  { task: 'how long are logs and spans kept in this project', operationId: 'retention.get' },
  { task: 'keep logs for only 14 days in this project', operationId: 'retention.update' },
  { task: 'list uptime monitors that are down', operationId: 'monitors.list' },
  { task: 'which cron monitors do we have', operationId: 'monitors.list' },
  { task: 'get the configuration and state of one monitor', operationId: 'monitors.get' },
  { task: 'create an HTTP uptime monitor for https://api.example.com/health every 60 seconds', operationId: 'monitors.create' },
  { task: 'create a cron monitor for the nightly backup job with a crontab schedule', operationId: 'monitors.create' },
  { task: 'pause a monitor during maintenance', operationId: 'monitors.update' },
  { task: 'change the check interval and timeout of a monitor', operationId: 'monitors.update' },
  { task: 'delete a monitor', operationId: 'monitors.delete' },
  { task: 'show the check results of a monitor: latency, status codes, missed check-ins', operationId: 'monitors.listResults' },
  { task: 'list open incidents', operationId: 'incidents.list' },
  { task: 'get incident INC-12 with its timeline', operationId: 'incidents.get' },
  { task: 'open an incident by hand for delayed email delivery', operationId: 'incidents.create' },
  { task: 'resolve incident INC-3 and post a timeline message', operationId: 'incidents.update' },
  { task: 'list our status pages', operationId: 'statusPages.list' },
  { task: 'create a public status page with slug acme', operationId: 'statusPages.create' },
  { task: 'get a status page with its components', operationId: 'statusPages.get' },
  { task: 'make the status page public and set a custom domain', operationId: 'statusPages.update' },
  { task: 'delete a status page with its components and subscribers', operationId: 'statusPages.delete' },
  { task: 'list the components of a status page', operationId: 'statusPages.listComponents' },
  { task: 'add a group component to a status page', operationId: 'statusPages.createComponent' },
  { task: 'move a status page component into a group', operationId: 'statusPages.updateComponent' },
  { task: 'remove a component from the status page', operationId: 'statusPages.deleteComponent' },
  { task: 'link a monitor to a status page component by name', operationId: 'statusPages.linkMonitor' },
  { task: 'unlink the monitor from a status page component', operationId: 'statusPages.unlinkMonitor' },
  // AI agents
  { task: 'list LLM generations and tool calls of my agent that failed', operationId: 'agentObservations.list' },
  { task: 'find agent observations whose prompt mentions refund', operationId: 'agentObservations.list' },
  { task: 'show the prompt, output messages and attributes of one agent observation', operationId: 'agentObservations.get' },
  { task: 'telemetry quality coverage of agent observations: token usage, cost, system prompts', operationId: 'agentObservations.quality' },
  { task: 'list evaluation scores of agent outputs', operationId: 'agentScores.list' },
  { task: 'average score per evaluation name, categorical labels counts', operationId: 'agentScores.summary' },
  { task: 'AI usage summary: LLM cost, tokens, top models and providers', operationId: 'ai.stats' },
  { task: 'daily LLM cost and token usage series', operationId: 'ai.histogram' },
  { task: 'agent session tree: where did the time and money go in one conversation', operationId: 'ai.session' },
  { task: 'AI usage of one user: sessions and models', operationId: 'ai.user' },
  { task: 'hosted fixer dispatch counts by source and status', operationId: 'ai.fixStats' },
  { task: 'fixer dispatches and completions over time', operationId: 'ai.fixTimeline' },
  { task: 'is AI privacy mode on for this project', operationId: 'ai.getSettings' },
  { task: 'turn on privacy mode so prompts are not stored', operationId: 'ai.updateSettings' },

  // more ways developers ask (issue 11: the eval grows to at least 80 tasks)
  { task: 'what is the project id and name of my key', operationId: 'projects.get' },
  { task: 'enable spike protection at 1000 events per minute', operationId: 'projects.updateSpikeProtection' },
  { task: 'latest customer feedback about the checkout page', operationId: 'feedback.list' },
  { task: 'record user feedback that the dashboard is slow', operationId: 'feedback.create' },
  { task: 'set feedback status to archived', operationId: 'feedback.update' },
  { task: 'register a new deploy of the web service version 2.0.1', operationId: 'deployments.create' },
  { task: 'which deployments failed last week', operationId: 'deployments.list' },
  { task: 'compare release 1.4.2 with the previous release', operationId: 'releases.get' },
  { task: 'most frequent errors in the last 24 hours', operationId: 'errors.list' },
  { task: 'show the stack trace of error group WEB-2', operationId: 'errors.get' },
  { task: 'mark error group as resolved and assign it to me', operationId: 'errors.update' },
  { task: 'combine two error groups that are the same bug', operationId: 'errors.merge' },
  { task: 'split a merged error group back out', operationId: 'errors.unmerge' },
  { task: 'distributed traces where this exception happened', operationId: 'errors.listRelatedTraces' },
  { task: 'explain the probable root cause of this crash with AI', operationId: 'errors.createTriage' },
  { task: 'previous AI triage results for this error group', operationId: 'errors.listTriageRuns' },
  { task: 'events with release:2.0 and environment:staging', operationId: 'events.search' },
  { task: 'grep logs for timeout errors', operationId: 'logs.search' },
  { task: 'chart log volume per hour for the worker service', operationId: 'logs.histogram' },
  { task: 'what attribute values are most common in error logs', operationId: 'logs.insights' },
  { task: 'p99 latency metric over time split by route', operationId: 'metrics.timeline' },
  { task: 'list all metric names', operationId: 'metrics.list' },
  { task: 'how is the project doing right now', operationId: 'observability.summary' },
  { task: 'spans of one trace as a waterfall', operationId: 'traces.get' },
  { task: 'which endpoints are slowest', operationId: 'traces.operations' },

  // product analytics and revenue
  { task: 'is product analytics turned on, how many capture events and persons', operationId: 'analytics.status' },
  { task: 'how much revenue did we make this month, net of refunds and disputes', operationId: 'revenue.overview' },
  { task: 'gross revenue by currency and by plan compared with the previous period', operationId: 'revenue.overview' },
  { task: 'monthly recurring revenue movements: new, expansion, churn', operationId: 'revenue.mrr' },
  { task: 'what is our MRR and how much churned', operationId: 'revenue.mrr' },
  { task: 'how much revenue is at risk because of this error group', operationId: 'revenue.impact' },
  { task: 'which marketing source or utm campaign brings the most revenue', operationId: 'revenue.attribution' },
  { task: 'list ledger rows: payments, refunds and disputes', operationId: 'revenue.listEvents' },
  { task: 'send payment and refund events to the revenue ledger', operationId: 'revenue.sendEvents' },
  { task: 'record subscription state changes for MRR', operationId: 'revenue.sendSubscriptions' },
  { task: 'which reporting currency do revenue reads use', operationId: 'revenue.getSettings' },
  { task: 'set the reporting currency to EUR', operationId: 'revenue.updateSettings' },
  { task: 'is the payment provider connected, webhook and backfill progress', operationId: 'revenue.status' },

  // remote access (gated preview)
  { task: 'which remote hosts can I run diagnostics on', operationId: 'remoteAccess.listTargets' },
  { task: 'list enabled remote access targets', operationId: 'remoteAccess.listTargets' },
  { task: 'check whether a disk usage request on a remote target would be allowed by policy', operationId: 'remoteAccess.previewRequest' },
  { task: 'preview a typed remote request without creating it', operationId: 'remoteAccess.previewRequest' },
  { task: 'ask to run host.disk_usage on the production web server', operationId: 'remoteAccess.createRequest' },
  { task: 'create a remote request to tail the journal of nginx.service', operationId: 'remoteAccess.createRequest' },
  { task: 'read the redacted output of my remote request', operationId: 'remoteAccess.getRequest' },
  { task: 'was my remote request approved and did it run', operationId: 'remoteAccess.getRequest' },
  { task: 'cancel a pending remote request', operationId: 'remoteAccess.cancelRequest' },
  { task: 'which remote requests are waiting for my approval', operationId: 'remoteAccess.listApprovals' },
  { task: 'list remote executions and their state', operationId: 'remoteAccess.listExecutions' },
  { task: 'remote access audit log of approvals and reveals', operationId: 'remoteAccess.listAudit' },
];
