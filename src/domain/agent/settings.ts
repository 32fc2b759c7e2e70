/**
 * Why this file: the agent's settings as the API shows them (spec, "In-project agent": values of
 * `proactive_alerts`, `pr_review`, `auto_fix`, `reply_style`, `daily_alert_cap`, `alert_channel_id`),
 * their defaults, validation of a partial update, and the memory `rule` phrasings that change a
 * setting ("only page me for sev1" → `proactive_alerts: sev1_only`). Pure: no storage.
 */

export const PROACTIVE_ALERTS = ['all', 'important', 'sev1_only', 'off'] as const;
export const PR_REVIEW = ['comment_on_risk', 'off'] as const;
export const AUTO_FIX = ['project_policy', 'off'] as const;
export const REPLY_STYLE = ['concise', 'detailed'] as const;
export const MAX_DAILY_ALERT_CAP = 50;

export interface AgentSettingsValues {
  proactive_alerts: (typeof PROACTIVE_ALERTS)[number];
  pr_review: (typeof PR_REVIEW)[number];
  auto_fix: (typeof AUTO_FIX)[number];
  reply_style: (typeof REPLY_STYLE)[number];
  daily_alert_cap: number;
  alert_channel_id: string | null;
}

export const SETTING_KEYS = ['proactive_alerts', 'pr_review', 'auto_fix', 'reply_style', 'daily_alert_cap', 'alert_channel_id'] as const;
export type SettingKey = (typeof SETTING_KEYS)[number];

export const DEFAULT_SETTINGS: AgentSettingsValues = {
  proactive_alerts: 'important',
  pr_review: 'comment_on_risk',
  auto_fix: 'off',
  reply_style: 'concise',
  daily_alert_cap: 10,
  alert_channel_id: null,
};

/** Why a value is not valid for a setting, or null when it is. `channelExists` checks alert_channel_id. */
export function invalidSetting(key: SettingKey, value: unknown, channelExists: (id: string) => boolean): string | null {
  const oneOf = (list: readonly string[]) => (typeof value === 'string' && list.includes(value) ? null : `must be one of ${list.map((v) => `\`${v}\``).join(', ')}`);
  switch (key) {
    case 'proactive_alerts':
      return oneOf(PROACTIVE_ALERTS);
    case 'pr_review':
      return oneOf(PR_REVIEW);
    case 'auto_fix':
      return oneOf(AUTO_FIX);
    case 'reply_style':
      return oneOf(REPLY_STYLE);
    case 'daily_alert_cap':
      return Number.isInteger(value) && (value as number) >= 0 && (value as number) <= MAX_DAILY_ALERT_CAP ? null : `must be an integer from 0 to ${MAX_DAILY_ALERT_CAP}`;
    case 'alert_channel_id':
      if (value === null) return null;
      return typeof value === 'string' && channelExists(value) ? null : 'must be the id of a channel of this project (agent.listChannels), or null for the first one';
  }
}

/**
 * The phrasings a memory `rule` may use to change a setting (documented in the README, "In-project
 * agent"). Matched case-insensitively anywhere in the rule; the first match per setting wins.
 */
export const RULE_PHRASINGS: { setting: SettingKey; pattern: RegExp; value: (m: RegExpMatchArray) => unknown; example: string }[] = [
  { setting: 'proactive_alerts', pattern: /\b(only|just)\b.{0,30}\b(page|alert|notify|ping)\b.{0,20}\b(sev ?1|sev-1|severity ?1|critical)\b|\b(sev ?1|sev-1|critical)(\s+alerts?)?\s+only\b/i, value: () => 'sev1_only', example: 'only page me for sev1' },
  { setting: 'proactive_alerts', pattern: /\b(only|just)\b.{0,30}\b(important|high[- ]severity|serious)\b/i, value: () => 'important', example: 'only alert me about important issues' },
  { setting: 'proactive_alerts', pattern: /\b(stop|don'?t|do not|never|mute|turn off|disable)\b.{0,20}\b(alerts?|alerting|pag(e|ing)|notif(y|ications?))\b|\bno (alerts|pages|paging|notifications)\b/i, value: () => 'off', example: 'stop alerting me' },
  { setting: 'proactive_alerts', pattern: /\b(alert|page|notify)\b.{0,20}\b(about |on |for )?(everything|every (issue|error|signal)|all (issues|errors|signals))\b/i, value: () => 'all', example: 'alert me about everything' },
  {
    setting: 'daily_alert_cap',
    pattern: /\b(at most|no more than|max(imum)?( of)?|up to)\s+(\d{1,2})\s+(alerts?|pages?|notifications?)\s+(a|per|each)\s+day\b/i,
    value: (m) => Number(m[4]),
    example: 'at most 5 alerts per day',
  },
  { setting: 'reply_style', pattern: /\b(be (brief|concise|short)|keep (replies|answers) (short|brief)|short (replies|answers))\b/i, value: () => 'concise', example: 'keep replies short' },
  { setting: 'reply_style', pattern: /\b(be (detailed|thorough)|detailed (replies|answers)|more detail)\b/i, value: () => 'detailed', example: 'give detailed answers' },
  { setting: 'pr_review', pattern: /\b(don'?t|do not|never|stop|no)\b.{0,20}\b(review|comment on)\b.{0,20}\b(pull requests?|prs?)\b/i, value: () => 'off', example: "don't review pull requests" },
  { setting: 'pr_review', pattern: /\b(review|comment on)\b.{0,20}\b(risky )?(pull requests?|prs?)\b/i, value: () => 'comment_on_risk', example: 'comment on risky pull requests' },
  { setting: 'auto_fix', pattern: /\b(never|don'?t|do not|no)\b.{0,20}\b(auto[- ]?fix|fix (anything|things|issues)? ?automatically)\b/i, value: () => 'off', example: 'never auto-fix' },
];

/** Settings a rule's text changes (only valid values), or null when it names none. */
export function settingsFromRule(text: string): Partial<AgentSettingsValues> | null {
  const out: Record<string, unknown> = {};
  for (const p of RULE_PHRASINGS) {
    if (p.setting in out) continue;
    const m = text.match(p.pattern);
    if (!m) continue;
    const v = p.value(m);
    if (invalidSetting(p.setting, v, () => false) === null) out[p.setting] = v;
  }
  return Object.keys(out).length ? (out as Partial<AgentSettingsValues>) : null;
}
