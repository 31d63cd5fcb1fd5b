"""Benchmark the review pages' server time on PostgreSQL; prints JSON.

    .venv/bin/python benchmarks/review_pages.py            # 100,000 maps
    .venv/bin/python benchmarks/review_pages.py 20000 --requests 30

Runs in a DEDICATED database (default `dsm_bench_review` on 127.0.0.1, or --database-url): it is
created and migrated, used, and dropped at the end (--keep to keep it), so nothing is left behind.
The schema, database helpers and timing conventions are those of benchmarks/dataset_builds.py.

Data: N maps (default 100,000) over N / 9 synthetic emergency-department notes of ml.synthetic
(9 tasks a note, the paper's sampling), tokenised into words and punctuation marks, with peaky
synthetic scores (noise plus a few bursts, normalised to a maximum of 1): notes written with
COPY, maps through RelevanceMap.objects.store. One extra note of exactly --note-tokens tokens
(default 1,000) with its map is the re-highlight subject.

Measured through Django's test Client in this process (middleware, session, view, template: the
server's whole work for a request; no network):
1. re-highlight: GET of the note panel as htmx sends it while a slider moves (HX-Request,
   HX-Target: note-panel), thresholds and kernel varied on every request; median and p95 over
   --requests requests after 3 warm-up requests; plus the panel-building time the page reports.
2. corpus preview: the first request (draws and stores the sample of SAMPLE_SIZE maps, loads
   them), then warm requests with varied settings; median and p95.
3. the task-specificity note: the panel of a note with 9 tasks' maps, with and without the step
   that compares this task's peaks with the other 8 (requests alternating, same process).
4. the note browser page, unfiltered (keyset page of 50); with the "partly reviewed" filter,
   which matches nothing here (no decisions), so the page looks at its whole window
   (browse.SCAN notes); and with the "undecided" filter, which nearly every note matches.
5. baselines in the same process, on the same data:
   - re-highlight: the map as an ORM instance, scipy find_peaks on it, word extension, then a
     Python loop that checks every token against every peak and gold span and renders one
     Django-template fragment per token;
   - preview: the sample's maps as ORM instances one by one (with their note), find_peaks per
     map, word extension, ml.masking.build_examples.
   Ratios are baseline median / measured median. The re-highlight baseline does no page around its
   work (no session, auth, selection or template), so it is also compared with the panel-building
   time alone (the same work: map, peaks, segments, HTML). The machine's load average is printed:
   on a shared machine the absolute times move with it.
"""

import argparse
import json
import os
import re
import statistics
import sys
import time
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
TASKS_PER_NOTE = 9


def summary(seconds: list[float]) -> dict:
    ms = sorted(s * 1000 for s in seconds)
    return {
        "n": len(ms),
        "median_ms": round(statistics.median(ms), 2),
        "p95_ms": round(ms[min(len(ms) - 1, int(round(0.95 * (len(ms) - 1))))], 2),
        "min_ms": round(ms[0], 2),
        "max_ms": round(ms[-1], 2),
    }


def peaky_scores(rng, n: int):
    import numpy as np

    scores = rng.exponential(0.04, n).astype(np.float32)
    for _ in range(int(rng.poisson(3)) + 1):
        start, width = int(rng.integers(0, n)), int(rng.integers(1, 6))
        scores[start : start + width] = np.maximum(scores[start : start + width], rng.uniform(0.3, 1.0))
    return scores / scores.max()


def offsets_of(text: str):
    import numpy as np

    return np.array([m.span() for m in TOKEN.finditer(text)], np.int32).reshape(-1, 2)


