"""The task catalog: the classification tasks (CRF items), their label options and groups.

The shipped catalog, `ml/data/crf_catalog.json`, holds the 134 case-report-form items of the
method paper (Table 5). Each entry's `description` is the item text exactly as the paper uses it,
so it can be dropped into prompts as s_T; obvious typos there ("first episod of epilepsy",
"pa02", "hc03-", "gastroscopy , ...") are kept in the description and the corrected wording is
listed in `aliases` (and used for the slug). Slugs, groups, aliases and held-out flags are ours.

Held-out tasks (`held_out: true`): a default for evaluating generalisation to tasks the model
was not fitted on, as the paper does separately (its Table 3). We hold out seven tasks, one per
kind of label space and clinical group, none of them a near duplicate of a training task, and
all of them covered by the synthetic corpus's gold labels so the held-out report has data:

- `respiratory-rate` (vital signs; ordinal bradypneic/eupneic/tachypneic from a number,
  while heart rate, blood pressure and temperature teach the same pattern),
- `presence-of-pacemaker` (devices; y/n/unknown from a history mention),
- `history-of-alcohol-abuse` (history; y/n with negations such as "denies EtOH"),
- `tongue-bite` (seizure semiology; a rare, very local finding),
- `living-alone` (social context; outside the clinical vocabulary of most tasks),
- `troponin` (laboratory; measured/unknown, the simplest label space),
- `level-of-autonomy-mobility` (five options, the largest label space in the catalog).

A user catalog has the same shape: a JSON list of entries, or an object whose "tasks" key holds
that list. Only `description` and `options` are required; `slug` is derived from the
description when missing, `group` defaults to "", `held_out` to false, `aliases` to [].
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CATALOG_PATH = Path(__file__).resolve().parent / "data" / "crf_catalog.json"
MAX_SLUG_LENGTH = 80
SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_KEYS = {"slug", "description", "options", "group", "held_out", "aliases"}


class CatalogError(ValueError):
    """A catalog file or entry is invalid; the message says where and why."""


@dataclass(frozen=True)
class TaskSpec:
    slug: str  # stable id: lowercase [a-z0-9-], at most 80 characters
    description: str  # s_T, the text used in prompts, e.g. "heart rate"
    options: tuple[str, ...]  # ordered label options, e.g. ("bradycardic", ..., "unknown")
    group: str = ""  # clinical group, e.g. "vital signs"
    held_out: bool = False  # default held out of training, evaluated separately
    aliases: tuple[str, ...] = ()  # other names (corrected spellings, abbreviations)


# Latin letters that Unicode does not decompose into a letter and its accents
_UNDECOMPOSED = str.maketrans(
    {"ø": "o", "Ø": "O", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ß": "ss", "đ": "d", "Đ": "D", "ð": "d"}
    | {"Ð": "D", "ł": "l", "Ł": "L", "þ": "th", "Þ": "Th", "ħ": "h", "Ħ": "H", "ı": "i", "ŀ": "l", "Ŀ": "L"}
)


def transliterate(text: str) -> str:
    """Latin letters without their accents: "diagnóstico" -> "diagnostico", "Ünïcødé" -> "Unicode"
    (Unicode's compatibility decomposition, NFKD, less the combining marks, and a table of the
    letters it does not decompose). Other scripts are left as they are."""
    decomposed = unicodedata.normalize("NFKD", text.translate(_UNDECOMPOSED))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def slugify(text: str, max_length: int = MAX_SLUG_LENGTH) -> str:
    """A slug from free text: "Heart rate (bpm)" -> "heart-rate-bpm", "diagnóstico" -> "diagnostico"
    (accents dropped, never the letter), cut at a hyphen to `max_length` (80) characters. Letters
    with no Latin form (Greek, Cyrillic, CJK) give no slug: "" (the caller asks for one)."""
    text = transliterate(text).lower().replace("'", "").replace("\u2019", "")
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    if len(slug) > max_length:
        slug = slug[:max_length].rsplit("-", 1)[0] or slug[:max_length]
    return slug


def load_catalog(path: str | Path | None = None) -> list[TaskSpec]:
    """Read and validate a catalog file (default: the shipped CRF catalog), in file order."""
    path = Path(path) if path is not None else DEFAULT_CATALOG_PATH
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read the catalog ({exc.strerror or exc})") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CatalogError(f"{path}: not valid JSON ({exc})") from exc
    return parse_catalog(data, source=str(path))


def parse_catalog(data, source: str = "catalog") -> list[TaskSpec]:
    """Validate already-parsed catalog data (a list of entries or {"tasks": [...]})."""
    if isinstance(data, dict):
        if "tasks" not in data:
            raise CatalogError(f"{source}: expected a list of tasks or an object with a 'tasks' list")
        data = data["tasks"]
    if not isinstance(data, list):
        raise CatalogError(f"{source}: expected a list of tasks, not {type(data).__name__}")
    if not data:
        raise CatalogError(f"{source}: the catalog has no tasks")
    tasks = [_parse_entry(entry, f"{source}: task {i}") for i, entry in enumerate(data)]
    _check_unique(tasks, source)
    return tasks


def catalog_index(tasks: list[TaskSpec]) -> dict[str, TaskSpec]:
    """Tasks by slug."""
    return {task.slug: task for task in tasks}


def _parse_entry(entry, where: str) -> TaskSpec:
    if not isinstance(entry, dict):
        raise CatalogError(f"{where}: expected an object, not {type(entry).__name__}")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise CatalogError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_KEYS))}")
    description = entry.get("description")
    if not isinstance(description, str) or not description.strip():
        raise CatalogError(f"{where}: 'description' must be a non-empty string")
    where = f"{where} ({description!r})"
    slug = entry.get("slug", slugify(description))
    if not isinstance(slug, str) or len(slug) > MAX_SLUG_LENGTH or not SLUG_RE.match(slug):
        raise CatalogError(
            f"{where}: bad slug {slug!r}: use lowercase letters, digits and single hyphens, "
            f"at most {MAX_SLUG_LENGTH} characters"
        )
    options = entry.get("options")
    if not isinstance(options, list) or not options:
        raise CatalogError(f"{where}: 'options' must be a non-empty list of labels")
    for option in options:
        if not isinstance(option, str) or not option.strip():
            raise CatalogError(f"{where}: every option must be a non-empty string, got {option!r}")
    options = [_nfc(option) for option in options]  # one label however its accents are composed
    duplicates = sorted({o for o in options if options.count(o) > 1})
    if duplicates:
        raise CatalogError(f"{where}: duplicate option(s) {', '.join(map(repr, duplicates))}")
    group = entry.get("group", "")
    if not isinstance(group, str):
        raise CatalogError(f"{where}: 'group' must be a string")
    held_out = entry.get("held_out", False)
    if not isinstance(held_out, bool):
        raise CatalogError(f"{where}: 'held_out' must be true or false")
    aliases = entry.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
        raise CatalogError(f"{where}: 'aliases' must be a list of non-empty strings")
    return TaskSpec(slug, description, tuple(options), group, held_out, tuple(_nfc(a) for a in aliases))


def _nfc(text: str) -> str:
    """Labels and aliases in Unicode NFC form, as the importer reads annotation labels."""
    return unicodedata.normalize("NFC", text)


def _check_unique(tasks: list[TaskSpec], source: str) -> None:
    seen_slugs: dict[str, int] = {}
    seen_names: dict[str, int] = {}
    for i, task in enumerate(tasks):
        if task.slug in seen_slugs:
            raise CatalogError(f"{source}: duplicate slug {task.slug!r} (tasks {seen_slugs[task.slug]} and {i})")
        seen_slugs[task.slug] = i
        for name in (task.description, *task.aliases):
            key = name.strip().lower()
            if key in seen_names and seen_names[key] != i:
                raise CatalogError(
                    f"{source}: description or alias {name!r} of task {i} ({task.slug}) "
                    f"already names task {seen_names[key]}"
                )
            seen_names[key] = i
