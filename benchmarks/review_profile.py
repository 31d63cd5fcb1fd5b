"""The review loop's server CPU per answer, in this process: what each of the three answers of
`review-load` (queue, note page, decision) costs the server, with where the time goes; prints
one JSON object.

    python -m benchmarks review-profile                   # 18,000 maps, 200 loops, 1 reviewer
    python -m benchmarks review-profile --loops 100 --top 20 --keep
    python -m benchmarks review-profile --reuse           # the database --keep left

Data: benchmarks.review_pages.insert_inputs, as review-load builds it (--maps maps over
--maps / 9 synthetic notes), in a DEDICATED database (default `dsm_bench_review_profile`, or
--database-url), migrated, vacuumed and analyzed, dropped at the end unless --keep; --reuse
takes the one a --keep left (new reviewers each run).

Settings: production's (`webapp.settings`, DEBUG off, the shared cache of REDIS_URL, which this
benchmark needs and clears first: use a Redis database of your own), requests over HTTPS as the
TLS proxy sends them, with CSRF checks on. Each reviewer is a clinician of the benchmark's
project and loops as review-load's do (benchmarks.review_load.review_loop): GET the queue after
the pair decided last (302 to the next pair), GET that note page, POST a decision on its first
undecided peak as htmx sends it (a urlencoded form, as review-load sends it too). The requests go
through Django's test Client without the test instrumentation (no template signals), so a
request's cost is the handler's: middleware, session, view, queries, template. Before the warm-up
the process settles as a gunicorn worker does once started (webapp.wsgi.settle_worker: every view
imported, what exists then frozen out of the garbage collector's full passes).

Per step: CPU milliseconds (time.process_time around the request: this process only, so
PostgreSQL's and Redis's work are not in it) as median, mean and p95 over --loops loops after
--warmup loops, wall milliseconds, and the database queries a request made; then, over
--profile-loops more loops under cProfile, each step's --top functions by their own time and by
cumulative time. The load average is printed with the figures: on a shared machine CPU time
per request grows with contention too (caches, frequency), less than wall time does.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.database import database_exists, drop_database, use_database, use_new_database  # noqa: E402
from benchmarks.machine import describe, load_average  # noqa: E402

STEPS = ("queue", "note", "decide")


class Loop:
    """One reviewer's review loop through Django's test Client; `step()` runs one request and
    returns (step name, CPU s, wall s, queries) or None when the loop starts over."""

    def __init__(self, client, corpus_id: int, query: dict, after: str, csrf: str):
        self.client, self.corpus_id, self.query, self.after, self.csrf = client, corpus_id, query, after, csrf
        self.pending = ("queue", None)
        self.decisions = 0

    def _get(self, path: str, **headers):
        return self.client.get(path, secure=True, **headers)

    def step(self, measure):
        from benchmarks.review_load import _decision_form

        name, arg = self.pending
        if name == "queue":
            path = f"/review/{self.corpus_id}/queue/?" + urlencode({**self.query, "after": self.after})
            response, cost = measure("queue", lambda: self._get(path))
            if response.status_code != 302:  # nothing after `after`: from the start again
                self.after = "0:0"
                return cost
            self.pending = ("note", response["Location"])
            return cost
        if name == "note":
            response, cost = measure("note", lambda: self._get(arg))
            if response.status_code != 200:
                raise SystemExit(f"note page answered {response.status_code}")
            form = _decision_form(response.content.decode())
            if form is None:
                raise SystemExit("no decide form on the note page")
            self.pending = ("decide", form)
            return cost
        form = dict(arg)
        action, target = form.pop("action"), form.pop("hx_target")
        body = {**form, "decision": "accept", "active_ms": "900"}
        response, cost = measure(
            "decide",
            lambda: self.client.post(
                action,
                urlencode(body),  # a form as htmx and review-load send it, not the test client's multipart
                content_type="application/x-www-form-urlencoded",
                secure=True,
                headers={
                    "HX-Request": "true",
                    "HX-Target": target,
                    "X-CSRFToken": self.csrf,
                    "Origin": "https://testserver",
                },
            ),  # fmt: skip
        )
        if response.status_code != 200:
            raise SystemExit(f"decision answered {response.status_code}: {response.content[:300]!r}")
        self.after = f"{action.split('/')[-3]}:{form['task']}"
        self.decisions += 1
        self.pending = ("queue", None)
        return cost


def make_loops(n: int, objects: dict, query: dict) -> list[Loop]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from webapp.corpus.models import Note
    from webapp.projects.models import Membership

    note_ids = list(Note.objects.filter(corpus=objects["corpus"]).order_by("pk").values_list("pk", flat=True))
    tag, loops = secrets.token_hex(3), []
    for i in range(n):
        user = get_user_model().objects.create_user(f"profile-reviewer-{tag}-{i}", password=secrets.token_urlsafe(16))
        Membership.objects.create(project=objects["corpus"].project, user=user, role="clinician")
        client = Client(enforce_csrf_checks=True)
        client.force_login(user)
        csrf = secrets.token_hex(16)
        client.cookies["csrftoken"] = csrf
        start = note_ids[(i * len(note_ids)) // n] - 1
        loops.append(Loop(client, objects["corpus"].pk, query, f"{start}:0", csrf))
    return loops


def run(loops: list[Loop], n_loops: int, *, profiles: dict | None = None) -> dict:
    """n_loops full loops of every reviewer (round robin); per step the CPU and wall seconds and
    queries of each request; under cProfile per step when `profiles` is given."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    out = {step: {"cpu": [], "wall": [], "queries": []} for step in STEPS}

    def measure(step, call):
        profile = profiles.setdefault(step, cProfile.Profile()) if profiles is not None else None
        with CaptureQueriesContext(connection) as queries:
            cpu, wall = time.process_time(), time.perf_counter()
            if profile is not None:
                profile.enable()
            response = call()
            if profile is not None:
                profile.disable()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        out[step]["cpu"].append(cpu)
        out[step]["wall"].append(wall)
        out[step]["queries"].append(len(queries))
        return response, None

    for _ in range(n_loops):
        for loop in loops:
            done = loop.decisions
            for _ in range(6):  # queue, note, decide (a queue at the corpus's end starts over)
                loop.step(measure)
                if loop.decisions > done:
                    break
    return out


