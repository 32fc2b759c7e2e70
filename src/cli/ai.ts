/**
 * CLI behaviour of the AI operations (spec, "Agent observations": the quality gate and the export
 * formats):
 *
 *   sightline agent-observations quality --threshold 90 --min-observations 100 [--min-scored-observations N]
 *     [--min-scores N] [--require-privacy-mode] [--max-content-bearing-percent P] [--allow-empty]
 *   sightline agent-observations export --all --format jsonl | openai-chat
 *
 * The gate prints its JSON report (`{ passed, failures, report }`) on stdout, then exits 0 when it
 * passes and 3 when it fails (1 stays "the API answered an error", 2 "bad command line"). With any
 * gate option an empty window fails unless --allow-empty, and invalid token totals always fail.
 */
import type { CliExtension } from './commands.js';
import { evaluateGate, type GateOptions, type QualityReportLike } from '../domain/ai/quality.js';
import { openAiChatLine } from '../domain/ai/chat-export.js';

export const EXIT_GATE_FAILED = 3;

const GATE_FLAGS = {
  threshold: { kind: 'number', description: 'Gate: fail when an applicable coverage dimension is below this percentage.' },
  minObservations: { kind: 'number', description: 'Gate: fail with fewer observations in the window.' },
  minScoredObservations: { kind: 'number', description: 'Gate: fail with fewer scored observations.' },
  minScores: { kind: 'number', description: 'Gate: fail with fewer scores.' },
  requirePrivacyMode: { kind: 'boolean', description: 'Gate: fail unless every observation is in privacy mode.' },
  maxContentBearingPercent: { kind: 'number', description: 'Gate: fail when more than this percentage of observations bear content.' },
  allowEmpty: { kind: 'boolean', description: 'Gate: let an empty window pass (it fails by default).' },
  gate: { kind: 'boolean', description: 'Run the gate with only its default checks (empty window, invalid token totals).' },
} as const;

const qualityGate: CliExtension = {
  flags: GATE_FLAGS,
  render(result, { flags, io }) {
    const active = Object.keys(GATE_FLAGS).some((k) => flags[k] !== undefined && flags[k] !== false);
    if (!active) return undefined;
    const options: GateOptions = {
      threshold: flags.threshold as number | undefined,
      min_observations: flags.minObservations as number | undefined,
      min_scored_observations: flags.minScoredObservations as number | undefined,
      min_scores: flags.minScores as number | undefined,
      require_privacy_mode: flags.requirePrivacyMode === true,
      max_content_bearing_percent: flags.maxContentBearingPercent as number | undefined,
      allow_empty: flags.allowEmpty === true,
    };
    const gate = evaluateGate(result as QualityReportLike, options);
    io.stdout.write(JSON.stringify({ passed: gate.passed, failures: gate.failures, options, report: result }, null, 2) + '\n');
    if (!gate.passed) io.stderr.write(`sightline: quality gate failed: ${gate.failures.join('; ')}\n`);
    return gate.passed ? 0 : EXIT_GATE_FAILED;
  },
};

const exportFormats: CliExtension = {
  flags: { format: { kind: 'string', description: 'Write rows as JSON lines: `jsonl` (one exported generation per line) or `openai-chat` (OpenAI chat fine-tuning lines: {"messages":[…]}, tool calls included).' } },
  render(result, { flags, io }) {
    const format = flags.format as string | undefined;
    if (format === undefined) return undefined;
    if (format !== 'jsonl' && format !== 'openai-chat') {
      io.stderr.write(`sightline: --format must be jsonl or openai-chat (got ${JSON.stringify(format)}).\n`);
      return 2;
    }
    const page = (result ?? {}) as { data?: Record<string, unknown>[]; has_more?: boolean; offset?: number; limit?: number };
    let skipped = 0;
    for (const row of page.data ?? []) {
      if (format === 'jsonl') io.stdout.write(JSON.stringify(row) + '\n');
      else {
        const line = openAiChatLine(row as { input_json: unknown; output_json: unknown });
        if (line) io.stdout.write(JSON.stringify(line) + '\n');
        else skipped++;
      }
    }
    if (skipped) io.stderr.write(`skipped ${skipped} generation(s) without a usable conversation (withheld content or no assistant reply)\n`);
    if (page.has_more) io.stderr.write(`more rows: add --all, or --offset ${(page.offset ?? 0) + (page.limit ?? 0)}\n`);
    return 0;
  },
};

export const AI_CLI_EXTENSIONS: Record<string, CliExtension> = {
  'agentObservations.quality': qualityGate,
  'agentObservations.export': exportFormats,
};
