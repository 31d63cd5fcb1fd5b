"""Benchmark dataset builds from stored relevance maps on PostgreSQL; prints JSON.

    .venv/bin/python benchmarks/dataset_builds.py 100000
    .venv/bin/python benchmarks/dataset_builds.py 20000 --database-url postgres://postgres@127.0.0.1:5432/dsm_bench_ds

Runs in a DEDICATED database (default `dsm_bench_datasets` on 127.0.0.1, or --database-url): it
is created and migrated, used, and dropped at the end (--keep to keep it), so the storage figures
count only the benchmark's rows and nothing is left behind.

Steps:
1. N synthetic maps of `--tokens` tokens (default 100,000 x 300) for N / tasks-per-note notes
   (default 9 tasks a note, the paper's sampling): sub-word tokens (about one in four continues
   the previous word, so word extension has work to do) and scores shaped like normalised
   AttnLRP maps (benchmarks.peaks.synthetic_maps: background noise plus a few bursts).
   Notes are written with COPY (psycopg 3), maps through RelevanceMap.objects.store (the app's
   one writer of maps, 1,000 a call), timed. No ANALYZE afterwards: the build
   refreshes the planner's statistics itself when they are stale (as right after a bulk load).
2. Storage: average `octet_length(data)` of a map (its scores), and pg_total_relation_size of the
   maps table and of the offsets table (heap + TOAST + indexes) divided by their rows.
3. The build: a DSM dataset over every map with the paper's profile (kernel 3, sigma 1, 0.2 /
   0.4) through webapp.datasets.building.build, timed, with this process's peak RSS sampled
   during the build; then the examples table's size per example.
4. Peaks only: the same stream of maps (read and decoded) through ml.peaks.peaks_of_rows
   (find_peaks_many, word extension) without masking or writing, to show where the time goes.
5. Exports (unless --no-export): JSONL, Parquet and Hugging Face folders of the built dataset into
   a temporary folder (deleted), each timed with its size and this process's peak RSS.
6. A naive baseline in the same process, on the first `--baseline-maps` maps only and
   extrapolated linearly to N (the output says so): ORM instances one by one with their note,
   `find_peaks` per map, word extension, ml.masking.build_examples, `MaskedExample.objects.create`
   per example.
"""

import argparse
import hashlib
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.database import PeakRss, database_for, drop_database, rss_mb, use_new_database  # noqa: E402
from benchmarks.machine import describe  # noqa: E402
from benchmarks.projects import default_project  # noqa: E402

PIECES = (
    "pa",
    "ti",
    "ent",
    "hr",
    "bp",
    "low",
    "high",
    "card",
    "iac",
    "pace",
    "maker",
    "sync",
    "ope",
    "fall",
    "head",
    "ct",
    "neg",
    "ative",
    "tachy",
    "brady",
    "dys",
    "pnea",
    "chest",
    "pain",
    "ecg",
    "sinus",
    "rhythm",
    "no",
    "known",
    "allerg",
    "ies",
    "home",
    "ther",
    "apy",
    "ward",
    "ed",
    "obs",
    "bpm",
    "mmhg",
    "120",
    "80",
    "90",
    "60",
    "37",
    "spo2",
    "98",
    "%",
    ",",
    ".",
    "and",
    "with",
    "of",
    "the",
    "in",
    "on",
    "at",
    "to",
)


def synthetic_note(rng, n_tokens: int):
    """(text, offsets (n, 2)) of n sub-word tokens; about a quarter continue the previous word."""
    import numpy as np

    pieces = rng.choice(len(PIECES), size=n_tokens)
    joined = rng.random(n_tokens) < 0.25
    joined[0] = True
    parts, offsets, pos = [], [], 0
    for k, glue in zip(pieces.tolist(), joined.tolist()):
        piece = PIECES[k]
        if not glue:
            parts.append(" ")
            pos += 1
        offsets.append((pos, pos + len(piece)))
        parts.append(piece)
        pos += len(piece)
    return "".join(parts), np.array(offsets, np.int32)


