"""From per (note, task) peaks to masked training examples (docs/METHOD.md, sections Relevance,
Masking and DSM training).

- Two peaks: a (note, task) pair is used only if it has >= 2 GROUPS (peaks after word
  extension and merging); the reference code's filter tested the length of the per-token
  label list, which enforces nothing.
- One example per group, the whole group's characters replaced by the mask token; label = the
  original characters. Only groups with another group to their LEFT give an example (every
  group but the leftmost). A group whose text is only whitespace gives no example (there is
  nothing to write back) but still counts as a group.
- De-duplication: examples are keyed by a hash of (masked text, label). Items are expected
  grouped by note (all tasks of a note consecutive, as `python -m ml relevance` writes them):
  within a note, identical examples from several tasks become one example listing all those
  tasks; an example identical to one of an EARLIER note (a duplicated note text) is dropped and
  counted. Two notes can share an example only if their texts are equal, or if both texts
  contain the mask token (the masked text then holds the token twice, and the label can be put
  back at either place; for a token that overlaps itself, such as "aa", even that does not
  hold). So a caller that knows which notes share their text (`repeating_notes`) lets
  build_examples keep the 16-byte digests of those notes' examples only, plus those of notes
  containing the mask token; without it every emitted example's digest is kept.
  Memory: one note's examples, the ids of the notes seen, and a digest per example of a note
  that may repeat (every example, without `repeating_notes`); `BuildStats.digests_kept` counts them.
- Pair outcomes (BuildStats): every pair read is either left out by the mode's filter
  (`pair_is_used`) or used; a used pair is kept (an example lists its task), gives no candidate
  (nothing maskable) or has every candidate dropped as a duplicate of an earlier note. So
  items = (items - items_used) + items_kept + items_without_candidate + items_all_duplicates.

Ablations (`MaskingMode`), docs/METHOD.md, section Masking:
- `dsm`: the method.
- `random`: same two-peak pairs and one candidate per DSM candidate, but the masked span is
  random: it starts at a random word (not the first, so there is left context) and takes whole
  words until it is at least as long (in characters) as the real group it replaces, so the
  span lengths follow the real groups' distribution. Seeded by (seed, note text, group span), so a
  group found by several tasks (or in a duplicated note) gives the same random span and
  de-duplicates exactly like DSM.
- `one_peak`: pairs with exactly one group; that group is masked.
- `unmasked`: continual pretraining: each note that has a two-peak pair, once, as plain text.
"""

from __future__ import annotations

import enum
import hashlib
import random
import re
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

DSM_INSTRUCTION = "Fill in the masked word in the following sentence."
DEFAULT_MASK_TOKEN = "<mask>"
_WORD = re.compile(r"\w+")


class MaskingMode(enum.StrEnum):
    DSM = "dsm"
    RANDOM = "random"
    ONE_PEAK = "one_peak"
    UNMASKED = "unmasked"


@dataclass(frozen=True)
class Group:
    """One peak after word extension: token span and character span, both half-open."""

    char_span: tuple[int, int]
    token_span: tuple[int, int] | None = None


Peak = Group


@dataclass(frozen=True)
class PeakItem:
    """The groups found in one note for one task."""

    note_id: str
    task: str
    text: str
    groups: Sequence[Group]


@dataclass(frozen=True)
class MaskedExample:
    note_id: str
    tasks: tuple[str, ...]
    masked_text: str
    label: str
    char_span: tuple[int, int] | None  # characters of the note that were masked; None if unmasked
    mode: str


@dataclass
class BuildStats:
    """What `build_examples` saw and kept; filled in while it streams."""

    items: int = 0  # (note, task) pairs read
    items_used: int = 0  # pairs that passed the mode's filter
    notes: int = 0  # distinct note ids
    notes_kept: int = 0  # notes with at least one example (a note split over runs of items: per run)
    candidates: int = 0  # examples before de-duplication
    examples: int = 0
    merged_across_tasks: int = 0  # same note, same example, another task
    dropped_duplicate_notes: int = 0  # same example already emitted for an earlier note
    notes_not_contiguous: list[str] = field(default_factory=list)  # note ids seen again later
    # What became of each pair that passed the filter (they add up to items_used):
    items_kept: int = 0  # at least one example lists the pair's task (merged examples included)
    items_without_candidate: int = 0  # no maskable span (whitespace-only groups, no room for a random span)
    items_all_duplicates: int = 0  # every example already emitted for an earlier note
    digests_kept: int = 0  # examples remembered to drop their repeats in later notes (the memory that grows)

    @property
    def duplicates(self) -> int:
        return self.merged_across_tasks + self.dropped_duplicate_notes