def insert_inputs(n_maps: int, seed: int) -> dict:
    """Notes of ml.synthetic (COPY) and their maps (RelevanceMap.objects.store); returns the objects and timings."""
    import hashlib

    import numpy as np
    from django.db import connection
    from django.utils import timezone

    from ml.synthetic import generate_notes
    from webapp.corpus.models import Corpus, Task
    from webapp.pipeline.models import ModelVersion, PeakProfile, RelevanceMap, StoredArrays

    rng = np.random.default_rng(seed)
    corpus = Corpus.objects.create(project=default_project(), name="bench-review", language="en")
    tasks = [
        Task.objects.create(slug=f"bench-task-{i}", description=f"bench task {i}", options=["y", "n"])
        for i in range(TASKS_PER_NOTE)
    ]
    model = ModelVersion.objects.create(name="bench-model", family="llama", path="bench-model")
    profile = PeakProfile.objects.create(name="bench-paper", kernel_size=3, sigma=1.0, lower=0.2, upper=0.4)
    n_notes = -(-n_maps // TASKS_PER_NOTE)
    now = timezone.now()
    connection.ensure_connection()
    raw = connection.connection
    started = time.perf_counter()
    made = tokens = 0
    chunk = 2_000
    for first in range(0, n_notes, chunk):
        notes = [(s.id, s.text) for s in generate_notes(min(chunk, n_notes - first), seed=seed, start=first)]
        with raw.cursor() as cur:
            with cur.copy(
                "COPY corpus_note (corpus_id, external_id, text, content_hash, metadata, created) FROM STDIN"
            ) as copy:
                for external_id, text in notes:
                    copy.write_row((corpus.pk, external_id, text, hashlib.sha256(text.encode()).hexdigest(), "{}", now))
            cur.execute(
                "SELECT id FROM corpus_note WHERE corpus_id = %s AND external_id = ANY(%s) ORDER BY external_id",
                [corpus.pk, [e for e, _ in notes]],
            )
            ids = [row[0] for row in cur.fetchall()]
        computed = []
        for note_id, (_, text) in zip(ids, sorted(notes)):
            offsets = offsets_of(text)
            for task in tasks:
                if made == n_maps:
                    break
                computed.append(((note_id, task.pk), StoredArrays(offsets, peaky_scores(rng, len(offsets)))))
                made += 1
                tokens += len(offsets)
        for start in range(0, len(computed), 1_000):  # the app's one writer of maps, a chunk's worth at a time
            RelevanceMap.objects.store(
                computed[start : start + 1_000],
                model_version_id=model.pk,
                method="attnlrp",
                template="en",
                config_key="",
            )
    with connection.cursor() as cur:
        cur.execute("ANALYZE corpus_note")
        cur.execute("ANALYZE pipeline_relevancemap")
    return {
        "corpus": corpus,
        "tasks": tasks,
        "model": model,
        "profile": profile,
        "notes": n_notes,
        "maps": made,
        "mean_tokens_per_map": round(tokens / made, 1),
        "insert_s": round(time.perf_counter() - started, 1),
    }


def long_note(objects: dict, n_tokens: int, seed: int):
    """A note of exactly n_tokens word/punctuation tokens (synthetic notes joined), with a map."""
    import numpy as np

    from ml.synthetic import generate_notes
    from webapp.corpus.models import Note
    from webapp.pipeline.models import RelevanceMap

    parts, count, start = [], 0, 10_000_000
    for synthetic in generate_notes(100, seed=seed + 1, start=start):
        parts.append(synthetic.text)
        count += len(TOKEN.findall(synthetic.text))
        if count >= n_tokens:
            break
    text = "\n\n".join(parts)
    offsets = offsets_of(text)[:n_tokens]
    text = text[: int(offsets[-1, 1])]
    note = Note.objects.create(corpus=objects["corpus"], external_id="bench-long", text=text)
    scores = peaky_scores(np.random.default_rng(seed), n_tokens)
    RelevanceMap.objects.store_one(note, objects["tasks"][0], objects["model"], offsets, scores)
    return note, offsets


def settings_cycle(k: int) -> dict:
    """The k-th slider setting: thresholds and kernel moving as a clinician drags them."""
    lowers = [0.1, 0.15, 0.2, 0.25, 0.3]
    uppers = [0.35, 0.4, 0.5, 0.6, 0.7, 0.8]
    return {
        "k": [1, 3, 5][k % 3],
        "sigma": [1.0, 1.25, 0.75][k % 3],
        "lower": lowers[k % len(lowers)],
        "upper": uppers[k % len(uppers)],
    }


def bench_rehighlight(client, note, objects, requests: int) -> dict:
    from django.urls import reverse

    url = reverse("review:note", args=[note.corpus_id, note.pk])
    base = {
        "task": objects["tasks"][0].pk,
        "model": objects["model"].pk,
        "method": "attnlrp",
        "template": "en",
        "profile": objects["profile"].pk,
    }
    headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "note-panel"}
    times, panel_ms = [], []
    for k in range(requests + 3):
        started = time.perf_counter()
        response = client.get(url, {**base, **settings_cycle(k)}, **headers)
        elapsed = time.perf_counter() - started
        if response.status_code != 200:
            raise SystemExit(f"re-highlight request failed: {response.status_code}")
        if k >= 3:
            times.append(elapsed)
            panel_ms.append(float(re.search(rb"shown in ([0-9.]+) ms", response.content).group(1)))
    return {
        **summary(times),
        "panel_build_median_ms": round(statistics.median(panel_ms), 2),
        "response_bytes": len(response.content),
    }