def insert_inputs(args):
    """Notes, tasks, a model version, a profile and N maps, with COPY. Returns (objects, timings)."""
    import numpy as np
    from django.db import connection
    from django.utils import timezone

    from benchmarks.peaks import synthetic_maps
    from webapp.corpus.models import Corpus, Task
    from webapp.pipeline.models import ModelVersion, PeakProfile, RelevanceMap, StoredArrays

    rng = np.random.default_rng(args.seed)
    corpus = Corpus.objects.create(project=default_project(), name="bench-datasets", language="en")
    tasks = [
        Task.objects.create(slug=f"bench-task-{i}", description=f"bench task {i}", options=["y", "n"])
        for i in range(args.tasks_per_note)
    ]
    model = ModelVersion.objects.create(name="bench-model", family="llama", path="bench-model")
    profile = PeakProfile.objects.create(name="bench-paper", kernel_size=3, sigma=1.0, lower=0.2, upper=0.4)
    n_notes = -(-args.n // args.tasks_per_note)
    now = timezone.now()
    generate_s = copy_s = 0.0
    connection.ensure_connection()
    raw = connection.connection  # the psycopg 3 connection (autocommit, as Django runs it)
    made = 0
    chunk_notes = 2_000
    for first in range(0, n_notes, chunk_notes):
        t = time.perf_counter()
        notes = [synthetic_note(rng, args.tokens) for _ in range(min(chunk_notes, n_notes - first))]
        generate_s += time.perf_counter() - t
        t = time.perf_counter()
        with raw.cursor() as cur:
            with cur.copy(
                "COPY corpus_note (corpus_id, external_id, text, content_hash, metadata, created) FROM STDIN"
            ) as copy:
                for i, (text, _) in enumerate(notes):
                    copy.write_row(
                        (corpus.pk, f"b{first + i:07d}", text, hashlib.sha256(text.encode()).hexdigest(), "{}", now)
                    )
            cur.execute(
                "SELECT id FROM corpus_note WHERE corpus_id = %s AND external_id >= %s ORDER BY external_id LIMIT %s",
                [corpus.pk, f"b{first:07d}", len(notes)],
            )
            note_ids = [row[0] for row in cur.fetchall()]
        copy_s += time.perf_counter() - t
        t = time.perf_counter()
        maps_here = min(len(notes) * args.tasks_per_note, args.n - made)
        scores = synthetic_maps(maps_here, args.tokens, seed=args.seed + first)
        computed = []
        for k in range(maps_here):
            note_index, task_index = divmod(k, args.tasks_per_note)
            key = (note_ids[note_index], tasks[task_index].pk)
            computed.append((key, StoredArrays(notes[note_index][1], scores[k])))
        generate_s += time.perf_counter() - t
        t = time.perf_counter()
        for start in range(0, len(computed), 1_000):  # the app's one writer of maps, a job chunk's worth at a time
            RelevanceMap.objects.store(
                computed[start : start + 1_000],
                model_version_id=model.pk,
                method="attnlrp",
                template="en",
                config_key="",
            )
        copy_s += time.perf_counter() - t
        made += maps_here
    return {"corpus": corpus, "model": model, "profile": profile, "notes": n_notes}, {
        "generate_s": round(generate_s, 1),
        "copy_s": round(copy_s, 1),
        "copy_maps_per_s": round(args.n / copy_s) if copy_s else None,
    }


def storage(table: str, where: str = "") -> dict:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM {table}")
        count = cur.fetchone()[0]
        cur.execute("SELECT pg_total_relation_size(%s), pg_relation_size(%s), pg_indexes_size(%s)", [table] * 3)
        total, heap, indexes = cur.fetchone()
    return {
        "rows": count,
        "total_bytes": total,
        "heap_bytes": heap,
        "index_bytes": indexes,
        "total_bytes_per_row": round(total / count, 1) if count else None,
    }


def bench_build(objects) -> dict:
    from webapp.datasets import building
    from webapp.datasets.models import DatasetVersion

    dataset = DatasetVersion.objects.create(
        name="bench", corpus=objects["corpus"], model_version=objects["model"], profile=objects["profile"]
    )
    dataset = building.claim(dataset.pk)
    rss_before = rss_mb()
    started = time.perf_counter()
    with PeakRss() as sampler:
        stats = building.build(dataset)
    seconds = time.perf_counter() - started
    return {
        "build_s": round(seconds, 1),
        "maps_per_s": round(stats["maps"] / seconds),
        "examples": stats["examples"],
        "examples_per_s": round(stats["examples"] / seconds),
        "pairs_two_or_more_peaks": stats["pairs_two_or_more_peaks"],
        "duplicates_removed": stats["duplicates_removed"],
        "mean_masked_chars": stats["span_chars"]["mean"],
        "rss_mb_before": round(rss_before, 1),
        "rss_mb_peak_during_build": round(sampler.peak, 1),
        "rss_anon_mb_peak_during_build": round(sampler.peak_anon, 1),
        "batch_maps": building.BATCH_MAPS,
        "write_batch": building.WRITE_BATCH,
    }, dataset


def bench_peaks_only(dataset) -> dict:
    """The build's read + peaks stages alone: the same batches through ml.peaks.peaks_of_rows."""
    from ml.peaks import peaks_of_rows
    from webapp.corpus.models import Note
    from webapp.datasets import building

    started = time.perf_counter()
    query_s = 0.0
    maps = peaks = 0
    batches = building._map_batches(dataset)
    while True:
        t = time.perf_counter()
        rows = next(batches, None)
        if rows is None:
            break
        texts = dict(Note.objects.filter(pk__in={r[1] for r in rows}).values_list("pk", "text"))
        query_s += time.perf_counter() - t
        peaks += sum(len(p.char_spans) for p in peaks_of_rows(rows, texts, dataset.profile.params))
        maps += len(rows)
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 1),
        "read_s": round(query_s, 1),
        "peaks_s": round(seconds - query_s, 1),
        "maps": maps,
        "maps_per_s": round(maps / seconds),
        "groups_per_map": round(peaks / maps, 2),
    }


