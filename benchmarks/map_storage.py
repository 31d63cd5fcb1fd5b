"""Bytes a token of stored relevance maps, all in (table, TOAST and every index), in PostgreSQL.

Writes N notes x 9 maps (one a task, as a relevance job does) of about 300 tokens through the
app's one writer, `RelevanceMap.objects.store`, in job-chunk-sized batches, into a database it
makes and drops (benchmarks.database), then reads the sizes of the maps table and the offsets
table (pipeline_notetokens) and each of their indexes. Token offsets are those of the local
model's tokenizer on synthetic notes (ml.synthetic) when var/models has it, else word and
punctuation offsets. Baseline: the earlier layout's blob (ml.codec.encode_map: scores and
offsets in every map, ~6 bytes a token) for the same maps, its bytes alone.

    python -m benchmarks map-storage [--notes 2000] [--tokens 300]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

from benchmarks.database import database_for, drop_database, use_new_database
from benchmarks.machine import describe
from benchmarks.projects import default_project  # noqa: E402

TASKS_PER_NOTE = 9
TOKENIZER = Path(__file__).resolve().parents[1] / "var" / "models" / "smollm2-135m-instruct"
WORD = re.compile(r"\w+|[^\w\s]")


def note_offsets(n_notes: int, tokens: int, seed: int):
    """[(text, offsets (n, 2))] of n_notes notes of tokens +- 10% tokens each, and the tokenizer's name."""
    import numpy as np

    from ml.synthetic import generate_notes

    tokenize, name = _tokenizer()
    rng = np.random.default_rng(seed)
    pool = iter(generate_notes(n_notes * 40, seed=seed))
    made = []
    for _ in range(n_notes):
        want = int(tokens * rng.uniform(0.9, 1.1))
        text, offsets = "", np.zeros((0, 2), np.int32)
        while len(offsets) < want:
            text = (text + "\n\n" + next(pool).text).lstrip()
            offsets = tokenize(text)
        offsets = offsets[:want]
        made.append((text[: int(offsets[-1, 1])], offsets))
    return made, name


def _tokenizer():
    import numpy as np

    if (TOKENIZER / "tokenizer.json").exists():
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(TOKENIZER))

        def tokenize(text):
            found = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
            return np.asarray(found, np.int32).reshape(-1, 2)

        return tokenize, TOKENIZER.name
    return (lambda text: np.array([m.span() for m in WORD.finditer(text)], np.int32).reshape(-1, 2)), "words"


def store_maps(notes, batch: int, seed: int) -> dict:
    """The notes, 9 tasks and one model version; 9 maps a note through `store`. Returns counts."""
    import numpy as np

    from benchmarks.peaks import synthetic_maps
    from ml.codec import encode_map
    from webapp.corpus.models import Corpus, Note, Task, text_hash
    from webapp.pipeline.models import ModelVersion, RelevanceMap, StoredArrays

    corpus = Corpus.objects.create(project=default_project(), name="bench-map-storage", language="en")
    tasks = [
        Task.objects.create(slug=f"bench-task-{i}", description=f"bench task {i}", options=["y", "n"])
        for i in range(TASKS_PER_NOTE)
    ]
    model = ModelVersion.objects.create(name="bench-model", family="llama", path="bench-model")
    made = Note.objects.bulk_create(
        [
            Note(corpus=corpus, external_id=f"b{i:07d}", text=text, content_hash=text_hash(text))
            for i, (text, _) in enumerate(notes)
        ],
        batch_size=1_000,
    )
    computed, tokens, old_bytes, started = [], 0, 0, time.perf_counter()
    for k, (note, (_, offsets)) in enumerate(zip(made, notes)):
        scores = synthetic_maps(TASKS_PER_NOTE, len(offsets), seed=seed + k)
        for task, row in zip(tasks, scores):
            computed.append(((note.pk, task.pk), StoredArrays(offsets, np.asarray(row, np.float32), "Yes")))
            tokens += len(offsets)
            old_bytes += len(encode_map(offsets, row))
    store_s = time.perf_counter()
    for start in range(0, len(computed), batch):
        RelevanceMap.objects.store(
            computed[start : start + batch], model_version_id=model.pk, method="attnlrp", template="en", config_key=""
        )
    done = time.perf_counter()
    return {
        "maps": len(computed),
        "tokens": tokens,
        "old_blob_bytes": old_bytes,
        "store_s": round(done - store_s, 1),
        "maps_per_s": round(len(computed) / (done - store_s)),
        "prepare_s": round(store_s - started, 1),
    }


