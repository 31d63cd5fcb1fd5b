"""Benchmark the pages of the largest note an import accepts, windowed and whole; prints JSON.

    .venv/bin/python benchmarks/long_note.py                 # settings.IMPORT_MAX_NOTE_CHARS
    .venv/bin/python benchmarks/long_note.py --chars 2000000 --requests 5

Runs in a DEDICATED database (default `dsm_bench_long_note` on 127.0.0.1, or --database-url): it is
created and migrated, used, and dropped at the end (--keep to keep it). Database helpers and the
RSS sampler are those of benchmarks/dataset_builds.py.

Data: one note of exactly --chars characters (default settings.IMPORT_MAX_NOTE_CHARS): emergency
department notes of ml.synthetic joined into one long record, tokenised into words and
punctuation marks, with a relevance map over EVERY token (noise plus a burst about every
--burst-every tokens, so peaks run along the whole note), and gold evidence spans spread over it.
A second model version (a DSM child of the first) has its own map of the note, with bursts of its
own. A second note, the same text, has maps of its first --context tokens only (a model's context).
A validation set holds the note under the paper's grid of 8 settings (forms.DEFAULT_GRID).

Measured through Django's test Client in this process (middleware, session, view, template: the
server's whole work for a request; no network), as a clinician:
1. windowed (the pages as they are): the review note page (full page) on its first window and on
   a middle window; the htmx panel that `j` asks for when it crosses into the next window
   (peak=N); the review page of the cut map on the window where the map ends; the corpus note page;
   the base vs DSM comparison page (two heatmaps and their difference) on its first and a middle
   window and, for the cut maps, where they end; the validation round on its first and a middle
   window.
2. baseline, in the same process on the same notes: the same pages rendering the whole note at
   once (windows.WINDOW_CHARS set past the note's length: one window, i.e. the pages before
   windows).
For each: median and max wall time over --requests requests (after one warm-up), the response
size, the peak of Python allocations during one request (tracemalloc, its own request: it slows
allocation), and the growth of the process's resident memory over the timed requests (peak RSS,
sampled every 50 ms, minus RSS before). The windowed pages run first: RSS rarely goes back down,
so the baseline's growth is measured from where the windowed runs left it. The machine's load
average is printed at the start and at the end: on a shared machine the absolute times move with it.
"""

import argparse
import json
import os
import re
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.database import (  # noqa: E402
    PeakRss,
    database_for,
    drop_database,
    rss_mb,
    serve_pages_as_the_tests_do,
    use_new_database,
)
from benchmarks.machine import describe  # noqa: E402
from benchmarks.projects import default_project, member  # noqa: E402

TOKEN = re.compile(r"\w+|[^\w\s]")
TARGET_MS, TARGET_MB = 1_000, 200  # target: the largest allowed note's review page in under 1 s and 200 MB


def long_record(n_chars: int, seed: int) -> str:
    """Synthetic notes joined until n_chars characters, cut there."""
    from ml.synthetic import generate_notes

    parts, size, start = [], 0, 0
    while size < n_chars:
        for note in generate_notes(200, seed=seed, start=start):
            parts.append(note.text)
            size += len(note.text) + 2
        start += 200
    return "\n\n".join(parts)[:n_chars]


def offsets_of(text: str):
    import numpy as np

    return np.array([m.span() for m in TOKEN.finditer(text)], np.int32).reshape(-1, 2)


