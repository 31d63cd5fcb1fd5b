"""Token relevance of a clinical note for a task description s_T (docs/METHOD.md, section Relevance).

Which prediction is explained (`explain`); "prompt" = one forward and one backward pass:
* "next" (default, the authors' reference code): the prompt is teacher-forced up to AND
  including the MIDDLE token of s_T (index (n - 1) // 2 of s_T's tokens, the reference's
  `int((start + end) / 2)`), and the largest logit at that last position is explained.
  1 prompt per pair.
* "max": teacher-forced up to just BEFORE the middle token; largest logit explained. For a
  1- or 2-token s_T the input holds none of s_T, and the top logit is the same whatever s_T
  is: every short task gets the SAME map. 1 prompt per pair.
* "target": as "max", but the logit of the middle token itself is explained. The input is the
  same for short tasks, but the explained logit differs, so the map is task-dependent, if
  close (SmolLM2: maps of different tasks on one note correlate 0.60-0.70; 0.59 on the
  synthetic notes of `python -m benchmarks relevance --variants`). 1 prompt per pair.
* "span": the prompt is teacher-forced through s_T (up to its last token, excluded); at each
  position that predicts a token of s_T the logit of THAT token is taken, and their SUM is
  back-propagated once. By linearity of the gradient (and of lxt's modified gradients),
  and because a causal model's logit at a position depends on the tokens up to it only, the
  map is exactly the sum of the "target" maps of every s_T token (each teacher-forced up to
  just before its own token). One backward: the cost of 1 prompt per pair (the prompt is
  longer by the s_T tokens; `logits_to_keep` = the number of s_T tokens).
* "contrastive": span(s_T) / n(s_T) - span(neutral) / n(neutral), raw, on the same note and
  template; n = the number of tokens of each description, so a long s_T does not outweigh a
  short neutral text by its length alone. Then normalised as usual ("clip" keeps only the
  tokens that support s_T more than the neutral text; "abs" also counts the opposite). The
  neutral description (`RelevanceConfig.neutral`) defaults to the template's: en "the
  patient", it "il paziente", es "el paciente"; a custom template needs one given. Cost:
  2 prompts per pair at most: the neutral prompt depends on the note only, so within one
  `compute_relevance` call it is computed once per distinct note and shared by its tasks
  (n pairs of one note: n + 1 prompts).
Only note tokens are scored, for every variant (template text, s_T and special tokens never).
`RelevanceResult.target_token` is the explained token: the middle token of s_T, or all of
s_T for "span"/"contrastive"; `predicted_token` is the top-logit token at each explained
position (teacher-forced, so for "span" it is what the model would write token by token).

Methods (ml.relevance.methods: one module and one registry entry each):
* attnlrp     AttnLRP through lxt's efficient mode (ml.lrp patches the family's module):
              relevance = (input embedding x its gradient) summed over the hidden dimension.
* grad_input  the same product without lxt patches (plain gradient x input).
* attention   attention from the explained position to each token, averaged over heads and
              layers (the paper's comparison; runs the model with eager attention); for
              "span"/"contrastive" the rows of the explained positions are summed.

Only note tokens are returned, with character offsets into the ORIGINAL note text.

Configuration: `RelevanceConfig` (frozen) holds everything that changes a map, validated, with a
short stable `key`; a relevance job stores it and every map its key. `compute_relevance` takes
one, or its fields as keywords.

Speed: parameters frozen (gradients only for the input embeddings), `logits_to_keep` = the
explained positions only (1, or s_T's tokens), prompts sorted by length and batched with LEFT
padding plus explicit position ids, so every prompt sees exactly the positions and keys it
would see alone and its explained positions are the batch's last columns. On CUDA a batch that
runs out of memory is halved and retried.
Shared prefix (`share_prefix`, default `shares_prefix_by_default`: on the CPU, not on CUDA):
the prompts of one note begin alike (the note comes before s_T), so for the gradient methods a
note's prompts run their common prefix forward once and only their tails, and backward, per
prompt (ml.relevance.sharing); each
prompt's map stays its own, equal to a full pass to float rounding. Measured on SmolLM2-135M
(bf16, 2 CPU threads, ~340-token prompts, 9 tasks a note): 1.9-2.2x the prompts/s of the
same path without it (`python -m benchmarks relevance`, two runs on a shared machine). On one H200
the plain batched path was 2.6-4.1x faster than the shared one, so CUDA does not share by default.

The package, in the order a computation needs it:
* config    RelevanceConfig, its key, RelevanceResult, ConfigError (no torch)
* encoding  the prompt of one pair and its note tokens (encode_pair)
* methods   the registry of methods; `run_order` for several in one process
* targets   what a batch explains, and gradient x input
* compute   compute_relevance: batching, shared prefixes, normalisation
* sharing   one forward pass of a note's common prefix for its prompts
"""

from ml.relevance.compute import (
    compute_relevance,
    normalise_scores,
    shares_prefix_by_default,
)
from ml.relevance.config import (
    DTYPES,
    EXPLAIN,
    IMPORTED,
    KEY_DIGITS,
    METHODS,
    NORMALISE,
    TRUNCATE,
    ConfigError,
    RelevanceConfig,
    RelevanceResult,
    config_key,
    default_config_key,
)
from ml.relevance.encoding import TEMPLATE_ROOM, EncodedPair, PromptError, context_limit, encode_pair
from ml.relevance.targets import ExplainedTargets, input_relevance

__all__ = [
    "DTYPES",
    "EXPLAIN",
    "IMPORTED",
    "KEY_DIGITS",
    "METHODS",
    "NORMALISE",
    "TEMPLATE_ROOM",
    "TRUNCATE",
    "ConfigError",
    "EncodedPair",
    "ExplainedTargets",
    "PromptError",
    "RelevanceConfig",
    "RelevanceResult",
    "context_limit",
    "compute_relevance",
    "config_key",
    "default_config_key",
    "encode_pair",
    "input_relevance",
    "normalise_scores",
    "shares_prefix_by_default",
]