def bench_specificity_note(client, objects, requests: int) -> dict:
    """The note panel of a note with maps for 9 tasks, with its task-specificity note (the other
    8 maps read, their peaks found, ml.specificity) against the same panel with that step
    skipped, in the same process, requests alternating between the two."""
    from django.urls import reverse

    from webapp.pipeline.models import RelevanceMap
    from webapp.review import noteview

    task = objects["tasks"][0]
    row = RelevanceMap.objects.filter(task=task, model_version=objects["model"]).order_by("pk").first()
    others = RelevanceMap.objects.filter(note_id=row.note_id, model_version=objects["model"]).count() - 1
    url = reverse("review:note", args=[objects["corpus"].pk, row.note_id])
    query = {"task": task.pk, "model": objects["model"].pk, "method": "attnlrp", "template": "en"}
    query["profile"] = objects["profile"].pk
    headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "note-panel"}
    with_note, without, shown = [], [], None
    measured = noteview.specificity
    for k in range(2 * requests + 4):
        skip = k % 2 == 1
        noteview.specificity = (lambda *args: None) if skip else measured
        try:
            started = time.perf_counter()
            response = client.get(url, query, **headers)
            elapsed = time.perf_counter() - started
        finally:
            noteview.specificity = measured
        if response.status_code != 200:
            raise SystemExit(f"note panel request failed: {response.status_code}")
        if not skip:
            shown = b'id="specificity-note"' in response.content
        if k >= 4:
            (without if skip else with_note).append(elapsed)
    a, b = summary(with_note), summary(without)
    return {
        "other_task_maps": others,
        "note_shown": shown,
        "with_specificity": a,
        "without_specificity": b,
        "added_median_ms": round(a["median_ms"] - b["median_ms"], 2),
    }


def bench_preview(client, objects, requests: int) -> dict:
    from django.urls import reverse

    from webapp.review import tuning

    url = reverse("review:preview", args=[objects["corpus"].pk])
    base = {"model": objects["model"].pk, "method": "attnlrp", "template": "en", "profile": objects["profile"].pk}
    headers = {"HTTP_HX_REQUEST": "true"}
    started = time.perf_counter()
    with PeakRss() as sampler:
        response = client.get(url, {**base, **settings_cycle(0)}, **headers)
    cold = time.perf_counter() - started
    assert response.status_code == 200, response.status_code
    times = []
    for k in range(1, requests + 1):
        started = time.perf_counter()
        response = client.get(url, {**base, **settings_cycle(k)}, **headers)
        times.append(time.perf_counter() - started)
    shown = re.search(rb"sample of <strong>(\d+)</strong> of (\d+) maps", response.content)
    return {
        "sample_size": int(shown.group(1)),
        "population": int(shown.group(2)),
        "first_request_ms_draws_and_loads_the_sample": round(cold * 1000, 1),
        "rss_mb_peak_first_request": round(sampler.peak, 1),
        "warm": summary(times),
        "sample_setting": tuning.SAMPLE_SIZE,
    }


