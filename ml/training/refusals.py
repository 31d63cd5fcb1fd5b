"""What ml.training refuses, in English: each refusal is one template with %(name)s values.

A TrainingError or TrainingInputError is raised with one of these templates and its values
(`TrainingInputError(ONE_OF, setting="precision", choices=..., value=...)`); its message is the
template filled in, and the error keeps both (`exc.template`, `exc.values`). The values are what
the refusal names: settings as the config spells them, ids, labels, counts, sizes, folders, an
object's repr. ml knows nothing of the web app; the web app shows a refusal in its reader's
language by recognising these templates in the stored English (webapp.training.refusal_text lists
them again for its catalogs, and a test checks that it lists every one of TEMPLATES). Change a
template here and there together.

No torch here: the web app reads this module without loading a model.
"""

from __future__ import annotations

# ---------------------------------------------------------------- configs (config.py)

UNKNOWN_KEYS = "unknown %(config)s key(s): %(unknown)s; known keys: %(known)s"
ONE_OF = "%(setting)s must be one of %(choices)s, got %(value)s"
ABOVE_ZERO_GOT = "%(setting)s must be > 0, got %(value)s"
ABOVE_ZERO = "%(setting)s must be > 0"
AT_LEAST_GOT = "%(setting)s must be >= %(low)s, got %(value)s"
AT_LEAST = "%(setting)s must be >= %(low)s"
FRACTION_GOT = "%(setting)s must be in [0, 1), got %(value)s"
MULTIPLE = "effective_batch_size (%(effective)s) must be a multiple of micro_batch_size (%(micro)s)"
MAX_LENGTH_AUTO = "max_length must be None (auto) or >= 8"
MAX_STEPS = "max_steps must be None or >= 1"
LORA_SETTINGS = "invalid LoRA settings"
CPU_OFFLOAD = "cpu_offload needs sharding 'fsdp'"
SFT_USER_TURN = (
    "SFT keeps its instruction in the user turn (instruction_turn 'user'): its predictions are scored with that prompt"
)
HEAD_SIZES = "invalid head sizes"
ACCUMULATION = (
    "effective_batch_size %(effective)s is not a multiple of micro_batch_size %(micro)s x %(processes)s process(es)"
)

# ---------------------------------------------------------------- data (data.py, vocab.py)

EMPTY_ANSWER = "TextPair answer is empty: there is nothing to learn"
ITEM_OPTIONS = "item %(item)s: options must be non-empty and distinct"
ITEM_LABEL = "item %(item)s: label %(label)s is not one of %(options)s"
TEST_RATIO = "test_ratio must be in [0, 1], got %(value)s"
UNIQUE_IDS = "item ids must be unique"
MASK_TOKEN = "mask_token must be a non-empty string"
NOT_SINGLE_TOKEN = "could not make %(token)s a single token of this tokenizer"

# ---------------------------------------------------------------- encoding (encoding.py, scoring.py)

PROMPT_TOO_LONG = "the prompt template alone is longer than max_length (%(max_length)s)"
ANSWER_NOT_FOUND = (
    "the chat template renders the generation prompt differently from the conversation with the answer; cannot "
    "locate the answer tokens"
)
ANSWER_DECODED = "answer tokens decode to %(decoded)s, which does not contain the answer %(answer)s"
OPTIONS_TOO_LONG = "request %(request)s: the options and template alone exceed max_length (%(max_length)s)"

# ---------------------------------------------------------------- training (loop.py, sft.py, runtime.py, finetune.py)

NO_EXAMPLE = (
    "no training example: %(pairs)s pairs given, %(dropped)s do not fit max_length (%(max_length)s tokens) even "
    "with the prompt cut"
)
NO_LABELED_ITEM = "no labeled item to train on"
NO_BF16 = "precision 'bf16' asked for, but this GPU does not support bf16"
OTHER_CONFIG = (
    "%(folder)s was written with another config (%(changed)s differ); train with the same config or resume=False"
)
OTHER_DATA = "%(folder)s was written for other training data; use resume=False to start over"
SHARDED_STATE = "%(folder)s holds sharded state: resume it with sharding 'fsdp' or use resume=False"
CHECKPOINT_FORMAT = "%(folder)s: unknown checkpoint format %(format)s"
CHECKPOINT_MISMATCH = "checkpoint does not match the model: missing %(missing)s, unexpected %(unexpected)s"

# ---------------------------------------------------------------- sharding (sharding.py)

NO_LAYER_CLASS = "%(model)s lists no decoder layer class (_no_split_modules): it cannot be sharded"
NO_LAYER = "no module of class %(classes)s in the model: nothing to shard by layer"
NO_SHARDED_STATE = (
    "%(folder)s holds no sharded state (%(path)s/.metadata): an unsharded run wrote it; resume with sharding "
    "'none' or use resume=False"
)
GATHERED_MISMATCH = "the gathered weights do not fit the model: missing %(missing)s, unexpected %(unexpected)s"
NO_PLAIN_CLASS = "no plain class behind %(cls)s"

# ---------------------------------------------------------------- heads, prompting, evaluation

NO_HEAD = "no head for task(s) %(missing)s; trained: %(trained)s"
TASK_OPTIONS = "task %(task)s: items disagree on the options"
FEATURES_SHAPE = "features must be (n_items=%(items)s, hidden), got %(shape)s"
FEATURES_COLUMNS = "features have %(columns)s columns, the heads expect %(expected)s"
ZERO_SHOT_VARIANTS = "0-shot has %(prompts)s system prompts, %(variants)s variants asked for"
SHOTS_NEED_LABELS = "%(shots)s-shot prompting needs labeled train_items"
NO_VARIANTS = "no variant predictions"
PREDICTION_COUNT = "%(predictions)s predictions for %(items)s items"
NO_GOLD = "%(count)s items have no gold label (e.g. %(item)s)"

TEMPLATES = (
    UNKNOWN_KEYS,
    ONE_OF,
    ABOVE_ZERO_GOT,
    ABOVE_ZERO,
    AT_LEAST_GOT,
    AT_LEAST,
    FRACTION_GOT,
    MULTIPLE,
    MAX_LENGTH_AUTO,
    MAX_STEPS,
    LORA_SETTINGS,
    CPU_OFFLOAD,
    SFT_USER_TURN,
    HEAD_SIZES,
    ACCUMULATION,
    EMPTY_ANSWER,
    ITEM_OPTIONS,
    ITEM_LABEL,
    TEST_RATIO,
    UNIQUE_IDS,
    MASK_TOKEN,
    NOT_SINGLE_TOKEN,
    PROMPT_TOO_LONG,
    ANSWER_NOT_FOUND,
    ANSWER_DECODED,
    OPTIONS_TOO_LONG,
    NO_EXAMPLE,
    NO_LABELED_ITEM,
    NO_BF16,
    OTHER_CONFIG,
    OTHER_DATA,
    SHARDED_STATE,
    CHECKPOINT_FORMAT,
    CHECKPOINT_MISMATCH,
    NO_LAYER_CLASS,
    NO_LAYER,
    NO_SHARDED_STATE,
    GATHERED_MISMATCH,
    NO_PLAIN_CLASS,
    NO_HEAD,
    TASK_OPTIONS,
    FEATURES_SHAPE,
    FEATURES_COLUMNS,
    ZERO_SHOT_VARIANTS,
    SHOTS_NEED_LABELS,
    NO_VARIANTS,
    PREDICTION_COUNT,
    NO_GOLD,
)
