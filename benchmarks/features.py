"""Classification-head features and option scoring: the shared note prefix against one full
forward per item (features) or per item and option (scoring).

Same process, same model (the default SmolLM2-135M when converted, else a small random
Llama, named in the output), same items: `notes` notes x `tasks` CRF items of the catalog
(every task asked of every note, as in a labeled corpus), the SFT prompt of each item.
`plain` is `extract_features(..., shared_prefix=False)`: left-padded batches of whole
prompts, longest first, which is what the heads computed before. The two must give the same
features (the largest absolute difference is printed). With `--scoring`, the same items are
scored as SFT predicts them (ml.training.scoring, every option of every item): grouped by note
against one request per item without a group (the options of an item still share its prompt,
so that baseline already shares something; `--scoring-plain` adds the fully unshared loop).
Notes are synthetic clinical text of `note_tokens` tokens, or the first `notes` lines of a JSONL
file (`--notes-file`, field `--field`), e.g. CodiEsp:

    python -m benchmarks features --notes-file ../shared/data/codiesp/train.jsonl --field text_en_mt
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from benchmarks.machine import describe


def run(
    notes: int = 8,
    tasks: int = 20,
    note_tokens: int = 400,
    *,
    batch_size: int = 8,
    max_length: int = 1024,
    notes_file: Path | None = None,
    field: str = "text",
    threads: int | None = None,
    model_dir=None,
    loaded=None,
) -> dict:
    """Features of notes x tasks items, note prefix shared vs one forward per item (module doc).
    loaded: a LoadedModel to use instead of the default model."""
    import numpy as np
    import torch

    from benchmarks.training import _model
    from ml.catalog import load_catalog
    from ml.training import LabeledItem, extract_features

    if threads:
        torch.set_num_threads(threads)
    loaded, model_name = (loaded, loaded.name) if loaded is not None else _model(model_dir)
    texts = _texts(loaded.tokenizer, notes, note_tokens, notes_file, field)
    specs = [spec for spec in load_catalog() if not spec.held_out][:tasks]
    items = [
        LabeledItem(
            item_id=f"{n}-{spec.slug}",
            note_id=str(n),
            task=spec.slug,
            description=spec.description,
            options=list(spec.options),
            text=text,
        )
        for n, text in enumerate(texts)
        for spec in specs
    ]
    timings, outputs = {}, {}
    for mode, shared in (("warm-up", True), ("plain", False), ("shared_prefix", True)):
        subset = items[: len(specs)] if mode == "warm-up" else items
        started = time.perf_counter()
        outputs[mode] = extract_features(
            loaded, subset, batch_size=batch_size, max_length=max_length, shared_prefix=shared
        )
        timings[mode] = time.perf_counter() - started
    lengths = [len(loaded.tokenizer(t, add_special_tokens=False).input_ids) for t in texts]
    return {
        "model": model_name,
        "torch_threads": torch.get_num_threads(),
        "notes": len(texts),
        "tasks_per_note": len(specs),
        "items": len(items),
        "note_tokens_mean": round(float(np.mean(lengths)), 1),
        "max_length": max_length,
        "plain_items_per_s": round(len(items) / timings["plain"], 2),
        "shared_prefix_items_per_s": round(len(items) / timings["shared_prefix"], 2),
        "speedup": round(timings["plain"] / timings["shared_prefix"], 2),
        "plain_s": round(timings["plain"], 2),
        "shared_prefix_s": round(timings["shared_prefix"], 2),
        "max_abs_difference": float(np.abs(outputs["plain"] - outputs["shared_prefix"]).max()),
    }


def run_scoring(
    notes: int = 4,
    tasks: int = 20,
    note_tokens: int = 400,
    *,
    batch_size: int = 8,
    max_length: int = 1024,
    notes_file: Path | None = None,
    field: str = "text",
    threads: int | None = None,
    model_dir=None,
    unshared: bool = False,
) -> dict:
    """Option scoring of notes x tasks items: grouped by note vs per item (vs nothing shared)."""
    import numpy as np
    import torch

    from benchmarks.training import _model
    from ml.catalog import load_catalog
    from ml.training.data import LabeledItem, sft_prompt
    from ml.training.scoring import OptionRequest, option_scores
    from ml.training.vocab import mask_token_for

    if threads:
        torch.set_num_threads(threads)
    loaded, model_name = _model(model_dir)
    texts = _texts(loaded.tokenizer, notes, note_tokens, notes_file, field)
    specs = [spec for spec in load_catalog() if not spec.held_out][:tasks]
    mask = mask_token_for(loaded)
    items = [
        LabeledItem(
            item_id=f"{n}-{spec.slug}",
            note_id=str(n),
            task=spec.slug,
            description=spec.description,
            options=list(spec.options),
            text=text,
        )
        for n, text in enumerate(texts)
        for spec in specs
    ]
    modes = {
        "by_note": (lambda i: OptionRequest(sft_prompt(i, mask), i.options, group=i.note_id), True),
        "per_item": (lambda i: OptionRequest(sft_prompt(i, mask), i.options), True),
    }
    if unshared:
        modes["nothing_shared"] = (modes["per_item"][0], False)
    timings, scores = {}, {}
    option_scores(
        loaded, [modes["by_note"][0](i) for i in items[: len(specs)]], max_length=max_length, batch_size=batch_size
    )  # warm-up
    for mode, (request, shared) in modes.items():
        started = time.perf_counter()
        scores[mode] = option_scores(
            loaded, [request(i) for i in items], max_length=max_length, batch_size=batch_size, shared_prefix=shared
        )
        timings[mode] = time.perf_counter() - started
    flat = {mode: np.array([x for row in value for x in row]) for mode, value in scores.items()}
    result = {
        "model": model_name,
        "torch_threads": torch.get_num_threads(),
        "notes": len(texts),
        "tasks_per_note": len(specs),
        "items": len(items),
        "sequences": sum(len(i.options) for i in items),
        "max_length": max_length,
    }
    for mode, seconds in timings.items():
        result[f"{mode}_items_per_s"] = round(len(items) / seconds, 2)
    result["speedup_vs_per_item"] = round(timings["per_item"] / timings["by_note"], 2)
    if unshared:
        result["speedup_vs_nothing_shared"] = round(timings["nothing_shared"] / timings["by_note"], 2)
    result["max_abs_difference"] = float(max(np.abs(flat[m] - flat["by_note"]).max() for m in flat))
    return result


def _texts(tokenizer, n: int, note_tokens: int, notes_file: Path | None, field: str) -> list[str]:
    if notes_file is None:
        from benchmarks.relevance import synthetic_note

        rng = random.Random(0)
        return [synthetic_note(rng, tokenizer, note_tokens) for _ in range(n)]
    texts = []
    with open(notes_file, encoding="utf-8") as fh:
        for line in fh:
            text = (json.loads(line).get(field) or "").strip() if line.strip() else ""
            if text:
                texts.append(text)
            if len(texts) == n:
                break
    return texts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks features", description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--note-tokens", type=int, default=400, help="length of the synthetic notes")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-length", type=int, default=1024)
    parser.add_argument("--notes-file", type=Path, help="JSONL of real notes instead of synthetic ones")
    parser.add_argument("--field", default="text", help="the note text's field in --notes-file")
    parser.add_argument("--threads", type=int, help="torch CPU threads")
    parser.add_argument("--scoring", action="store_true", help="benchmark option scoring instead of features")
    parser.add_argument("--scoring-plain", action="store_true", help="with --scoring: also nothing shared")
    args = parser.parse_args(argv)
    if args.scoring:
        result = run_scoring(
            args.notes,
            args.tasks,
            args.note_tokens,
            batch_size=args.batch_size,
            max_length=args.max_length,
            notes_file=args.notes_file,
            field=args.field,
            threads=args.threads,
            unshared=args.scoring_plain,
        )
    else:
        result = run(
            args.notes,
            args.tasks,
            args.note_tokens,
            batch_size=args.batch_size,
            max_length=args.max_length,
            notes_file=args.notes_file,
            field=args.field,
            threads=args.threads,
        )
    result["machine"] = describe()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
