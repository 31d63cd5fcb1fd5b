"""The review loop at a ward's scale: N simulated reviewers against the app served as docker
compose serves it; prints one JSON object.

    python -m benchmarks review-load                        # 18,000 maps, 20 reviewers, 60 s
    python -m benchmarks review-load --reviewers 50 --duration 30 --workers 3 --threads 2
    python -m benchmarks review-load --smoke                # a few seconds: the test's run
    python -m benchmarks review-load --stored-peaks         # a ward deep into its review

What it starts, and stops at the end (also on an error or Ctrl-C):
- a DEDICATED PostgreSQL database (default `dsm_bench_review_load` on 127.0.0.1, or
  --database-url), migrated and filled with --maps maps over --maps / 9 synthetic notes
  (benchmarks.review_pages.insert_inputs: words and punctuation tokens, peaky scores) and
  vacuumed and analyzed as autovacuum would have been before a ward starts, then dropped
  (--keep keeps it); with --stored-peaks, every map's peaks are computed and stored under the
  benchmark's profile first, as they are once a ward's review has gone through the corpus (the
  queue's cost must not grow with them);
- the static files collected into a temporary STATIC_ROOT (the manifest storage of production);
- gunicorn as compose runs it (`gunicorn webapp.wsgi:application`, gunicorn.conf.py, production
  settings: DEBUG off, whitenoise, SSL redirect and secure cookies on) on a free loopback port,
  with --workers sync workers (--threads > 1: gthread). The reviewers send
  `X-Forwarded-Proto: https` as the TLS proxy in front of it would.

Each reviewer is a clinician of the benchmark's project with a session of its own, and loops
"open the queue -> the note -> decide" (the keyboard review: `q`, then `a` on a peak), paced to
one loop a second (a loop that takes longer starts the next at once): 1. GET the queue with
`after` = the pair it decided on last (the page's "Next in my queue"), which redirects to the
next pair; 2. GET that note page; 3. POST a decision on its first peak the reviewer has not
decided, as htmx sends it (HX-Request, the target the form names: its peak's row). Reviewers start at pairs spread over
the corpus. Every request gets a new connection (gunicorn's sync workers close each one).

Runs: the baseline (--baseline-reviewers, default 1) and then the load (--reviewers), each for
--duration seconds after a warm-up of 3 s, in the same process against the same server, so
the two are taken under the same conditions. Per run: decisions/s (and the rate wanted),
latency p50/p95/p99 per step and over all requests, errors by kind, the server's CPU seconds
per request (its workers' /proc counters: moves less with other work on the machine than wall
time does) and the load average at its end; then `machine` (benchmarks.machine.describe()).
The client runs in this process, on the same machine: its CPU seconds are reported too, and so
are those of the local PostgreSQL processes.

--with-job: then the same --reviewers load again while a relevance job runs on the same host
(`with_job`): the demo's corpus and job are loaded into the benchmark's database (the real model
of MODEL_DIR, webapp.home.demo.seed with --job-notes notes) and its workers are started exactly
as rundemo starts them (webapp.home.management.commands.rundemo.worker_processes: the relevance
and default queues, under `nice -n WORKER_NICE`, with their torch threads); measuring starts once
a chunk runs. `job` says how many of its chunks ended during the run, the workers' CPU seconds
and nice level. The `load` run just before it, without the job, is its baseline; WORKER_NICE=0
gives the same without the nice level. Needs a broker both processes reach (REDIS_URL).
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import random
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.database import drop_database, use_new_database  # noqa: E402
from benchmarks.machine import describe, load_average  # noqa: E402

STEPS = ("queue", "note", "decide")
WARMUP_S = 3.0
REQUEST_TIMEOUT_S = 30.0
_FORM = re.compile(r'<form method="post" action="([^"]+/decide/)" class="decide-form".*?</form>', re.S)
_INPUT = re.compile(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)"')
_TARGET = re.compile(r'hx-target="#([^"]+)"')


@dataclass
class Sample:
    step: str
    started: float
    seconds: float
    error: str | None = None


@dataclass
class Reviewer:
    """One simulated clinician: a session cookie, a CSRF secret and where it is in the queue."""

    index: int
    cookie: str
    csrf: str
    after: str
    samples: list = field(default_factory=list)
    decisions: int = 0


class Server:
    """gunicorn on a free loopback port, started and stopped as one process group."""

    def __init__(self, env: dict, workers: int, threads: int):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        command = [
            sys.executable, "-m", "gunicorn", "webapp.wsgi:application", "--bind", f"127.0.0.1:{self.port}",
            "--workers", str(workers), "--threads", str(threads), "--timeout", "120",
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )
        self.host = f"127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"gunicorn exited: {self.process.stderr.read().decode()[-3000:]}")
            try:
                conn = http.client.HTTPConnection(self.host, timeout=5)
                conn.request("GET", "/login/", headers={"X-Forwarded-Proto": "https"})
                if conn.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.3)
        raise SystemExit("gunicorn did not answer within two minutes")

    def cpu_seconds(self) -> float:
        """User + system CPU seconds of the master and its live workers."""
        pids = [self.process.pid]
        try:
            children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text()
            pids += [int(p) for p in children.split()]
        except OSError:
            pass
        ticks = os.sysconf("SC_CLK_TCK")
        total = 0.0
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
        return total

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def _request(host: str, reviewer: Reviewer, method: str, path: str, body: dict | None = None, htmx: str = ""):
    headers = {
        "X-Forwarded-Proto": "https",  # as the TLS proxy in front of gunicorn says
        "Cookie": f"sessionid={reviewer.cookie}; csrftoken={reviewer.csrf}",
    }
    data = None
    if body is not None:
        data = urlencode(body)
        headers |= {
            "Content-Type": "application/x-www-form-urlencoded",
            "X-CSRFToken": reviewer.csrf,
            "Origin": f"https://{host}",
        }
    if htmx:  # the element the form targets, as htmx says it
        headers |= {"HX-Request": "true", "HX-Target": htmx}
    conn = http.client.HTTPConnection(host, timeout=REQUEST_TIMEOUT_S)
    try:
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        return response.status, response.getheader("Location"), response.read().decode()
    finally:
        conn.close()


def _timed(reviewer: Reviewer, step: str, call, expect: tuple[int, ...]):
    started = time.perf_counter()
    try:
        status, location, text = call()
    except (OSError, http.client.HTTPException) as exc:
        reviewer.samples.append(Sample(step, started, time.perf_counter() - started, type(exc).__name__))
        return None
    error = None if status in expect else f"HTTP {status}"
    reviewer.samples.append(Sample(step, started, time.perf_counter() - started, error))
    return (status, location, text) if error is None else None


def _decision_form(page: str) -> dict | None:
    """The fields of the first decide form for a peak the reviewer has not decided (version 0),
    else of the first one shown."""
    forms = []
    for match in _FORM.finditer(page):
        fields = dict(_INPUT.findall(match.group(0)))
        fields["action"] = match.group(1)
        fields["hx_target"] = _TARGET.search(match.group(0)).group(1)
        forms.append(fields)
    return next((f for f in forms if f.get("version") == "0"), forms[0] if forms else None)


def review_loop(host: str, reviewer: Reviewer, corpus_id: int, query: dict, until: float, pace: float) -> None:
    """Queue -> note -> decide, one loop every `pace` seconds, until `until` (perf_counter)."""
    next_start = time.perf_counter() + random.Random(reviewer.index).uniform(0, pace)
    while next_start < until:
        time.sleep(max(0.0, next_start - time.perf_counter()))
        next_start = max(next_start + pace, time.perf_counter())
        queue_path = f"/review/{corpus_id}/queue/?" + urlencode({**query, "after": reviewer.after})
        got = _timed(reviewer, "queue", partial(_request, host, reviewer, "GET", queue_path), (302, 200))
        if got is None or got[0] != 302:
            continue  # an error, or nothing left after `after`: start again from the corpus's start
        note_path = got[1]
        got = _timed(reviewer, "note", partial(_request, host, reviewer, "GET", note_path), (200,))
        if got is None:
            continue
        form = _decision_form(got[2])
        if form is None:
            reviewer.samples.append(Sample("note", time.perf_counter(), 0.0, "no decide form on the page"))
            continue
        action, target = form.pop("action"), form.pop("hx_target")
        body = {**form, "decision": "accept", "active_ms": "900"}
        got = _timed(reviewer, "decide", partial(_request, host, reviewer, "POST", action, body, htmx=target), (200,))
        reviewer.after = f"{action.split('/')[-3]}:{form['task']}"  # .../notes/<note>/decide/
        if got is not None:
            reviewer.decisions += 1


def static_caching(host: str, reviewer: Reviewer, page_path: str) -> dict:
    """The Cache-Control of the static files a review page links (whitenoise, manifest names)."""
    _, _, page = _request(host, reviewer, "GET", page_path)
    out = {}
    for path in sorted(set(re.findall(r'(?:src|href)="(/static/[^"]+)"', page))):
        conn = http.client.HTTPConnection(host, timeout=REQUEST_TIMEOUT_S)
        try:
            conn.request("GET", path, headers={"X-Forwarded-Proto": "https", "Accept-Encoding": "gzip"})
            response = conn.getresponse()
            response.read()
            out[path] = {"status": response.status, "cache_control": response.getheader("Cache-Control")}
        finally:
            conn.close()
    return out


def percentiles(seconds: list[float]) -> dict:
    if not seconds:
        return {"n": 0}
    ms = sorted(s * 1000 for s in seconds)

    def at(q):
        return round(ms[min(len(ms) - 1, int(round(q * (len(ms) - 1))))], 1)

    return {"n": len(ms), "p50_ms": round(statistics.median(ms), 1), "p95_ms": at(0.95), "p99_ms": at(0.99),
            "max_ms": round(ms[-1], 1)}  # fmt: skip


def run_load(server: Server, reviewers: list[Reviewer], corpus_id: int, query: dict, duration: float) -> dict:
    """All reviewers at once for WARMUP_S + duration seconds; figures over the last `duration`."""
    for r in reviewers:
        r.samples, r.decisions = [], 0
    database = DatabaseCPU()  # a process of its own, started before the clock
    start = time.perf_counter()
    measured_from, until = start + WARMUP_S, start + WARMUP_S + duration
    threads = [
        threading.Thread(target=review_loop, args=(server.host, r, corpus_id, query, until, 1.0), daemon=True)
        for r in reviewers
    ]
    cpu_server = cpu_client = None
    for t in threads:
        t.start()
    time.sleep(max(0.0, measured_from - time.perf_counter()))
    cpu_server, cpu_client = server.cpu_seconds(), time.process_time()
    database.start()
    for t in threads:
        t.join(timeout=duration + WARMUP_S + REQUEST_TIMEOUT_S + 10)
    cpu_server, cpu_client = server.cpu_seconds() - cpu_server, time.process_time() - cpu_client
    cpu_database = database.stop()
    samples = [s for r in reviewers for s in r.samples if measured_from <= s.started < until]
    ok = [s for s in samples if s.error is None]
    errors: dict[str, int] = {}
    for s in samples:
        if s.error is not None:
            errors[f"{s.step}: {s.error}"] = errors.get(f"{s.step}: {s.error}", 0) + 1
    decisions = sum(1 for s in ok if s.step == "decide")
    return {
        "reviewers": len(reviewers),
        "duration_s": duration,
        "decisions_per_s": round(decisions / duration, 2),
        "decisions_per_s_wanted": float(len(reviewers)),
        "requests": len(samples),
        "requests_per_s": round(len(samples) / duration, 2),
        "all_requests": percentiles([s.seconds for s in ok]),
        "steps": {step: percentiles([s.seconds for s in ok if s.step == step]) for step in STEPS},
        "errors": sum(errors.values()),
        "errors_by_kind": errors,
        "server_cpu_s": round(cpu_server, 2),
        "server_cpu_ms_per_request": round(1000 * cpu_server / len(samples), 1) if samples else None,
        "client_cpu_s": round(cpu_client, 2),
        "database_cpu_s": round(cpu_database, 2),
        "database_cpu_ms_per_request": round(1000 * cpu_database / len(samples), 1) if samples else None,
        "load_average_1_5_15_at_end": load_average(),
    }


def postgres_cpu() -> dict[int, float]:
    """{pid: user + system CPU seconds} of this machine's processes named postgres."""
    ticks, out = os.sysconf("SC_CLK_TCK"), {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            head, rest = stat.read_text().rsplit(")", 1)
        except OSError:
            continue  # ended meanwhile
        if head.split("(", 1)[1] == "postgres":
            fields = rest.split()
            out[int(stat.parent.name)] = (int(fields[11]) + int(fields[12])) / ticks
    return out


def _sample_database_cpu(begin, stop, result) -> None:
    """In a process of its own (reading /proc in the client's process took its GIL from the
    reviewers and showed in their latencies): from `begin` to `stop`, the CPU seconds of the
    PostgreSQL processes, sampled twice a second so that a backend ending meanwhile (the app's
    connections are renewed every DB_CONN_MAX_AGE seconds) keeps what it used to its last sample."""
    begin.wait()
    first = postgres_cpu()
    last = dict(first)
    while True:
        stopping = stop.wait(0.5)
        for pid, cpu in postgres_cpu().items():
            first.setdefault(pid, 0.0)  # born during the run: all of it counts
            last[pid] = cpu
        if stopping:
            break
    result.value = sum(last[pid] - first[pid] for pid in last)


class DatabaseCPU:
    """The whole local cluster's CPU over a run (other work on it counts too; 0 when the
    database is on another machine): `ready()` before the run's threads start, `start()` when
    measuring begins, `stop()` -> seconds."""

    def __init__(self):
        context = multiprocessing.get_context("spawn")
        self._begin, self._stop, self._result = context.Event(), context.Event(), context.Value("d", 0.0)
        self._process = context.Process(
            target=_sample_database_cpu, args=(self._begin, self._stop, self._result), daemon=True
        )
        self._process.start()

    def start(self) -> None:
        self._begin.set()

    def stop(self) -> float:
        self._begin.set()
        self._stop.set()
        self._process.join(timeout=30)
        return self._result.value


class RelevanceWorkers:
    """The demo's relevance job and the workers computing it, started as rundemo starts them;
    stopped (their process groups) by `stop`."""

    NAMES = ("relevance", "default")  # the job's chunks, and its planning

    def __init__(self, notes: int, env: dict):
        import io

        from webapp.home import demo
        from webapp.home.management.commands.rundemo import worker_processes

        self.job = demo.seed(notes=notes, stdout=io.StringIO(), size=demo.JobSize(notes, 2, None))
        self.processes, self.commands = [], []
        saved = dict(os.environ)
        os.environ.update(env)  # worker_processes builds each worker's environment from this one's
        try:
            chosen = [
                (cmd, wenv) for cmd, wenv in worker_processes(sys.executable) if cmd[-3].split("@")[0] in self.NAMES
            ]
        finally:
            os.environ.clear()
            os.environ.update(saved)
        for cmd, wenv in chosen:
            self.commands.append(" ".join(cmd[:3]) + " ... " + " ".join(cmd[-4:]))
            self.processes.append(
                subprocess.Popen(
                    cmd,
                    cwd=ROOT,
                    env=wenv,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )  # fmt: skip
            )

    def chunks(self) -> dict:
        from webapp.pipeline.models import RelevanceChunk

        rows = RelevanceChunk.objects.filter(job_id=self.job.pk).values_list("status", flat=True)
        out: dict[str, int] = {}
        for status in rows:
            out[status] = out.get(status, 0) + 1
        return out

    def wait_running(self, timeout: float = 600.0) -> float:
        """Seconds until a chunk of the job runs or ended (the model is loaded)."""
        started = time.perf_counter()
        while time.perf_counter() - started < timeout:
            counts = self.chunks()
            if any(k not in ("queued", "planning") for k in counts):
                return time.perf_counter() - started
            if any(p.poll() is not None for p in self.processes):
                raise SystemExit("a worker exited before the job ran")
            time.sleep(1.0)
        raise SystemExit("the relevance job did not start within ten minutes")

    def cpu_seconds(self) -> float:
        ticks, total = os.sysconf("SC_CLK_TCK"), 0.0
        for p in self.processes:
            for stat in Path("/proc").glob("[0-9]*/stat"):
                try:
                    head, rest = stat.read_text().rsplit(")", 1)
                except OSError:
                    continue
                fields = rest.split()
                if int(fields[3]) == p.pid or int(stat.parent.name) == p.pid:  # the worker and its children
                    total += (int(fields[11]) + int(fields[12])) / ticks
        return total

    def nice_levels(self) -> list[int]:
        return [int(Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()[16]) for p in self.processes
                if p.poll() is None]  # fmt: skip

    def stop(self) -> None:
        for p in self.processes:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.processes:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def make_reviewers(n: int, objects: dict) -> list[Reviewer]:
    """n clinicians of the benchmark's project, each signed in (a session row) with a CSRF secret,
    starting at pairs spread over the corpus."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from webapp.corpus.models import Note
    from webapp.projects.models import Membership

    note_ids = list(Note.objects.filter(corpus=objects["corpus"]).order_by("pk").values_list("pk", flat=True))
    out = []
    for i in range(n):
        user = get_user_model().objects.create_user(f"bench-reviewer-{i}", password=secrets.token_urlsafe(16))
        Membership.objects.create(project=objects["corpus"].project, user=user, role="clinician")
        client = Client()
        client.force_login(user)
        start = note_ids[(i * len(note_ids)) // n] - 1
        out.append(Reviewer(i, client.cookies["sessionid"].value, secrets.token_hex(16), f"{start}:0"))
    return out


def store_every_maps_peaks(objects: dict) -> int:
    """Compute and store the peaks of every map under the benchmark's profile (the store the
    review fills as it goes); returns the maps stored."""
    from webapp.pipeline.models import RelevanceMap
    from webapp.review import peakstore

    ids = list(RelevanceMap.objects.filter(note__corpus=objects["corpus"]).order_by("pk").values_list("pk", flat=True))
    params = objects["profile"].params
    return sum(
        peakstore.ensure(RelevanceMap.objects.filter(pk__in=ids[i : i + 1_000]), params)
        for i in range(0, len(ids), 1_000)
    )


def vacuum_analyze() -> None:
    """VACUUM ANALYZE the new database, as autovacuum would have done before a ward starts
    reviewing a corpus imported and computed earlier (benchmarks/scale.py does the same)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


