#!/usr/bin/env bash
# Seal a repository's history at BASE: afterwards no ref, tag, remote, stash, reflog entry or object
# reachable from anything exposes a commit that is not BASE or one of its ancestors.
# usage (in the repo): seal_git.sh [BASE]   (default: HEAD)
set -euo pipefail
base=$(git rev-parse --verify "${1:-HEAD}^{commit}")
git checkout -q --force --detach "$base"
git for-each-ref --format='%(refname)' | while read -r ref; do git update-ref -d "$ref"; done
for remote in $(git remote); do git remote remove "$remote"; done
git checkout -q -B main "$base"
git stash clear
rm -f .git/ORIG_HEAD .git/FETCH_HEAD .git/MERGE_HEAD .git/CHERRY_PICK_HEAD .git/packed-refs.lock
git reflog expire --expire=now --all
rm -rf .git/logs .git/refs/original .git/refs/remotes .git/refs/tags
git -c gc.reflogExpire=now -c gc.reflogExpireUnreachable=now -c gc.pruneExpire=now gc --quiet --prune=now
# the proof, not a hope: every object reachable from any ref is an ancestor of BASE
for c in $(git rev-list --all); do
  git merge-base --is-ancestor "$c" "$base" || { echo "seal failed: $c is not an ancestor of $base" >&2; exit 3; }
done
git count-objects -v | grep -q '^count: 0' || git prune --expire=now
# git's inert templates (never run: .sample): every sandbox copies the tree, .git included
rm -f .git/hooks/*.sample