def bench_baseline(objects, n_total: int, n_maps: int) -> dict:
    """The naive way, on the first n_maps maps: ORM instances, per-map find_peaks, a create per example."""
    from ml.masking import Group, PeakItem, build_examples
    from ml.peaks import extend_to_words, find_peaks, peak_char_spans, trim_peaks
    from webapp.datasets.models import DatasetVersion, MaskedExample
    from webapp.pipeline.models import RelevanceMap

    dataset = DatasetVersion.objects.create(
        name="bench-baseline", corpus=objects["corpus"], model_version=objects["model"], profile=objects["profile"]
    )
    params = objects["profile"].params
    started = time.perf_counter()
    first = list(
        RelevanceMap.objects.filter(model_version=objects["model"])
        .order_by("note_id", "task_id")
        .values_list("pk", flat=True)[:n_maps]
    )  # (ids first: a LIMIT over a join sorts every map)
    maps = RelevanceMap.objects.filter(pk__in=first).select_related("note", "tokens").order_by("note_id", "task_id")
    map_ids = {}

    def items():
        for m in maps.iterator(chunk_size=500):
            offsets, scores = m.arrays()
            words = extend_to_words(find_peaks(scores, params), offsets, m.note.text)
            chars = peak_char_spans(words, offsets, m.note.text)
            if params.trim:
                words, chars = trim_peaks(words, chars, offsets, m.note.text)
            map_ids[(m.note_id, m.task_id)] = m.pk
            yield PeakItem(str(m.note_id), str(m.task_id), m.note.text, [Group(c, w) for c, w in zip(chars, words)])

    examples = 0
    for e in build_examples(items()):
        start, end = e.char_span
        MaskedExample.objects.create(
            dataset=dataset,
            note_id=int(e.note_id),
            tasks=[int(t) for t in e.tasks],
            relevance_map_id=map_ids[(int(e.note_id), int(e.tasks[0]))],
            masked_text=e.masked_text,
            label=e.label,
            char_start=start,
            char_end=end,
        )
        examples += 1
    seconds = time.perf_counter() - started
    return {
        "method": f"ORM instances one by one (select_related note), find_peaks per map, word extension, "
        f"build_examples, MaskedExample.objects.create per example; timed on the first {n_maps} maps "
        f"and extrapolated linearly to {n_total} maps",
        "maps_timed": n_maps,
        "examples_written": examples,
        "seconds": round(seconds, 1),
        "maps_per_s": round(n_maps / seconds),
        "extrapolated_build_s": round(seconds * n_total / n_maps, 1),
    }