def scores_along(rng, n: int, burst_every: int):
    """Noise plus a burst of 1-5 tokens about every burst_every tokens, normalised to a maximum of 1."""
    import numpy as np

    scores = rng.exponential(0.04, n).astype(np.float32)
    for start in rng.integers(0, n, size=max(1, n // burst_every)).tolist():
        width = int(rng.integers(1, 6))
        scores[start : start + width] = np.maximum(scores[start : start + width], rng.uniform(0.3, 1.0))
    return scores / scores.max()


def make_inputs(args) -> dict:
    import numpy as np

    from webapp.corpus.models import Annotation, Corpus, Note, Task
    from webapp.pipeline.models import ModelVersion, PeakProfile, RelevanceMap
    from webapp.review.forms import DEFAULT_GRID
    from webapp.review.models import ValidationSet

    rng = np.random.default_rng(args.seed)
    text = long_record(args.chars, args.seed)
    corpus = Corpus.objects.create(project=default_project(), name="bench-long-note", language="en")
    task = Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    model = ModelVersion.objects.create(name="bench-model", family="llama", path="bench-model")
    dsm = ModelVersion.objects.create(name="bench-dsm", family="llama", path="bench-dsm", parent=model)
    profile = PeakProfile.objects.create(name="bench-paper", kernel_size=3, sigma=1.0, lower=0.2, upper=0.4)
    full = Note.objects.create(corpus=corpus, external_id="longest", text=text)
    cut = Note.objects.create(corpus=corpus, external_id="longest-cut", text=text)
    offsets = offsets_of(text)
    scores = scores_along(rng, len(offsets), args.burst_every)
    dsm_scores = scores_along(rng, len(offsets), args.burst_every)
    for note, n in ((full, len(offsets)), (cut, min(args.context, len(offsets)))):
        for version, values in ((model, scores), (dsm, dsm_scores)):
            RelevanceMap.objects.store_one(note, task, version, offsets[:n], values[:n])
    words = [m.span() for m in re.finditer(r"\w+", text)]
    evidence = [list(words[k]) for k in rng.choice(len(words), size=min(50, len(words)), replace=False).tolist()]
    Annotation.objects.create(note=full, task=task, label="y", annotator_name="gold", evidence=evidence)
    vset = ValidationSet.objects.create(
        corpus=corpus,
        model_version=model,
        method="attnlrp",
        template="en",
        name="bench-round",
        grid=list(DEFAULT_GRID),
        items=[[full.pk, task.pk]],
    )
    return {
        "full": full,
        "cut": cut,
        "task": task,
        "model": model,
        "dsm": dsm,
        "profile": profile,
        "vset": vset,
        "tokens": len(offsets),
        "context_end": int(offsets[min(args.context, len(offsets)) - 1, 1]),
    }


def measure(client, path: str, params: dict, requests: int, headers: dict | None = None) -> dict:
    """Wall time over `requests` requests after one warm-up, RSS growth over them, response size,
    and the tracemalloc peak of one more request."""
    headers = headers or {}
    response = client.get(path, params, **headers)
    assert response.status_code == 200, (path, response.status_code)
    before = rss_mb()
    times = []
    with PeakRss() as sampler:
        for _ in range(requests):
            started = time.perf_counter()
            response = client.get(path, params, **headers)
            times.append(time.perf_counter() - started)
    tracemalloc.start()
    client.get(path, params, **headers)
    traced_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    built = re.search(rb"shown in ([0-9.]+) ms", response.content)
    ms = sorted(t * 1000 for t in times)
    return {
        "requests": len(ms),
        "median_ms": round(statistics.median(ms), 1),
        "max_ms": round(ms[-1], 1),
        "panel_build_ms": float(built.group(1)) if built else None,
        "response_bytes": len(response.content),
        "tracemalloc_peak_mb": round(traced_peak / 2**20, 1),
        "rss_growth_mb": round(sampler.peak - before, 1),
        "rss_anon_peak_mb": round(sampler.peak_anon, 1),
    }


def summary(figures: dict) -> str:
    return (
        f"{figures['median_ms']} ms median, {figures['response_bytes']:,} bytes, "
        f"{figures['tracemalloc_peak_mb']} MB traced, +{figures['rss_growth_mb']} MB RSS"
    )


def pages(client, objects, requests: int) -> dict:
    """Every page measured, as {name: figures}."""
    from django.urls import reverse

    from webapp.lib import windows
    from webapp.review import noteview, selection

    full, cut = objects["full"], objects["cut"]
    base = {
        "task": objects["task"].pk,
        "model": objects["model"].pk,
        "method": "attnlrp",
        "template": "en",
        "profile": objects["profile"].pk,
    }
    review = reverse("review:note", args=[full.corpus_id, full.pk])
    parts = windows.windows(full.text)
    middle = parts[len(parts) // 2]
    # the peak `j` asks for when it leaves the first window: the first one of the next window
    sel = selection.for_note(full, base)
    first_panel = noteview.build_panel(full, sel, client.user, window=0)
    next_peak = first_panel.shown.stop + 1 if first_panel.shown.stop < first_panel.n_peaks else 1
    cut_window = windows.holding(parts, objects["context_end"]).index
    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "note-panel"}
    pair = {**base, "a": objects["model"].pk, "b": objects["dsm"].pk}
    rounds = reverse("review:validation_round", args=[objects["vset"].pk])
    return {
        "review_page_first_window": measure(client, review, base, requests),
        "review_page_middle_window": measure(client, review, {**base, "window": middle.index}, requests),
        "review_panel_j_into_next_window": measure(client, review, {**base, "peak": next_peak}, requests, htmx),
        "review_page_cut_map_where_it_ends": measure(
            client, reverse("review:note", args=[cut.corpus_id, cut.pk]), {**base, "window": cut_window}, requests
        ),
        "corpus_note_page": measure(client, reverse("corpus:note", args=[full.corpus_id, full.pk]), {}, requests),
        "compare_page_first_window": measure(
            client, reverse("review:compare", args=[full.corpus_id, full.pk]), pair, requests
        ),
        "compare_page_middle_window": measure(
            client,
            reverse("review:compare", args=[full.corpus_id, full.pk]),
            {**pair, "window": middle.index},
            requests,
        ),
        "compare_page_cut_maps_where_they_end": measure(
            client, reverse("review:compare", args=[cut.corpus_id, cut.pk]), {**pair, "window": cut_window}, requests
        ),
        "validation_round_first_window": measure(client, rounds, {}, requests),
        "validation_round_middle_window": measure(client, rounds, {"note": full.pk, "window": middle.index}, requests),
    }


def main() -> None:
    serve_pages_as_the_tests_do()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", type=int, default=None, help="note length (default IMPORT_MAX_NOTE_CHARS)")
    parser.add_argument("--context", type=int, default=8_192, help="tokens of the cut map (default 8192)")
    parser.add_argument("--burst-every", type=int, default=60, help="tokens between relevance bursts (default 60)")
    parser.add_argument("--requests", type=int, default=10, help="timed requests a page (default 10)")
    parser.add_argument("--baseline-requests", type=int, default=3, help="timed requests a whole-note page")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--database-url",
        default="postgres://postgres@127.0.0.1:5432/dsm_bench_long_note",
        help="a database this script creates and drops",
    )
    parser.add_argument("--keep", action="store_true", help="keep the benchmark database")
    args = parser.parse_args()

    use_new_database(args.database_url)
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client

    from webapp.lib import windows

    args.chars = args.chars or settings.IMPORT_MAX_NOTE_CHARS
    result = {
        "database": database_for(args.database_url)[0],
        "cpu_count": os.cpu_count(),
        "target": {"median_ms_below": TARGET_MS, "rss_growth_mb_below": TARGET_MB},
    }
    try:
        call_command("migrate", verbosity=0)
        objects = make_inputs(args)
        user = User.objects.create_user("bench-clinician", password="bench-password-123")
        member(user, "clinician")
        client = Client()
        client.force_login(user)
        client.user = user
        result["note"] = {
            "characters": len(objects["full"].text),
            "tokens": objects["tokens"],
            "window_chars": windows.WINDOW_CHARS,
            "windows": len(windows.windows(objects["full"].text)),
            "cut_map_tokens": min(args.context, objects["tokens"]),
        }
        result["rss_mb_start"] = round(rss_mb(), 1)
        result["load_average_1_5_15_start"] = [round(x, 2) for x in os.getloadavg()]
        result["windowed"] = pages(client, objects, args.requests)
        windowed_max = windows.WINDOW_CHARS
        windows.WINDOW_CHARS = len(objects["full"].text) + 1  # one window: the whole note at once
        try:
            result["baseline_whole_note"] = pages(client, objects, args.baseline_requests)
        finally:
            windows.WINDOW_CHARS = windowed_max
        for name, figures in result["windowed"].items():
            whole = result["baseline_whole_note"][name]
            figures["ratio_baseline_over_windowed_median"] = round(whole["median_ms"] / figures["median_ms"], 1)
        result["meets_target"] = all(
            f["median_ms"] < TARGET_MS and f["rss_growth_mb"] < TARGET_MB for f in result["windowed"].values()
        )
        for name in ("review_page_first_window", "compare_page_first_window", "validation_round_first_window"):
            result[f"{name}_summary"] = {
                kind: summary(result[kind][name]) for kind in ("windowed", "baseline_whole_note")
            }
        result["load_average_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
        result["rss_mb_end"] = round(rss_mb(), 1)
    finally:
        if not args.keep:
            drop_database(args.database_url)
    result["machine"] = describe()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
