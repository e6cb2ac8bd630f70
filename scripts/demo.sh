#!/usr/bin/env bash
# Build a wiki from a real corpus in a throw-away repository, land it through review
# (a second identity approves), and ask three questions. Called by `make demo`.
#   DEMO_CORPUS unset          -> this project's README.md and docs/ (not the design log)
#   DEMO_CORPUS=<handbook dir> -> the 18F handbook bundle at its checkpoint commit
#   DEMO_CORPUS=<folder>       -> any folder of markdown
#   DEMO_DIR=<new folder>      -> keep the demo repository there (for `wiki serve`, more
#                                 questions); by default it is a temp folder, removed at exit
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
WIKI="${WIKI:-$here/.venv/bin/wiki}"
if [ -n "${DEMO_DIR:-}" ]; then
  if [ -e "$DEMO_DIR" ] && [ -n "$(ls -A "$DEMO_DIR")" ]; then
    echo "demo: DEMO_DIR=$DEMO_DIR exists and is not empty; give a new folder" >&2
    exit 2
  fi
  mkdir -p "$DEMO_DIR"
  work="$(cd "$DEMO_DIR" && pwd)"
else
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
fi
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME="Ada Author" GIT_AUTHOR_EMAIL="ada@example.com"
export GIT_COMMITTER_NAME="Ada Author" GIT_COMMITTER_EMAIL="ada@example.com"

corpus="${DEMO_CORPUS:-}"
if [ -n "$corpus" ] && ls "$corpus"/*.bundle >/dev/null 2>&1; then
  bundle="$(ls "$corpus"/*.bundle | head -n 1)"
  checkpoint="$(grep -o 'checkpoint commit `[0-9a-f]\{40\}`' "$corpus/questions-dev/README.md" \
                | grep -o '[0-9a-f]\{40\}')"
  echo "== cloning $(basename "$bundle") at checkpoint ${checkpoint:0:12}" >&2
  git clone --quiet "$bundle" "$work/repo"
  git -C "$work/repo" checkout --quiet "$checkpoint"
  sources=("$work/repo/pages")
  questions=("how do I file a travel voucher?"
             "what is tock line #670 for?"
             "who do I send OPM Form 630 to when applying for donated leave?")
elif [ -n "$corpus" ]; then
  git init --quiet "$work/repo"
  sources=("$(cd "$corpus" && pwd)")
  questions=("${DEMO_Q1:-how do I get started?}" "${DEMO_Q2:-who do I ask for help?}"
             "${DEMO_Q3:-where is the documentation?}")
else
  git init --quiet "$work/repo"
  # the user-facing docs: docs/decisions.md is the contributors' design log (history, and
  # every option considered), not what a user asks about
  sources=("$here/README.md")
  for doc in "$here"/docs/*.md; do
    [ "$(basename "$doc")" = decisions.md ] || sources+=("$doc")
  done
  questions=("how does a proposal get approved?"
             "what exit code does an evidence gap return?"
             "where does the derived state live?")
fi

cd "$work/repo"
echo "== wiki init" >&2
"$WIKI" init >/dev/null
echo "== wiki ingest ${sources[*]}" >&2
start=$(date +%s.%N)
proposal="$("$WIKI" ingest "${sources[@]}")"
# This project's docs ingest without review flags. Another corpus may hold text the review
# check flags (a page quoting a prompt injection): the demo shows the flags, and its
# reviewer lands them with an explicit, recorded override, as a person would after reading.
# The reviewer reads `wiki diff` and approves with its review hash (--expect): the approval
# is refused if the proposal changed after that.
review="$("$WIKI" diff "$proposal" --stat 2>&1)"
hash="$(printf '%s\n' "$review" | sed -n 's/.*review hash //p' | head -n 1)"
flagged="$(printf '%s\n' "$review" | grep '^flagged:' || true)"
override=()
if [ -n "$flagged" ]; then
  echo "$flagged" >&2
  override=(--override-flags "demo: flagged pages of the demo corpus, read by the reviewer")
fi
echo "== wiki approve $proposal --expect ${hash:0:12}...${flagged:+ --override-flags} (as a second person)" >&2
GIT_AUTHOR_NAME="Rita Reviewer" GIT_AUTHOR_EMAIL="rita@example.com" \
  GIT_COMMITTER_NAME="Rita Reviewer" GIT_COMMITTER_EMAIL="rita@example.com" \
  "$WIKI" approve "$proposal" --expect "$hash" ${override[@]+"${override[@]}"} >/dev/null
"$WIKI" index >/dev/null
end=$(date +%s.%N)
echo "== ingest + review + index: $(python3 -c "print(f'{$end - $start:.1f}')") s" >&2
"$WIKI" status
for q in "${questions[@]}"; do
  echo
  echo "\$ wiki ask \"$q\""
  "$WIKI" ask "$q" || echo "(exit $?: evidence gap)"
done
if [ -n "${DEMO_DIR:-}" ]; then
  echo
  echo "the demo repository is kept in $work/repo (its wiki branch: wiki)" >&2
fi