def bench_exports(dataset) -> dict:
    """Each export format of the built dataset into a temporary folder: time, size, peak RSS."""
    import tempfile

    from webapp.datasets.export import write_export

    out = {}
    with tempfile.TemporaryDirectory(prefix="dsm-bench-export-") as tmp:
        for fmt in ("jsonl", "parquet", "hf"):
            started = time.perf_counter()
            with PeakRss() as sampler:
                result = write_export(dataset, fmt, Path(tmp) / fmt, actor="bench")
            out[fmt] = {
                "seconds": round(time.perf_counter() - started, 1),
                "rows": result.rows,
                "mb": round(result.size_bytes / 2**20, 1),
                "rss_mb_peak": round(sampler.peak, 1),
                "rss_anon_mb_peak": round(sampler.peak_anon, 1),
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int, nargs="?", default=100_000, help="number of maps (default 100000)")
    parser.add_argument("--tokens", type=int, default=300, help="tokens per map (default 300)")
    parser.add_argument("--tasks-per-note", type=int, default=9, help="maps per note (default 9, the paper's)")
    parser.add_argument("--baseline-maps", type=int, default=2_000)
    parser.add_argument("--no-peaks-only", action="store_true", help="skip the peaks-only pass")
    parser.add_argument("--no-export", action="store_true", help="skip timing the three export formats")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--database-url",
        default="postgres://postgres@127.0.0.1:5432/dsm_bench_datasets",
        help="a database this script creates and drops",
    )
    parser.add_argument("--keep", action="store_true", help="keep the benchmark database")
    args = parser.parse_args()

    use_new_database(args.database_url)
    from django.core.management import call_command

    result = {
        "maps": args.n,
        "tokens_per_map": args.tokens,
        "tasks_per_note": args.tasks_per_note,
        "database": database_for(args.database_url)[0],
        "cpu_count": os.cpu_count(),
    }
    try:
        t = time.perf_counter()
        call_command("migrate", verbosity=0)
        result["migrate_s"] = round(time.perf_counter() - t, 1)
        objects, timings = insert_inputs(args)
        result["notes"] = objects["notes"]
        result["insert"] = timings
        from django.db import connection

        with connection.cursor() as cur:
            cur.execute("SELECT avg(octet_length(data)), avg(n_tokens) FROM pipeline_relevancemap")
            avg_data, avg_tokens = cur.fetchone()
        maps_storage = storage("pipeline_relevancemap")
        result["map_storage"] = {  # data: a map's scores; its note's offsets are in the offsets table
            "avg_data_bytes": round(float(avg_data), 1),
            "avg_data_bytes_per_token": round(float(avg_data) / float(avg_tokens), 2),
            **maps_storage,
        }
        result["offsets_storage"] = storage("pipeline_notetokens")
        from webapp.datasets.models import DatasetVersion

        result["build"], dataset = bench_build(objects)
        result["example_storage"] = storage("datasets_maskedexample")
        if not args.no_peaks_only:
            result["peaks_only"] = bench_peaks_only(dataset)
        if not args.no_export:
            result["rss_mb_before_exports"] = round(rss_mb(), 1)
            result["rss_anon_mb_before_exports"] = round(rss_mb("RssAnon"), 1)
            result["exports"] = bench_exports(
                DatasetVersion.objects.select_related("corpus", "model_version", "profile").get(pk=dataset.pk)
            )
        result["baseline"] = base = bench_baseline(objects, args.n, min(args.baseline_maps, args.n))
        result["speedup_vs_baseline"] = round(base["extrapolated_build_s"] / result["build"]["build_s"], 1)
        result["peak_rss_mb_process"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    finally:
        if not args.keep:
            drop_database(args.database_url)
    result["machine"] = describe()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