def server_env(database_url: str, static_root: str, data_dir: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "SECURE_", "DEBUG"))}
    return env | {
        "DJANGO_SETTINGS_MODULE": "webapp.settings",
        "DATABASE_URL": database_url,
        "SECRET_KEY": os.environ["SECRET_KEY"],
        "DEBUG": "0",
        "DSM_EMBEDDED": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "STATIC_ROOT": static_root,
        "DATA_DIR": data_dir,
        "OMP_NUM_THREADS": "1",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks review-load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--maps", type=int, default=18_000, help="maps in the corpus (9 a note; default 18000)")
    parser.add_argument("--reviewers", type=int, default=20, help="reviewers of the load run (default 20)")
    parser.add_argument("--baseline-reviewers", type=int, default=1, help="reviewers of the baseline run (default 1)")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds measured per run (default 60)")
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers (compose: 3)")
    parser.add_argument("--threads", type=int, default=1, help="threads a worker (1: sync workers, as compose)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="90 maps, 2 reviewers, 5 s: checks that it all runs")
    parser.add_argument(
        "--database-url",
        default="postgres://postgres@127.0.0.1:5432/dsm_bench_review_load",
        help="a database this benchmark creates and drops",
    )
    parser.add_argument("--keep", action="store_true", help="keep the benchmark database")
    parser.add_argument(
        "--stored-peaks", action="store_true", help="store every map's peaks before the runs (a ward deep into review)"
    )
    parser.add_argument(
        "--with-job", action="store_true", help="then the load again while a relevance job runs (rundemo's workers)"
    )
    parser.add_argument("--job-notes", type=int, default=400, help="notes of that job (5 tasks each; default 400)")
    args = parser.parse_args(argv)
    if args.smoke:
        # 5 s: a reviewer's first loop (queue, note, decision) fills the caches and can take a
        # couple of seconds on a busy 2-core machine, and the run must see a decision
        args.maps, args.reviewers, args.duration = 90, 2, 5.0

    os.environ["DJANGO_SETTINGS_MODULE"] = "webapp.settings"
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    os.environ.setdefault("DSM_EMBEDDED", "0")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed run still stops its server (finally)
    use_new_database(args.database_url)
    server = workers = None
    result: dict = {"settings": {k: getattr(args, k) for k in ("maps", "reviewers", "baseline_reviewers",
                                                               "duration", "workers", "threads",
                                                               "stored_peaks", "with_job")}}  # fmt: skip
    try:
        with tempfile.TemporaryDirectory(prefix="dsm-review-load-") as tmp:
            from django.core.management import call_command

            from benchmarks.review_pages import insert_inputs

            call_command("migrate", verbosity=0)
            started = time.perf_counter()
            objects = insert_inputs(args.maps, args.seed)
            result["data"] = {k: objects[k] for k in ("notes", "maps", "mean_tokens_per_map")}
            result["data"]["build_s"] = round(time.perf_counter() - started, 1)
            reviewers = make_reviewers(max(args.reviewers, args.baseline_reviewers), objects)
            if args.stored_peaks:
                started = time.perf_counter()
                result["data"]["stored_peak_maps"] = store_every_maps_peaks(objects)
                result["data"]["store_peaks_s"] = round(time.perf_counter() - started, 1)
            started = time.perf_counter()
            vacuum_analyze()
            result["data"]["vacuum_analyze_s"] = round(time.perf_counter() - started, 1)
            env = server_env(args.database_url, f"{tmp}/static", tmp)
            subprocess.run(
                [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True
            )
            query = {"model": objects["model"].pk, "method": "attnlrp", "template": "en",
                     "profile": objects["profile"].pk}  # fmt: skip
            server = Server(env, args.workers, args.threads)
            server.wait_ready()
            result["server"] = {"port": server.port, "pid": server.process.pid}
            queue_path = f"/review/{objects['corpus'].pk}/queue/?{urlencode(query)}"
            note_path = _request(server.host, reviewers[0], "GET", queue_path)[1]
            result["static_files"] = static_caching(server.host, reviewers[0], note_path)
            result["baseline"] = run_load(
                server, reviewers[: args.baseline_reviewers], objects["corpus"].pk, query, args.duration
            )
            result["load"] = run_load(server, reviewers[: args.reviewers], objects["corpus"].pk, query, args.duration)
            if args.with_job:
                workers = RelevanceWorkers(args.job_notes, env)
                waited = workers.wait_running()
                before, cpu = workers.chunks(), workers.cpu_seconds()
                result["with_job"] = run_load(
                    server, reviewers[: args.reviewers], objects["corpus"].pk, query, args.duration
                )
                after = workers.chunks()
                result["job"] = {
                    "notes": args.job_notes,
                    "workers": workers.commands,
                    "worker_nice": workers.nice_levels(),
                    "seconds_until_a_chunk_ran": round(waited, 1),
                    "chunks_before": before,
                    "chunks_after": after,
                    "worker_cpu_s_during_run": round(workers.cpu_seconds() - cpu, 2),
                }
    finally:
        if workers is not None:
            workers.stop()
        if server is not None:
            server.stop()
        if not args.keep:
            drop_database(args.database_url)
    result["machine"] = describe()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
