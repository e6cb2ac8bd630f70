"""The ``wiki.toml`` that ``wiki init`` writes on a new wiki branch: every setting with its
default and a comment (parsed by :func:`wiki.config.parse_config`)."""

TEMPLATE = """\
# wiki.toml: settings shared by everyone who uses this wiki (kept on the wiki branch).
# Per-user settings (model, keys) come from the environment or git config instead.
[wiki]
version = 1

[ingest]
# Sources longer than this many words are split into one entry per `##` section.
split_words = 500
min_section_words = 40
max_bytes = 2000000
max_lines = 50000
extensions = [".md", ".markdown", ".txt"]
tag_fields = ["tags", "keywords"]
alias_fields = ["aliases"]

# Source folder prefix -> wiki folder; the longest matching prefix wins.
[ingest.categories]
# "pages/" = ""

[sources]
# A change confined to a source's frontmatter or whitespace is not a content change.
ignore_frontmatter = true
ignore_whitespace = true
# Seconds an http(s) source may take to answer before lint reports it unreachable.
timeout = 10.0
# Where `git:` sources are read: "" = the work tree (as `git status` sees it), or a ref.
git_ref = ""

[review]
approvals_required = 1
allow_self_approval = false
# true: every proposal commit must carry a signature the approver's git trusts
# (gpg.ssh.allowedSignersFile or GPG), by a key other than the approver's, and approvals
# are signed; see docs/review.md, "Approver identity and signatures".
require_signatures = false

[search]
# BM25 column weights: title, aliases, tags, summary, body.
weights = [8.0, 6.0, 3.0, 3.0, 1.0]
# Evidence gap (`wiki ask` says "the wiki does not say"): with lexical legs only, when the
# top hit covers less than gap_threshold of the question's (IDF-weighted) words; with the
# vector leg, when coverage < gap_coverage and the best cosine < gap_cosine.
gap_threshold = 0.4
gap_coverage = 0.54
gap_cosine = 0.45
# Once a sentence is picked, its answer score (its cosine + half the word coverage): below
# gap_score an evidence gap; below hedge_score the answer is shown as "closest evidence,
# may not answer" with the reason (`confidence: "hedged"` in --json; still exit 0).
gap_score = 0.52
hedge_score = 0.78
# Retrieval legs, each offering its top `window` hits, fused by "zscore" (weighted sum of
# each leg's standardised scores) or "rrf" (sum of w / (rrf_k + rank)).
legs = ["alias", "bm25", "vector"]
fusion = "zscore"
rrf_k = 60
window = 50
# Routing a question to its category folder(s) (`--route`): off unless measured to help
# (evals/results/routing.md). "boost" adds a `route` leg; "filter" searches only the
# routed folders (every folder within route_margin cosine points of the best, at most 3).
route = false
route_mode = "boost"
route_margin = 0.02
route_weight = 1.0

[search.leg_weights]
alias = 1.0
bm25 = 1.0
vector = 0.75

# How long an entry of each type stays in default answers ("90d", "12w", "1y", "never"),
# counted from its `updated` (or `created`) time; `valid_until` overrides it.
[lifetimes]
fact = "never"
decision = "never"
procedure = "never"
note = "never"
episode = "90d"

# Post-fusion re-scoring and relation graph expansion: off unless measured to help
# (evals/results/ablation-memory.md).
[memory]
rescore = false
recency = 0.0
importance = 0.0
confidence = 0.0
graph = false
graph_weight = 0.3
graph_decay = 0.5
graph_depth = 2
graph_seeds = 5
graph_relations = ["depends_on", "refines", "derived_from", "related_to"]

[memory.half_life]
episode = "30d"
note = "365d"
fact = "365d"
procedure = "365d"
decision = "never"
"""
