"""`python -m ml relevance`: relevance of every (note, task) pair of a notes JSONL file.

Input lines: {"id": str, "text": str, "metadata"?: {}, "tasks"?: [s_T, ...]} (a note's own
task list replaces --task/--tasks-file). Output lines, one per (note, task):
{"note_id", "task", "model", "method", "template", "explain", "config_key", "config": {...},
 "target_token", "predicted_token", "offsets": [[s, e], ...], "scores": [...], "raw_scores": [...]}
where "config" is the ml.relevance.RelevanceConfig that made the line and "config_key" its key
(`python -m ml localisation --group-by model,config_key` keeps configurations apart).
Resumable: pairs (note_id, task, config_key) already in --out are skipped and new lines
appended, so one file can hold several configurations (a line written before config_key was
recorded counts as the default configuration of its method and template).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ml.masking import sample_tasks
from ml.relevance import DTYPES, EXPLAIN, METHODS, NORMALISE, TRUNCATE, ConfigError, RelevanceConfig, default_config_key
from ml.relevance.methods import DEFAULT as DEFAULT_METHOD

CHUNK = 32  # pairs per compute_relevance call; results are written after each chunk


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "relevance", help="compute token relevance for notes x task descriptions", description=__doc__.splitlines()[0]
    )
    p.add_argument("--notes", required=True, help="notes JSONL (id, text, optional tasks)")
    p.add_argument("--model", default="smollm2-135m-instruct", help="registry name, model folder or cached hub id")
    p.add_argument("--model-dir", default=None, help="where registry models live (default: $MODEL_DIR or var/models)")
    p.add_argument("--task", action="append", default=[], help="task description s_T (repeatable)")
    p.add_argument("--tasks-file", help="file with one task description per line")
    p.add_argument("--sample", type=int, default=None, metavar="K", help="draw K tasks per note (seeded)")
    p.add_argument("--seed", type=int, default=0, help="seed for --sample (default 0)")
    p.add_argument("--method", choices=METHODS, default=DEFAULT_METHOD)
    p.add_argument("--template", default="en", help='"en", "it", "es" or a custom "... {note} ... {task}"')
    p.add_argument("--batch-size", type=int, default=None, help="prompts per forward pass (default: auto)")
    p.add_argument("--max-note-tokens", type=int, default=None, help="truncate longer notes (never the task)")
    p.add_argument(
        "--truncate",
        choices=TRUNCATE,
        default="right",
        help="drop note tokens from the right (keep the start, default) or the left",
    )
    p.add_argument("--normalise", choices=NORMALISE, default="abs")
    p.add_argument(
        "--explain",
        choices=EXPLAIN,
        default="next",
        help="next: top logit after the middle token of s_T (reference code, default); "
        "max / target: before it, top logit / the middle token's own logit; "
        "span: the sum of the logits of every s_T token (1 prompt); "
        "contrastive: span of s_T minus span of --neutral, per token (up to 2 prompts)",
    )
    p.add_argument(
        "--neutral",
        default="",
        help="--explain contrastive: the neutral description (default: the template's, "
        'en "the patient", it "il paziente", es "el paciente")',
    )
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: cuda when available)")
    p.add_argument(
        "--dtype",
        default=None,
        choices=[d for d in DTYPES if d != "auto"],
        help="model dtype (default: bf16 where measured better; recorded as auto)",
    )
    p.add_argument("--allow-download", action="store_true", help="let a hub id be downloaded")
    p.add_argument("--out", required=True, help="output JSONL (appended to when it exists)")
    p.set_defaults(func=run)


def read_notes(path: str | Path) -> list[dict]:
    notes = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise SystemExit(f"{path}:{number}: not JSON ({exc})") from exc
            if (
                not isinstance(row, dict)
                or not isinstance(row.get("id"), (str, int))
                or not isinstance(row.get("text"), str)
            ):
                raise SystemExit(f'{path}:{number}: each line needs "id" and "text"')
            tasks = row.get("tasks")
            if tasks is not None and not (isinstance(tasks, list) and all(isinstance(t, str) for t in tasks)):
                raise SystemExit(f'{path}:{number}: "tasks" must be a list of strings')
            notes.append({"id": str(row["id"]), "text": row["text"], "tasks": tasks})
    return notes


def read_tasks(args) -> list[str]:
    tasks = [t.strip() for t in args.task if t.strip()]
    if args.tasks_file:
        lines = Path(args.tasks_file).read_text(encoding="utf-8").splitlines()
        tasks += [t.strip() for t in lines if t.strip() and not t.lstrip().startswith("#")]
    return list(dict.fromkeys(tasks))


def done_pairs(out: Path) -> set[tuple[str, str, str]]:
    """(note_id, task, config_key) of the lines already in `out`."""
    done = set()
    if not out.exists():
        return done
    with open(out, encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
                key = row.get("config_key") or default_config_key(row["method"], row.get("template", "en"))
                done.add((row["note_id"], row["task"], key))
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # a line cut short by an interrupted run: that pair is redone
    return done


def relevance_config(args) -> RelevanceConfig:
    try:
        return RelevanceConfig(
            method=args.method,
            explain=args.explain,
            normalise=args.normalise,
            template=args.template,
            truncate=args.truncate,
            max_note_tokens=args.max_note_tokens,
            dtype=args.dtype or "auto",
            neutral=args.neutral,
        )
    except ConfigError as exc:
        raise SystemExit(f"--{exc.field.replace('_', '-')}: {exc}") from exc


def plan(notes: list[dict], tasks: list[str], args, done: set, key: str = "") -> list[tuple[dict, str]]:
    pairs, skipped_empty = [], 0
    for note in notes:
        if not note["text"].strip():
            skipped_empty += 1
            continue
        own = note["tasks"] if note["tasks"] is not None else tasks
        if not own:
            raise SystemExit(f'note {note["id"]!r} has no tasks: give --task, --tasks-file or a "tasks" list')
        chosen = own if args.sample is None else sample_tasks(note["id"], own, k=args.sample, seed=args.seed)
        for task in chosen:
            if (note["id"], task, key) not in done:
                pairs.append((note, task))
    if skipped_empty:
        print(f"skipped {skipped_empty} note(s) with empty text", file=sys.stderr)
    return pairs


def run(args) -> int:
    from tqdm import tqdm

    from ml.models import load_model, pick_device, preferred_dtype
    from ml.relevance import compute_relevance

    config = relevance_config(args)
    out = Path(args.out)
    pairs = plan(read_notes(args.notes), read_tasks(args), args, done_pairs(out), config.key)
    if not pairs:
        print("nothing to do: every pair is already in " + str(out), file=sys.stderr)
        return 0
    device = pick_device(args.device)
    loaded = load_model(
        args.model,
        model_dir=args.model_dir,
        device=device,
        dtype=args.dtype or preferred_dtype(device),
        allow_download=args.allow_download,
    )
    settings = config.to_dict()

    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists() and out.stat().st_size and not out.read_bytes().endswith(b"\n"):
        with open(out, "a", encoding="utf-8") as f:
            f.write("\n")  # close a line cut short by an interrupted run
    with open(out, "a", encoding="utf-8") as f, tqdm(total=len(pairs), unit="pair", file=sys.stderr) as bar:
        for start in range(0, len(pairs), CHUNK):
            chunk = pairs[start : start + CHUNK]
            chunk_size = len(chunk)
            results = compute_relevance(
                loaded,
                [n["text"] for n, _ in chunk],
                [t for _, t in chunk],
                config,
                batch_size=args.batch_size,
                progress=lambda done, total, base=start, n=chunk_size: bar.update(base + n * done // total - bar.n),
            )
            for (note, task), r in zip(chunk, results):
                f.write(
                    json.dumps(
                        {
                            "note_id": note["id"],
                            "task": task,
                            "model": loaded.label,
                            "method": config.method,
                            "template": config.template,
                            "explain": config.explain,
                            "config_key": config.key,
                            "config": settings,
                            "target_token": r.target_token,
                            "predicted_token": r.predicted_token,
                            "offsets": r.offsets.tolist(),
                            "scores": [round(float(x), 5) for x in r.scores],
                            "raw_scores": [float(f"{x:.6g}") for x in r.raw_scores],
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
            f.flush()
    return 0
