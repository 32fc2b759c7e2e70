/**
 * Why this file: draft pull requests from approved patch outputs go through one small interface with
 * two implementations: GitHub (REST API via fetch, token SIGHTLINE_GITHUB_TOKEN) and a local git
 * repository on disk (a branch and a commit made with the `git` CLI; what the tests use).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface PullRequestInput {
  branch: string;
  title: string;
  body: string;
  /** Unified diff, applied with `git apply` semantics. */
  diff: string;
  base?: string;
}

export interface PullRequestResult {
  provider: 'local' | 'github';
  branch: string;
  commit: string | null;
  url: string | null;
  number: number | null;
}

export interface GitProvider {
  createDraftPr(pr: PullRequestInput): Promise<PullRequestResult>;
}

export class GitProviderError extends Error {}

/** A branch and a commit in a repository on disk; the working tree and current branch are left as they were. */
export function localGitProvider(path: string): GitProvider {
  const git = async (args: string[], cwd = path) => (await run('git', args, { cwd, maxBuffer: 16 * 1024 * 1024 })).stdout.trim();
  return {
    async createDraftPr(pr) {
      const tmp = mkdtempSync(join(tmpdir(), 'sightline-pr-'));
      const wt = join(tmp, 'tree');
      try {
        const base = pr.base ?? (await git(['rev-parse', '--abbrev-ref', 'HEAD']));
        // A separate worktree, so a checkout somebody works in is never touched.
        await git(['worktree', 'add', '-b', pr.branch, wt, base]);
        try {
          const patch = join(tmp, 'change.patch');
          writeFileSync(patch, pr.diff.endsWith('\n') ? pr.diff : pr.diff + '\n');
          try {
            await git(['apply', '--index', patch], wt);
          } catch (e) {
            throw new GitProviderError(`the patch does not apply to ${base}: ${String((e as { stderr?: string }).stderr ?? e).trim().slice(0, 300)}`);
          }
          await git(['-c', 'user.name=Sightline automation', '-c', 'user.email=automation@sightline.local', 'commit', '-m', `${pr.title}\n\n${pr.body}`], wt);
          const commit = await git(['rev-parse', 'HEAD'], wt);
          return { provider: 'local', branch: pr.branch, commit, url: null, number: null };
        } finally {
          await git(['worktree', 'remove', '--force', wt]).catch(() => undefined);
        }
      } catch (e) {
        if (e instanceof GitProviderError) throw e;
        throw new GitProviderError(`git failed: ${String((e as { stderr?: string }).stderr ?? (e as Error).message).trim().slice(0, 300)}`);
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    },
  };
}

/**
 * GitHub: the patch is applied file by file through the contents API is not possible for arbitrary
 * diffs, so the branch is created from base and the diff is committed as a git tree built from the
 * patched files (only whole-file additions and replacements are supported: `+++ b/<path>` hunks
 * whose new content is fully present). Other diffs are refused with a clear error.
 */
export function githubProvider(repo: string, token: string, apiBase = 'https://api.github.com'): GitProvider {
  const gh = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${apiBase}/repos/${repo}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, accept: 'application/vnd.github+json', 'content-type': 'application/json', 'user-agent': 'sightline' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json().catch(() => ({}))) as Record<string, any>;
    if (!res.ok) throw new GitProviderError(`GitHub ${method} ${path}: ${res.status} ${String(json.message ?? '')}`.trim());
    return json;
  };
  return {
    async createDraftPr(pr) {
      const files = newFilesFromDiff(pr.diff);
      const base = pr.base ?? ((await gh('GET', ''))!.default_branch as string);
      const ref = await gh('GET', `/git/ref/heads/${encodeURIComponent(base)}`);
      const baseSha = ref.object.sha as string;
      const baseCommit = await gh('GET', `/git/commits/${baseSha}`);
      const tree = await gh('POST', '/git/trees', {
        base_tree: baseCommit.tree.sha,
        tree: files.map((f) => (f.content === null ? { path: f.path, mode: '100644', type: 'blob', sha: null } : { path: f.path, mode: '100644', type: 'blob', content: f.content })),
      });
      const commit = await gh('POST', '/git/commits', { message: `${pr.title}\n\n${pr.body}`, tree: tree.sha, parents: [baseSha] });
      await gh('POST', '/git/refs', { ref: `refs/heads/${pr.branch}`, sha: commit.sha });
      const p = await gh('POST', '/pulls', { title: pr.title, body: pr.body, head: pr.branch, base, draft: true });
      return { provider: 'github', branch: pr.branch, commit: commit.sha as string, url: p.html_url as string, number: p.number as number };
    },
  };
}

/** Whole-file contents of a diff whose hunks create or delete files (what GitHub's tree API can take). */
export function newFilesFromDiff(diff: string): { path: string; content: string | null }[] {
  const out: { path: string; content: string | null }[] = [];
  const parts = diff.split(/^diff --git /m).filter((p) => p.trim());
  for (const p of parts) {
    const newPath = /^\+\+\+ (?:b\/)?(.+)$/m.exec(p)?.[1];
    const oldPath = /^--- (?:a\/)?(.+)$/m.exec(p)?.[1];
    if (newPath === '/dev/null' && oldPath) {
      out.push({ path: oldPath, content: null });
      continue;
    }
    if (!newPath || oldPath !== '/dev/null') {
      throw new GitProviderError(`the GitHub provider takes diffs that add or delete whole files; \`${newPath ?? '?'}\` edits an existing file (use a local repository, or send the whole file as a new-file diff)`);
    }
    const lines = p.split('\n').filter((l) => l.startsWith('+') && !l.startsWith('+++'));
    out.push({ path: newPath, content: lines.map((l) => l.slice(1)).join('\n') + '\n' });
  }
  return out;
}