def summary(values: list[float]) -> dict:
    ms = sorted(v * 1000 for v in values)
    if not ms:
        return {"n": 0}
    return {
        "n": len(ms),
        "median_ms": round(statistics.median(ms), 2),
        "mean_ms": round(statistics.fmean(ms), 2),
        "p95_ms": round(ms[min(len(ms) - 1, int(round(0.95 * (len(ms) - 1))))], 2),
    }


def top_entries(profile: cProfile.Profile, n: int, key: str, per_call_of: int) -> list[str]:
    """The profile's first n functions by `key` ("tottime" or "cumulative"), in ms a request."""
    stream = io.StringIO()
    stats = pstats.Stats(profile, stream=stream)
    stats.sort_stats(key)
    rows = []
    for func in stats.fcn_list[:n]:
        cc, nc, tt, ct, _ = stats.stats[func]
        where = (
            f"{Path(func[0]).as_posix().split('site-packages/')[-1].replace(str(ROOT) + '/', '')}:{func[1]}({func[2]})"
        )
        rows.append(f"{1000 * tt / per_call_of:7.2f} own {1000 * ct / per_call_of:7.2f} cum ms  {nc:>6} calls  {where}")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks review-profile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--maps", type=int, default=18_000, help="maps in the corpus (9 a note; default 18000)")
    parser.add_argument("--reviewers", type=int, default=1, help="reviewers taking turns (default 1)")
    parser.add_argument("--loops", type=int, default=200, help="measured loops per reviewer (default 200)")
    parser.add_argument("--warmup", type=int, default=20, help="loops before measuring (default 20)")
    parser.add_argument("--profile-loops", type=int, default=100, help="loops under cProfile (default 100; 0: none)")
    parser.add_argument("--top", type=int, default=15, help="functions listed per step and order (default 15)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save-profiles", metavar="DIR", help="also write each step's cProfile stats to DIR/STEP.prof")
    parser.add_argument(
        "--database-url",
        default="postgres://postgres@127.0.0.1:5432/dsm_bench_review_profile",
        help="a database this benchmark creates and drops",
    )
    parser.add_argument("--keep", action="store_true", help="keep the benchmark database")
    parser.add_argument("--reuse", action="store_true", help="use the database a --keep left, if there is one")
    args = parser.parse_args(argv)
    if not os.environ.get("REDIS_URL"):
        raise SystemExit("set REDIS_URL (a Redis database of your own: this benchmark clears it)")

    os.environ["DJANGO_SETTINGS_MODULE"] = "webapp.settings"
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    os.environ.setdefault("DSM_EMBEDDED", "0")
    os.environ["ALLOWED_HOSTS"] = "testserver"
    tmp = tempfile.TemporaryDirectory(prefix="dsm-review-profile-")
    os.environ["STATIC_ROOT"], os.environ["DATA_DIR"] = f"{tmp.name}/static", tmp.name  # production's manifest
    reused = args.reuse and database_exists(args.database_url)
    (use_database if reused else use_new_database)(args.database_url)
    result: dict = {
        "settings": {k: getattr(args, k) for k in ("maps", "reviewers", "loops", "warmup", "profile_loops")}
    }
    try:
        from django.core.cache import cache
        from django.core.management import call_command

        from benchmarks.review_load import vacuum_analyze
        from benchmarks.review_pages import insert_inputs

        if reused:
            from webapp.corpus.models import Corpus
            from webapp.pipeline.models import ModelVersion, PeakProfile

            objects = {
                "corpus": Corpus.objects.get(name="bench-review"),
                "model": ModelVersion.objects.get(name="bench-model"),
                "profile": PeakProfile.objects.get(name="bench-paper"),
            }
            result["data"] = {"reused": True}
        else:
            call_command("migrate", verbosity=0)
            started = time.perf_counter()
            objects = insert_inputs(args.maps, args.seed)
            result["data"] = {k: objects[k] for k in ("notes", "maps", "mean_tokens_per_map")}
            result["data"]["build_s"] = round(time.perf_counter() - started, 1)
            vacuum_analyze()
        from webapp.wsgi import settle_worker

        call_command("collectstatic", "--noinput", verbosity=0)
        cache.clear()
        query = {"model": objects["model"].pk, "method": "attnlrp", "template": "en",
                 "profile": objects["profile"].pk}  # fmt: skip
        loops = make_loops(args.reviewers, objects, query)
        settle_worker()  # as gunicorn's workers do once started (gunicorn.conf.py)
        run(loops, args.warmup)
        measured = run(loops, args.loops)
        result["load_average_1_5_15_before"] = load_average()
        result["steps"] = {
            step: {
                "cpu": summary(m["cpu"]),
                "wall": summary(m["wall"]),
                "queries_median": statistics.median(m["queries"]) if m["queries"] else None,
            }
            for step, m in measured.items()
        }
        result["cpu_ms_per_request"] = round(
            1000 * sum(sum(m["cpu"]) for m in measured.values()) / sum(len(m["cpu"]) for m in measured.values()), 2
        )
        if args.profile_loops:
            profiles: dict = {}
            counted = run(loops, args.profile_loops, profiles=profiles)
            if args.save_profiles:
                Path(args.save_profiles).mkdir(parents=True, exist_ok=True)
                for step, profile in profiles.items():
                    profile.dump_stats(Path(args.save_profiles) / f"{step}.prof")
            result["profile"] = {
                step: {
                    "requests": len(counted[step]["cpu"]),
                    "cpu_ms_under_profile": summary(counted[step]["cpu"]),
                    "by_own_time": top_entries(profiles[step], args.top, "tottime", len(counted[step]["cpu"])),
                    "by_cumulative_time": top_entries(
                        profiles[step], args.top, "cumulative", len(counted[step]["cpu"])
                    ),
                }
                for step in STEPS
                if step in profiles
            }
        result["load_average_1_5_15_at_end"] = load_average()
    finally:
        if not args.keep:
            drop_database(args.database_url)
        tmp.cleanup()
    result["machine"] = describe()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