def sample_tasks(note_id, tasks: Iterable[str], k: int = 9, seed: int = 0) -> list[str]:
    """The paper's per-note task sample (9 of 136): k distinct tasks, in sorted order, drawn by
    an RNG seeded from a hash of (seed, note_id), so the same note always gets the same tasks
    whatever the order notes are processed in or the order `tasks` is given in."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    pool = sorted(set(tasks))
    if k >= len(pool):
        return pool
    rng = random.Random(_digest("sample_tasks", seed, note_id))
    return sorted(rng.sample(pool, k))


def format_dsm_prompt(example: MaskedExample) -> tuple[str, str]:
    """(prompt, answer) of the DSM training prompt; the loss goes on the answer. An unmasked
    (continual pretraining) example has an empty prompt and the whole note as its answer."""
    if example.mode == MaskingMode.UNMASKED.value:
        return "", example.masked_text
    return f"{DSM_INSTRUCTION} {example.masked_text}", example.label


def build_examples(
    items: Iterable[PeakItem],
    *,
    mode: MaskingMode | str = MaskingMode.DSM,
    mask_token: str = DEFAULT_MASK_TOKEN,
    seed: int = 0,
    stats: BuildStats | None = None,
    repeating_notes: Container[str] | None = None,
) -> Iterator[MaskedExample]:
    """Stream masked examples from per (note, task) peak items (see module doc).

    `repeating_notes`: None keeps the digest of every example emitted. Otherwise the ids of the
    notes whose text another note of `items` also has (a superset does no harm); the caller
    vouches that the items come grouped by note, since a note met again after another is then
    checked only against the digests kept."""
    mode = MaskingMode(mode)
    if not mask_token:
        raise ValueError("the mask token must be a non-empty string")
    stats = stats if stats is not None else BuildStats()
    keep_every_digest = repeating_notes is None or _overlaps_itself(mask_token)
    emitted: set[bytes] = set()  # digests of examples of earlier notes that may repeat
    finished: set[str] = set()
    note_id, pending, keep = None, {}, keep_every_digest

    def flush():
        if pending:
            stats.notes_kept += 1
        for digest, (example, tasks) in pending.items():
            if keep:
                emitted.add(digest)
            stats.examples += 1
            yield MaskedExample(
                example.note_id, tuple(tasks), example.masked_text, example.label, example.char_span, example.mode
            )
        pending.clear()
        stats.digests_kept = len(emitted)

    for item in items:
        stats.items += 1
        if item.note_id != note_id:
            yield from flush()
            if note_id is not None:
                finished.add(note_id)
            note_id = item.note_id
            keep = keep_every_digest or note_id in repeating_notes or mask_token in item.text
            if note_id in finished:
                stats.notes_not_contiguous.append(note_id)
            else:
                stats.notes += 1
        groups = _checked_groups(item)
        used = _used(groups, mode)
        stats.items_used += used
        candidates = kept = 0
        for example in _examples_of_item(item, groups, mode, mask_token, seed):
            stats.candidates += 1
            candidates += 1
            digest = hashlib.blake2b(
                f"{len(example.masked_text)}\x00{example.masked_text}\x00{example.label}".encode(), digest_size=16
            ).digest()
            if digest in pending:
                if item.task not in pending[digest][1]:
                    pending[digest][1].append(item.task)
                stats.merged_across_tasks += 1
                kept += 1
            elif digest in emitted:
                stats.dropped_duplicate_notes += 1
            else:
                pending[digest] = (example, [item.task])
                kept += 1
        if used:
            if kept:
                stats.items_kept += 1
            elif candidates:
                stats.items_all_duplicates += 1
            else:
                stats.items_without_candidate += 1
    yield from flush()


def _overlaps_itself(token: str) -> bool:
    """Whether a proper prefix of the token is also its suffix ("aa", "<m<"): two occurrences
    can then overlap, and two notes without the token can give the same masked text."""
    return any(token[:k] == token[-k:] for k in range(1, len(token)))


def pair_is_used(groups: int, mode: MaskingMode | str) -> bool:
    """The mode's filter on a pair's number of groups: exactly one for `one_peak`, else two or more."""
    if MaskingMode(mode) is MaskingMode.ONE_PEAK:
        return groups == 1
    return groups >= 2


def _used(groups, mode) -> bool:
    return pair_is_used(len(groups), mode)


def _examples_of_item(item: PeakItem, groups, mode, mask_token, seed) -> Iterator[MaskedExample]:
    text = item.text
    if not _used(groups, mode):
        return
    if mode is MaskingMode.UNMASKED:
        yield MaskedExample(item.note_id, (item.task,), text, "", None, mode.value)
        return
    if mode is MaskingMode.ONE_PEAK:
        targets = groups
    else:
        targets = groups[1:]  # groups are sorted and disjoint: all but the leftmost have one to their left
    words, text_digest = None, None
    if mode is MaskingMode.RANDOM:
        words = [m.span() for m in _WORD.finditer(text)]
        text_digest = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
    for group in targets:
        a, b = group.char_span
        if mode is MaskingMode.RANDOM:
            span = _random_span(words, b - a, _digest("random_span", seed, text_digest, a, b))
            if span is None:
                continue
            a, b = span
        label = text[a:b]
        if not label.strip():
            continue
        yield MaskedExample(item.note_id, (item.task,), text[:a] + mask_token + text[b:], label, (a, b), mode.value)


def _random_span(words, length: int, seed: int):
    """Whole words from a random word (never the first) until >= `length` characters."""
    if len(words) < 2:
        return None
    rng = random.Random(seed)
    i = rng.randrange(1, len(words))
    j = i
    while words[j][1] - words[i][0] < length and j + 1 < len(words):
        j += 1
    return words[i][0], words[j][1]


def _checked_groups(item: PeakItem) -> list[Group]:
    groups = sorted(item.groups, key=lambda g: g.char_span)
    previous_end = 0
    for group in groups:
        a, b = group.char_span
        if not 0 <= a < b <= len(item.text):
            raise ValueError(
                f"note {item.note_id!r}, task {item.task!r}: group {(a, b)} is not a non-empty span of the "
                f"{len(item.text)}-character note"
            )
        if a < previous_end:
            raise ValueError(f"note {item.note_id!r}, task {item.task!r}: groups overlap at {(a, b)}")
        previous_end = b
    return groups


def _digest(*parts) -> int:
    data = "\x1f".join(map(str, parts)).encode()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")
