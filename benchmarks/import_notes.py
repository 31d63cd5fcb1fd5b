"""Benchmark `import_notes` on synthetic notes against the configured database; prints JSON.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dsm_bench .venv/bin/python benchmarks/import_notes.py 100000

Steps: generate N notes with `ml.synthetic` into a temporary JSONL (in worker processes, not
timed, not in this process's memory figures); import them into a fresh, empty corpus through
the same code path as `manage.py import_notes` (`webapp.corpus.importing.import_notes`),
timing the validation and write passes and sampling this process's RSS after every batch;
optionally re-import the same file (everything `unchanged`); then a naive baseline in the same
process: `json.loads` of every line into a list, and `Note.objects.create` per row for the first
`--baseline-rows` rows only, extrapolated linearly to N (the output says so). The benchmark
corpora are deleted at the end with plain SQL. The database must be migrated.
"""

import argparse
import json
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe  # noqa: E402
from benchmarks.projects import default_project  # noqa: E402


def _generate_part(args) -> str:
    path, start, n, seed, language = args
    from ml.synthetic import generate_notes

    dumps = json.dumps
    with open(path, "w", encoding="utf-8") as out:
        for note in generate_notes(n, seed=seed, language=language, start=start):
            out.write(dumps({"id": note.id, "text": note.text, "metadata": note.metadata}, ensure_ascii=False))
            out.write("\n")
    return path


def generate(path: Path, n: int, seed: int, language: str, workers: int) -> float:
    started = time.perf_counter()
    step = -(-n // workers)
    parts = [(f"{path}.part{i}", i * step, min(step, n - i * step), seed, language) for i in range(workers)]
    parts = [p for p in parts if p[2] > 0]
    with ProcessPoolExecutor(len(parts)) as pool:
        written = list(pool.map(_generate_part, parts))
    with open(path, "wb") as out:
        for part in written:
            with open(part, "rb") as src:
                while chunk := src.read(1 << 22):
                    out.write(chunk)
            os.unlink(part)
    return time.perf_counter() - started


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def timed_import(path: Path, corpus_name: str, n: int):
    from webapp.corpus.importing import import_notes

    marks = {"start": time.perf_counter()}
    samples = []
    every = max(n // 10, 1)

    def progress(phase, done):
        marks[phase] = time.perf_counter()
        if done % every < 2000 or done == n:
            samples.append({"phase": phase, "notes": done, "rss_mb": round(rss_mb(), 1)})

    report = import_notes(path, corpus_name, progress=progress)
    marks["end"] = time.perf_counter()
    if not report.ok:
        raise SystemExit("import failed:\n" + "\n".join(report.problem_lines()))
    return report, marks, samples


def baseline(path: Path, corpus, n: int, rows: int) -> dict:
    """The naive way: load every line into memory, then one INSERT (autocommit) per note."""
    from webapp.corpus.models import Note

    started = time.perf_counter()
    with open(path, encoding="utf-8-sig") as f:
        records = [json.loads(line) for line in f]
    load_s = time.perf_counter() - started
    del records
    tracemalloc.start()  # a second load, only to measure the list's Python heap
    with open(path, encoding="utf-8-sig") as f:
        records = [json.loads(line) for line in f]
    heap_mb = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    started = time.perf_counter()
    for rec in records[:rows]:
        Note.objects.create(
            corpus=corpus, external_id=str(rec["id"]), text=rec["text"], metadata=rec.get("metadata", {})
        )
    create_s = time.perf_counter() - started
    del records
    per_row = create_s / rows
    return {
        "method": f"json.loads of all {n} lines into a list, then Note.objects.create per row for the first "
        f"{rows} rows; the create time is extrapolated linearly to {n} notes",
        "load_all_s": round(load_s, 2),
        "python_heap_of_loaded_list_mb": round(heap_mb, 1),
        "rows_created": rows,
        "create_notes_per_s": round(rows / create_s, 1),
        "extrapolated_total_s": round(load_s + per_row * n, 1),
    }


def delete_corpus(corpus_id: int) -> None:
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM corpus_annotation WHERE note_id IN (SELECT id FROM corpus_note WHERE corpus_id = %s)",
            [corpus_id],
        )
        cursor.execute("DELETE FROM corpus_note WHERE corpus_id = %s", [corpus_id])
        cursor.execute("DELETE FROM corpus_corpus WHERE id = %s", [corpus_id])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int, nargs="?", default=100_000, help="number of notes (default 100000)")
    parser.add_argument("--language", default="it", choices=["it", "en", "mixed"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2, help="processes generating the file")
    parser.add_argument("--reimport", action="store_true", help="also time an idempotent re-import")
    parser.add_argument("--baseline-rows", type=int, default=2000)
    parser.add_argument("--tmp", default=tempfile.gettempdir(), help="folder for the generated JSONL")
    args = parser.parse_args()

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    django.setup()
    from django.db import connection

    from webapp.corpus.models import Corpus

    tag = f"bench-{os.getpid()}-{int(time.time())}"
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        path = Path(tmp) / "notes.jsonl"
        generate_s = generate(path, args.n, args.seed, args.language, args.workers)
        result = {
            "notes": args.n,
            "database": connection.vendor,
            "generator": "ml.synthetic.generate_notes",
            "file_mb": round(path.stat().st_size / 2**20, 1),
            "generate_s": round(generate_s, 1),
        }
        corpus = Corpus.objects.create(
            project=default_project(), name=tag, language=args.language[:2] if args.language != "mixed" else "it"
        )
        base_corpus = Corpus.objects.create(project=default_project(), name=f"{tag}-baseline", language=corpus.language)
        try:
            rss_start = rss_mb()
            report, marks, samples = timed_import(path, tag, args.n)
            validate_s = marks["validate"] - marks["start"]
            write_s = marks["end"] - marks["validate"]
            total_s = marks["end"] - marks["start"]
            result.update(
                {
                    "created": report.created,
                    "validate_s": round(validate_s, 1),
                    "validate_notes_per_s": round(args.n / validate_s),
                    "write_s": round(write_s, 1),
                    "write_notes_per_s": round(args.n / write_s),
                    "total_s": round(total_s, 1),
                    "total_notes_per_s": round(args.n / total_s),
                    "rss_mb_before_import": round(rss_start, 1),
                    "rss_mb_samples": samples,
                    "peak_rss_mb_process": round(peak_rss_mb(), 1),
                }
            )
            if args.reimport:
                again, marks2, _ = timed_import(path, tag, args.n)
                result["reimport"] = {
                    "unchanged": again.unchanged,
                    "total_s": round(marks2["end"] - marks2["start"], 1),
                }
            result["baseline"] = base = baseline(path, base_corpus, args.n, args.baseline_rows)
            result["speedup_vs_baseline"] = round(base["extrapolated_total_s"] / total_s, 1)
        finally:
            delete_corpus(corpus.pk)
            delete_corpus(base_corpus.pk)
    result["machine"] = describe()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