def bench_browser(client, objects, requests: int) -> dict:
    from django.urls import reverse

    url = reverse("review:notes", args=[objects["corpus"].pk])
    base = {"model": objects["model"].pk, "profile": objects["profile"].pk}
    out = {}
    from webapp.review import browse

    cases = (
        ("unfiltered_page_of_50", {}),
        (f"state_filter_window_{browse.SCAN}_notes", {"state": "partly"}),
        ("state_undecided_page_of_50", {"state": "undecided"}),
    )
    for name, extra in cases:
        times = []
        for _ in range(max(3, requests // 5)):
            started = time.perf_counter()
            response = client.get(url, {**base, **extra})
            times.append(time.perf_counter() - started)
            assert response.status_code == 200
        out[name] = summary(times)
    return out


def baseline_rehighlight(note, objects, requests: int) -> dict:
    """ORM instance, scipy find_peaks, word extension, per-token loop with a template per token."""
    from django.template import Context, Template

    from ml.peaks import PeakParams, extend_to_words, find_peaks, peak_char_spans
    from webapp.corpus.models import Annotation
    from webapp.pipeline.models import RelevanceMap

    token_template = Template(
        '<span class="r{{ level }}{% if peak %} peak{% endif %}{% if gold %} g{% endif %}" '
        'title="{{ score|floatformat:2 }}">{{ text }}</span>'
    )
    times = []
    for k in range(requests):
        params = settings_cycle(k)
        started = time.perf_counter()
        m = RelevanceMap.objects.select_related("note", "tokens").get(note=note, task=objects["tasks"][0])
        offsets, scores = m.arrays()
        text = m.note.text
        spans = find_peaks(
            scores,
            PeakParams(kernel_size=params["k"], sigma=params["sigma"], lower=params["lower"], upper=params["upper"]),
        )
        peaks = peak_char_spans(extend_to_words(spans, offsets, text), offsets, text)
        gold = [tuple(e) for a in Annotation.objects.filter(note=note) for e in a.evidence]
        html, position = [], 0
        for (a, b), score in zip(offsets.tolist(), scores.tolist()):
            if a > position:
                html.append(text[position:a])
            in_peak = any(pa <= a < pb for pa, pb in peaks)
            in_gold = any(ga <= a < gb for ga, gb in gold)
            html.append(
                token_template.render(
                    Context(
                        {
                            "level": min(7, int(score * 8)),
                            "peak": in_peak,
                            "gold": in_gold,
                            "score": score,
                            "text": text[a:b],
                        }
                    )
                )
            )
            position = b
        html.append(text[position:])
        "".join(html)
        times.append(time.perf_counter() - started)
    return {
        "method": "ORM instance + scipy find_peaks + word extension + a per-token Python loop (peak and gold "
        "membership by scanning the spans) rendering one Django template per token; no page around it",
        **summary(times),
    }


def baseline_preview(objects, requests: int) -> dict:
    from ml.masking import Group, PeakItem, build_examples
    from ml.peaks import PeakParams, extend_to_words, find_peaks, peak_char_spans
    from webapp.pipeline.models import RelevanceMap
    from webapp.review.models import MapSample

    sample = MapSample.objects.get(corpus=objects["corpus"])
    times = []
    for k in range(requests):
        params = settings_cycle(k)
        started = time.perf_counter()
        items = []
        for pk in sample.map_ids:
            m = RelevanceMap.objects.select_related("note", "tokens").get(pk=pk)
            offsets, scores = m.arrays()
            spans = find_peaks(
                scores,
                PeakParams(
                    kernel_size=params["k"], sigma=params["sigma"], lower=params["lower"], upper=params["upper"]
                ),
            )
            words = extend_to_words(spans, offsets, m.note.text)
            chars = peak_char_spans(words, offsets, m.note.text)
            groups = [Group(c, w) for c, w in zip(chars, words)]
            items.append(PeakItem(str(m.note_id), str(m.task_id), m.note.text, groups))
        items.sort(key=lambda item: (int(item.note_id), int(item.task)))
        examples = sum(1 for _ in build_examples(items))
        times.append(time.perf_counter() - started)
    return {
        "method": "the sample's maps as ORM instances one by one (with their note), scipy find_peaks per map, "
        "word extension, ml.masking.build_examples",
        "examples_last": examples,
        **summary(times),
    }


def main() -> None:
    serve_pages_as_the_tests_do()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int, nargs="?", default=100_000, help="number of maps (default 100000)")
    parser.add_argument("--note-tokens", type=int, default=1_000)
    parser.add_argument("--requests", type=int, default=60, help="timed re-highlight requests (default 60)")
    parser.add_argument("--preview-requests", type=int, default=15)
    parser.add_argument("--baseline-requests", type=int, default=3, help="timed runs of the preview baseline")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--database-url",
        default="postgres://postgres@127.0.0.1:5432/dsm_bench_review",
        help="a database this script creates and drops",
    )
    parser.add_argument("--keep", action="store_true", help="keep the benchmark database")
    args = parser.parse_args()

    use_new_database(args.database_url)
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client

    result = {"database": database_for(args.database_url)[0], "cpu_count": os.cpu_count()}
    try:
        call_command("migrate", verbosity=0)
        objects = insert_inputs(args.n, args.seed)
        result["data"] = {k: objects[k] for k in ("notes", "maps", "mean_tokens_per_map", "insert_s")}
        note, offsets = long_note(objects, args.note_tokens, args.seed)
        result["data"]["rehighlight_note"] = {"tokens": len(offsets), "characters": len(note.text)}
        user = User.objects.create_user("bench-clinician", password="bench-password-123")
        member(user, "clinician")
        client = Client()
        client.force_login(user)
        result["rehighlight"] = bench_rehighlight(client, note, objects, args.requests)
        result["specificity_note"] = bench_specificity_note(client, objects, args.requests)
        result["preview"] = bench_preview(client, objects, args.preview_requests)
        result["note_browser"] = bench_browser(client, objects, args.requests)
        result["baseline_rehighlight"] = baseline_rehighlight(note, objects, max(10, args.requests // 3))
        result["baseline_preview"] = baseline_preview(objects, args.baseline_requests)
        result["ratio_rehighlight_baseline_over_measured"] = round(
            result["baseline_rehighlight"]["median_ms"] / result["rehighlight"]["median_ms"], 1
        )
        result["ratio_rehighlight_baseline_over_panel_build"] = round(
            result["baseline_rehighlight"]["median_ms"] / result["rehighlight"]["panel_build_median_ms"], 1
        )
        result["load_average_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
        result["ratio_preview_baseline_over_measured"] = round(
            result["baseline_preview"]["median_ms"] / result["preview"]["warm"]["median_ms"], 1
        )
        result["rss_mb_end"] = round(rss_mb(), 1)
    finally:
        if not args.keep:
            drop_database(args.database_url)
    result["machine"] = describe()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
