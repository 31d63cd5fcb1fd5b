"""Relevance configurations: everything that changes a map (RelevanceConfig, validated,
canonical, with a short stable key), the result of one pair, and the errors said to users.
No torch here: jobs, forms and commands build and key configurations without the model code."""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import asdict, dataclass, fields

import numpy as np

from ml.prompts import TEMPLATES, template_label
from ml.relevance import methods

METHODS = methods.names()  # the registry's, in the order users see (ml.relevance.methods)
# Maps computed outside the product and imported (ml.relevance.imported): a configuration's method,
# never computed here (not in the registry, so no command or job offers to compute it).
IMPORTED = "imported"
EXPLAIN = ("next", "max", "target", "span", "contrastive")
NORMALISE = ("abs", "clip")
TRUNCATE = ("left", "right")
DTYPES = ("auto", "float32", "bfloat16", "float16")
KEY_DIGITS = 10  # hex digits of the configuration hash in RelevanceConfig.key


class ConfigError(ValueError):
    """A relevance setting that cannot be used; `field` names it (for forms and commands)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class RelevanceConfig:
    """Everything that changes a relevance map: stored with every job, its `key` with every map.

    Execution details that do not change the result (batch size, progress) are not here.
    Canonical on construction: a template text equal to a built-in becomes its name, and the
    contrastive neutral text defaults to the template's, so equal computations get equal keys.
    """

    method: str = methods.DEFAULT  # paper: AttnLRP, lxt efficient mode
    explain: str = "next"  # reference code: top logit after the middle token of s_T (see module doc)
    normalise: str = "abs"  # reference code: |r| / max|r| over the note tokens; "clip": max(r, 0) / max r
    template: str = "en"  # paper: "{note} Given the patient's medical history, the following is observed {task}"
    truncate: str = "right"  # reference code: text[:max_text_length] keeps the start; "left" keeps the end
    max_note_tokens: int | None = None  # None: the model's context minus TEMPLATE_ROOM tokens
    dtype: str = "auto"  # "auto": as the model was loaded (ml.models.preferred_dtype by default)
    neutral: str = ""  # "contrastive" only: the neutral description; "" -> the template's ("the patient")

    def __post_init__(self):
        def choose(name, value, allowed, what):
            if value not in allowed:
                raise ConfigError(name, f"unknown {what} {value!r}; choose one of {', '.join(allowed)}")

        # read now: a method registered later counts
        choose("method", self.method, (*methods.names(), IMPORTED), "method")
        choose("explain", self.explain, EXPLAIN, "explain")
        choose("normalise", self.normalise, NORMALISE, "normalise")
        choose("truncate", self.truncate, TRUNCATE, "truncate")
        choose("dtype", self.dtype, DTYPES, "dtype")
        try:
            template = template_label(self.template)
        except (ValueError, TypeError) as exc:
            raise ConfigError("template", f"template: {exc}") from None
        object.__setattr__(self, "template", template)
        tokens = self.max_note_tokens
        if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1):
            raise ConfigError("max_note_tokens", "max_note_tokens must be a whole number >= 1, or None")
        if not isinstance(self.neutral, str):
            raise ConfigError("neutral", "the neutral description must be text")
        neutral = self.neutral.strip()
        if self.explain != "contrastive":
            if neutral:
                raise ConfigError("neutral", "a neutral description applies only to explain='contrastive'")
        elif not neutral:
            neutral = TEMPLATES[template].neutral if template in TEMPLATES else ""
            if not neutral:
                raise ConfigError(
                    "neutral",
                    "explain='contrastive' with a custom template needs a neutral "
                    "description (the built-in templates have one)",
                )
        object.__setattr__(self, "neutral", neutral)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> RelevanceConfig:
        """Inverse of to_dict(); missing fields take their defaults, unknown ones are an error."""
        if not isinstance(data, dict):
            raise ConfigError("config", "a relevance configuration must be an object")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ConfigError("config", f"unknown relevance setting(s) {', '.join(unknown)}")
        return cls(**data)

    @property
    def key(self) -> str:
        """Short, stable identifier: "<method>-<explain>-<hash of every field>",
        e.g. "attnlrp-next-<10 hex digits>". The hash covers every field, so a field added later
        changes every key: such a change needs a migration that re-keys the stored maps (and the
        review rows that name them); tests pin the default key to catch it."""
        return config_key(self.to_dict())

    def kwargs(self) -> dict:
        return self.to_dict()


def config_key(settings: dict) -> str:
    """RelevanceConfig.key of a canonical settings dict (no validation)."""
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    digest = hashlib.sha256(canonical.encode("ascii")).hexdigest()[:KEY_DIGITS]
    return f"{settings['method']}-{settings['explain']}-{digest}"


@functools.lru_cache(maxsize=1024)
def default_config_key(method: str, template: str) -> str:
    """The key of the default configuration of a method and a (stored, canonical) template:
    what every relevance map was made with before configurations were recorded. Kept per process
    (a pure function of its two strings; a page asks for it a dozen times)."""
    return config_key({**RelevanceConfig().to_dict(), "method": method, "template": template})


@dataclass
class RelevanceResult:
    offsets: np.ndarray  # int32 (n_tokens, 2): [start, end) of each note token in the original note
    raw_scores: np.ndarray  # float32 (n_tokens,): relevance as computed
    scores: np.ndarray  # float32 (n_tokens,): normalised to [0, 1] over the note tokens
    target_token: str  # the explained token: s_T's middle token, or all of s_T ("span", "contrastive")
    predicted_token: str = ""  # the top-logit token at each explained position
    truncated: bool = False  # the note was cut to max_note_tokens
