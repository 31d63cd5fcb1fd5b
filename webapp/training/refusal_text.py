"""ml.training's refusals, shown in the reader's language wherever they reach a page: a launch whose
settings the trainer's configs refuse (webapp.training.configs) and a failed run's error and last
log line (webapp.training.log_text, whose table includes this one).

ml knows nothing of Django: it raises English, one template of ml.training.refusals with its values.
The templates are listed here again, as ml writes them, with gettext_noop so that makemessages puts
them in the catalogs (a test checks this list against ml.training.refusals.TEMPLATES); a refusal is
recognised by its template (webapp.lib.known_text) and shown translated with its values as stored:
settings as the config spells them, ids, labels, counts, sizes and folders never change. A text no
template matches (an old row, an exception's own words) is shown as stored.
"""

from functools import cache

from django.utils import translation
from django.utils.translation import gettext_noop

from webapp.lib.known_text import KnownTexts

# ml.training.refusals.TEMPLATES, in its order (a template that ends in a value after one that
# says more: "must be > 0, got ..." before "must be > 0")
REFUSALS = (
    gettext_noop("unknown %(config)s key(s): %(unknown)s; known keys: %(known)s"),
    gettext_noop("%(setting)s must be one of %(choices)s, got %(value)s"),
    gettext_noop("%(setting)s must be > 0, got %(value)s"),
    gettext_noop("%(setting)s must be > 0"),
    gettext_noop("%(setting)s must be >= %(low)s, got %(value)s"),
    gettext_noop("%(setting)s must be >= %(low)s"),
    gettext_noop("%(setting)s must be in [0, 1), got %(value)s"),
    gettext_noop("effective_batch_size (%(effective)s) must be a multiple of micro_batch_size (%(micro)s)"),
    gettext_noop("max_length must be None (auto) or >= 8"),
    gettext_noop("max_steps must be None or >= 1"),
    gettext_noop("invalid LoRA settings"),
    gettext_noop("cpu_offload needs sharding 'fsdp'"),
    gettext_noop(
        "SFT keeps its instruction in the user turn (instruction_turn 'user'): its predictions are scored with that "
        "prompt"
    ),
    gettext_noop("invalid head sizes"),
    gettext_noop(
        "effective_batch_size %(effective)s is not a multiple of micro_batch_size %(micro)s x %(processes)s process(es)"
    ),
    gettext_noop("TextPair answer is empty: there is nothing to learn"),
    gettext_noop("item %(item)s: options must be non-empty and distinct"),
    gettext_noop("item %(item)s: label %(label)s is not one of %(options)s"),
    gettext_noop("test_ratio must be in [0, 1], got %(value)s"),
    gettext_noop("item ids must be unique"),
    gettext_noop("mask_token must be a non-empty string"),
    gettext_noop("could not make %(token)s a single token of this tokenizer"),
    gettext_noop("the prompt template alone is longer than max_length (%(max_length)s)"),
    gettext_noop(
        "the chat template renders the generation prompt differently from the conversation with the answer; "
        "cannot locate the answer tokens"
    ),
    gettext_noop("answer tokens decode to %(decoded)s, which does not contain the answer %(answer)s"),
    gettext_noop("request %(request)s: the options and template alone exceed max_length (%(max_length)s)"),
    gettext_noop(
        "no training example: %(pairs)s pairs given, %(dropped)s do not fit max_length (%(max_length)s tokens) "
        "even with the prompt cut"
    ),
    gettext_noop("no labeled item to train on"),
    gettext_noop("precision 'bf16' asked for, but this GPU does not support bf16"),
    gettext_noop(
        "%(folder)s was written with another config (%(changed)s differ); train with the same config or resume=False"
    ),
    gettext_noop("%(folder)s was written for other training data; use resume=False to start over"),
    gettext_noop("%(folder)s holds sharded state: resume it with sharding 'fsdp' or use resume=False"),
    gettext_noop("%(folder)s: unknown checkpoint format %(format)s"),
    gettext_noop("checkpoint does not match the model: missing %(missing)s, unexpected %(unexpected)s"),
    gettext_noop("%(model)s lists no decoder layer class (_no_split_modules): it cannot be sharded"),
    gettext_noop("no module of class %(classes)s in the model: nothing to shard by layer"),
    gettext_noop(
        "%(folder)s holds no sharded state (%(path)s/.metadata): an unsharded run wrote it; resume with sharding "
        "'none' or use resume=False"
    ),
    gettext_noop("the gathered weights do not fit the model: missing %(missing)s, unexpected %(unexpected)s"),
    gettext_noop("no plain class behind %(cls)s"),
    gettext_noop("no head for task(s) %(missing)s; trained: %(trained)s"),
    gettext_noop("task %(task)s: items disagree on the options"),
    gettext_noop("features must be (n_items=%(items)s, hidden), got %(shape)s"),
    gettext_noop("features have %(columns)s columns, the heads expect %(expected)s"),
    gettext_noop("0-shot has %(prompts)s system prompts, %(variants)s variants asked for"),
    gettext_noop("%(shots)s-shot prompting needs labeled train_items"),
    gettext_noop("no variant predictions"),
    gettext_noop("%(predictions)s predictions for %(items)s items"),
    gettext_noop("%(count)s items have no gold label (e.g. %(item)s)"),
)


@cache
def texts() -> KnownTexts:
    return KnownTexts(REFUSALS)


def shown(text):
    """An ml.training refusal in the active language; as it is when not recognised."""
    return texts().render(text, translation)