def sizes(tables: list[str]) -> dict:
    """Each table's heap, TOAST (with its index), free-space and visibility maps, and each index."""
    from django.db import connection

    out = {}
    with connection.cursor() as cur:
        for table in tables:
            cur.execute(
                "SELECT pg_total_relation_size(%s), pg_relation_size(%s), pg_indexes_size(%s), "
                "coalesce((SELECT pg_total_relation_size(reltoastrelid) FROM pg_class "
                "WHERE oid = %s::regclass AND reltoastrelid <> 0), 0)",
                [table] * 4,
            )
            total, heap, indexes, toast = cur.fetchone()
            cur.execute(f"SELECT count(*) FROM {table}")
            (rows,) = cur.fetchone()
            cur.execute(
                "SELECT indexrelid::regclass::text, pg_relation_size(indexrelid) FROM pg_index "
                "WHERE indrelid = %s::regclass ORDER BY 2 DESC",
                [table],
            )
            out[table] = {
                "rows": rows,
                "total_bytes": total,
                "heap_bytes": heap,
                "toast_bytes": toast,
                "other_forks_bytes": total - heap - indexes - toast,
                "index_bytes": indexes,
                "indexes": dict(cur.fetchall()),
            }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=2_000, help="notes, 9 maps each")
    parser.add_argument("--tokens", type=int, default=300, help="mean tokens a note (+- 10%%)")
    parser.add_argument("--batch", type=int, default=64, help="maps a store call (a job chunk's worth)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--database-url",
        default="postgres://postgres@127.0.0.1:5432/dsm_bench_map_storage",
        help="a database this script creates and drops",
    )
    parser.add_argument("--keep", action="store_true", help="keep the benchmark database")
    args = parser.parse_args(argv)

    load_before = os.getloadavg()
    notes, tokenizer = note_offsets(args.notes, args.tokens, args.seed)
    use_new_database(args.database_url)
    from django.core.management import call_command
    from django.db import connection

    result = {"notes": args.notes, "maps_per_note": TASKS_PER_NOTE, "tokenizer": tokenizer}
    try:
        call_command("migrate", verbosity=0)
        result.update(store_maps(notes, args.batch, args.seed))
        with connection.cursor() as cur:
            cur.execute("VACUUM ANALYZE pipeline_relevancemap")  # as autovacuum leaves a table at rest
            cur.execute("VACUUM ANALYZE pipeline_notetokens")
        tables = sizes(["pipeline_relevancemap", "pipeline_notetokens"])
        all_in = sum(t["total_bytes"] for t in tables.values())
        tokens, maps = result["tokens"], result["maps"]
        result["tokens_per_map"] = round(tokens / maps, 1)
        result["tables"] = tables
        result["bytes_per_token_all_in"] = round(all_in / tokens, 3)
        result["bytes_per_map_all_in"] = round(all_in / maps, 1)
        result["baseline"] = {
            "what": "the earlier layout's blob alone (scores and offsets in every map: ml.codec.encode_map)",
            "blob_bytes_per_token": round(result.pop("old_blob_bytes") / tokens, 3),
        }
        result["database"] = database_for(args.database_url)[0]
        result["loadavg_before"] = [round(x, 2) for x in load_before]
        result["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        if not args.keep:
            drop_database(args.database_url)
    result["machine"] = describe()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
