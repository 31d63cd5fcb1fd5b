"""Benchmark the API's list pages at corpus scale on PostgreSQL: every page of a corpus's notes,
by cursor, against the offset-and-count paging it replaced; prints one JSON object.

    .venv/bin/python -m benchmarks api-pages                      # 1,000,000 notes, pages of 200
    .venv/bin/python -m benchmarks api-pages --notes 100000       # a first look
    .venv/bin/python -m benchmarks api-pages --reuse              # keep the database; a second run only measures
    .venv/bin/python -m benchmarks api-pages --auth-baseline      # each page also with the old token auth, in turn
    .venv/bin/python -m benchmarks api-pages --profile            # and a cProfile of 20 requests

Runs in a DEDICATED database (default `dsm_bench_api_pages` on 127.0.0.1, or --database-url): it
is created, migrated, filled, measured and dropped at the end (--keep to keep it; --reuse keeps
it and measures one kept by an earlier --reuse run of the same size without building it again).

The build (timed, not the subject): one corpus of --notes notes written with COPY, their texts
drawn in turn from a pool of 2,000 ml.synthetic notes (English, about 1.5 kB each; generating a
million would take 10 minutes and is not what is measured), each with its own external id and
its text's search vector (the search trigger off and its GIN index built after the rows, as a
bulk load does; the integrity and counter triggers and the other indexes work on every row);
then VACUUM ANALYZE, as autovacuum would have before anyone asks for a page.

Measured, through Django's test Client in this process (token auth, the rate limit's count,
access layer, query, serialisation: the server's whole work for a request; no network), as a
researcher's token of the corpus's project:
1. cursor: GET /api/corpora/ID/notes?limit=L (after 3 untimed ones), then every `next` to the
   end: each page's time,
   p50 / p95 / max over all pages and per tenth of the depth, and a check that every note came
   once in id order; with --auth-baseline each page is asked twice, in turn, with today's token
   authentication and with the one before the rate limit moved to the cache (the count on the
   token's row: SELECT ... FOR UPDATE, UPDATE, COMMIT every request), so both meet the same load;
   `rate_count` says where today's run counted (the shared cache when REDIS_URL or CACHE_URL is
   set, else the token's row);
2. baseline in the same process, on the same query (the access-filtered notes of the corpus):
   the paging it replaced (webapp.db.pagination before issue 40: count of the whole query,
   OFFSET, LIMIT), as a function, at --depths of the list (first page, a quarter, ... last page),
   --requests times each; and webapp.db.pagination.page, the function the endpoint calls, at
   the same depths (its cursor made as a `next` link would hold it), so the ratio compares the
   same work. The machine's load average is printed at each phase: on a shared machine the
   absolute times move with it.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import time
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.database import (  # noqa: E402
    database_exists,
    drop_database,
    serve_pages_as_the_tests_do,
    use_database,
    use_new_database,
)
from benchmarks.machine import describe, load_average  # noqa: E402
from benchmarks.projects import default_project, member  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/dsm_bench_api_pages"
CORPUS = "bench-api-pages"
POOL = 2_000  # distinct texts the notes are drawn from
BLOCK = 20_000  # notes a COPY statement writes
TARGET_P95_MS = 50.0
WARMUP = 3  # untimed requests of the first page before the walk


def summary(seconds: list[float]) -> dict:
    ms = sorted(s * 1000 for s in seconds)
    return {
        "n": len(ms),
        "median_ms": round(statistics.median(ms), 2),
        "p95_ms": round(ms[min(len(ms) - 1, int(round(0.95 * (len(ms) - 1))))], 2),
        "max_ms": round(ms[-1], 2),
    }


def _copy_text(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def build(n: int, seed: int) -> dict:
    """The corpus and its n notes (COPY), then VACUUM ANALYZE; returns the timings.

    As a bulk load does: the search trigger is off during the COPY, each row carrying the search
    vector its text gets (computed once for each of the pool's texts by the trigger's own
    function), and the search index is built after the rows (the integrity and counter triggers
    and the other indexes do their work on every row)."""
    import hashlib

    from django.db import connection
    from django.utils import timezone

    from ml.synthetic import generate_notes
    from webapp.corpus.models import Corpus

    corpus = Corpus.objects.create(project=default_project(), name=CORPUS, language="en", source="benchmarks")
    texts = [note for note in generate_notes(POOL, seed=seed, language="en")]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT to_tsvector(corpus_search_config(%s), t)::text FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, i)"
            " ORDER BY i",
            ["en", [note.text for note in texts]],
        )
        vectors = [row[0] for row in cursor.fetchall()]
    pool = []
    for note, vector in zip(texts, vectors):
        digest = hashlib.sha256(note.text.encode("utf-8")).hexdigest()
        metadata = json.dumps(note.metadata, ensure_ascii=False)
        pool.append("\t".join(_copy_text(v) for v in (note.text, digest, metadata)) + "\t" + _copy_text(vector))
    created = timezone.now().isoformat()
    connection.ensure_connection()
    raw = connection.connection  # psycopg 3, autocommit: each block commits
    started = time.perf_counter()
    with raw.cursor() as cur:
        cur.execute("ALTER TABLE corpus_note DISABLE TRIGGER corpus_note_search")
        cur.execute("DROP INDEX corpus_note_search_idx")
    try:
        for first in range(0, n, BLOCK):
            last = min(n, first + BLOCK)
            rows = "".join(f"{corpus.pk}\tbench-{i:07d}\t{pool[i % POOL]}\t{created}\n" for i in range(first, last))
            with (
                raw.cursor() as cur,
                cur.copy(
                    "COPY corpus_note (corpus_id, external_id, text, content_hash, metadata, search, created)"
                    " FROM STDIN"
                ) as copy,
            ):
                copy.write(rows.encode("utf-8"))
        copy_s = time.perf_counter() - started
    finally:
        with raw.cursor() as cur:
            cur.execute("ALTER TABLE corpus_note ENABLE TRIGGER corpus_note_search")
            cur.execute("CREATE INDEX IF NOT EXISTS corpus_note_search_idx ON corpus_note USING gin (search)")
    index_s = time.perf_counter() - started - copy_s
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    return {
        "notes": n,
        "copy_s": round(copy_s, 1),
        "notes_per_s": round(n / copy_s) if copy_s else None,
        "search_index_s": round(index_s, 1),
        "vacuum_analyze_s": round(time.perf_counter() - started, 1),
        "load_1_5_15": load_average(),
    }


def kept_corpus(n: int):
    from webapp.corpus.models import Corpus

    corpus = Corpus.objects.filter(name=CORPUS).first()
    return corpus if corpus is not None and corpus.note_count == n else None


def legacy_authenticate(secret: str, method: str):
    """webapp.api.tokens.authenticate before the rate limit moved to the cache (7763819): the same
    token read and checks, then every request counted on the token's row (SELECT ... FOR UPDATE,
    UPDATE of the window and last_used, COMMIT), then the same principal. Only what a valid
    token's request runs: this benchmark sends no other."""
    from django.db import transaction
    from django.utils import timezone

    from webapp.api import tokens
    from webapp.api.models import ApiToken

    token = ApiToken.objects.select_related("owner").filter(digest=tokens.digest_of(secret)).first()
    if token is None or token.revoked is not None or token.expires <= timezone.now() or not token.owner.is_active:
        raise SystemExit("the benchmark's token was refused")
    now = time.time()
    minute = int(now // 60)
    with transaction.atomic():
        row = ApiToken.objects.select_for_update().only("window_start", "window_count").get(pk=token.pk)
        count = row.window_count + 1 if row.window_start == minute else 1
        ApiToken.objects.filter(pk=token.pk).update(window_start=minute, window_count=count, last_used=timezone.now())
    return tokens.principal(token)


def walk_pages(client, headers: dict, corpus, limit: int, legacy_auth: bool = False) -> dict:
    """Every page by its `next` link: each request's time, by tenth of the depth. With legacy_auth,
    each page is also asked with the authentication before this change, the two in turn (which goes
    first alternates), so both walks meet the same load."""
    from unittest import mock

    from webapp.api import tokens

    def timed(url, legacy):
        with mock.patch.object(tokens, "authenticate", legacy_authenticate) if legacy else nullcontext():
            started = time.perf_counter()
            response = client.get(url, headers=headers)
            elapsed = time.perf_counter() - started
        if response.status_code != 200:
            raise SystemExit(f"{url} answered {response.status_code}: {response.content[:300]!r}")
        return elapsed, response.json()

    url, times, before, last_id, seen = f"/api/corpora/{corpus.pk}/notes?limit={limit}", [], [], 0, 0
    for _ in range(WARMUP):  # the first request of a process builds the API's schemas and routes
        timed(url, False)
        if legacy_auth:
            timed(url, True)
    while url is not None:
        order = (False, True) if len(times) % 2 == 0 else (True, False)
        for legacy in order if legacy_auth else (False,):
            elapsed, body = timed(url, legacy)
            (before if legacy else times).append(elapsed)
        ids = [item["id"] for item in body["items"]]
        if ids and (ids[0] <= last_id or ids != sorted(ids)):
            raise SystemExit(f"page {len(times)} is out of id order")
        last_id, seen = (ids[-1] if ids else last_id), seen + len(ids)
        url = body["next"]
    if seen != corpus.note_count:
        raise SystemExit(f"the pages gave {seen} notes of {corpus.note_count}")
    out = {"pages": len(times), "notes_seen": seen, **by_depth(times)}
    if legacy_auth:
        out["before_auth_change"] = by_depth(before)
        out["ratio_median_before_over_now"] = round(
            out["before_auth_change"]["all_pages"]["median_ms"] / out["all_pages"]["median_ms"], 2
        )
    out["load_1_5_15"] = load_average()
    return out


def by_depth(times: list[float]) -> dict:
    tenths = [times[k * len(times) // 10 : (k + 1) * len(times) // 10] for k in range(10)]
    return {
        "all_pages": summary(times),
        "by_tenth_of_depth": [{"tenth": k + 1, **summary(t)} for k, t in enumerate(tenths) if t],
    }


def profile_one_request(client, headers: dict, corpus, limit: int) -> list[str]:
    """cProfile of 20 requests of the first page in this process: the functions with the most
    cumulative time, so what is left besides the query is named."""
    import cProfile
    import pstats

    url = f"/api/corpora/{corpus.pk}/notes?limit={limit}"
    client.get(url, headers=headers)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(20):
        client.get(url, headers=headers)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(40)
    return [line for line in out.getvalue().splitlines() if line.strip()]


def offset_page(queryset, limit: int, offset: int, serialise) -> dict:
    """The paging before issue 40 (webapp.db.pagination at bc6d89c): count the whole query, then
    OFFSET and LIMIT in pk order."""
    total = queryset.count()
    rows = list(queryset.order_by("pk")[offset : offset + limit])
    following = offset + len(rows)
    return {
        "count": total,
        "limit": limit,
        "offset": offset,
        "next_offset": following if following < total else None,
        "items": [serialise(row) for row in rows],
    }


def compare_at_depths(user, corpus, limit: int, depths: list[float], requests: int) -> list[dict]:
    """The old paging and the cursor's page function at each depth, alternating, same query."""
    from django.test import RequestFactory

    from webapp.corpus.models import Note
    from webapp.db.pagination import Ordering, PageQuery, page

    def notes():  # what the endpoint pages: the user's notes of the corpus
        return Note.objects.visible_to(user).filter(corpus=corpus).only("pk", "external_id", "created")

    def serialise(n):
        return {"id": n.pk, "external_id": n.external_id, "created": n.created}

    path = f"/api/corpora/{corpus.pk}/notes"
    ordering = Ordering(Note, "pk")
    pages = -(-corpus.note_count // limit)
    out = []
    for depth in depths:
        number = min(pages - 1, int(round(depth * (pages - 1))))  # 0-based page number
        offset = number * limit
        before = None if offset == 0 else notes().order_by("pk").values_list("pk", flat=True)[offset - 1]
        params = {"limit": limit}
        if before is not None:
            params["cursor"] = ordering.encode([before], path)
        request = RequestFactory().get(path, params)
        query = PageQuery(limit=limit, cursor=params.get("cursor"))
        old, new = [], []
        for k in range(requests + 1):  # the first of each is a warm-up
            started = time.perf_counter()
            a = offset_page(notes(), limit, offset, serialise)
            t_old = time.perf_counter() - started
            started = time.perf_counter()
            b = page(request, notes(), query, serialise)
            t_new = time.perf_counter() - started
            if [i["id"] for i in a["items"]] != [i["id"] for i in b["items"]]:
                raise SystemExit(f"page {number + 1}: the two pagings disagree")
            if k:
                old.append(t_old)
                new.append(t_new)
        o, c = summary(old), summary(new)
        out.append(
            {
                "depth": depth,
                "page": number + 1,
                "offset": offset,
                "offset_and_count": o,
                "cursor": c,
                "ratio_median": round(o["median_ms"] / c["median_ms"], 1) if c["median_ms"] else None,
                "load_1_5_15": load_average(),
            }
        )
    return out


def plans(user, corpus, limit: int) -> dict:
    """EXPLAIN of a deep cursor page and of the old count: which index the keyset uses."""
    from django.db import connection

    from webapp.corpus.models import Note

    notes = Note.objects.visible_to(user).filter(corpus=corpus).only("pk", "external_id", "created")
    middle = notes.order_by("pk").values_list("pk", flat=True)[corpus.note_count // 2]
    keyset = notes.filter(pk__gt=middle).order_by("pk")[: limit + 1]
    out = {}
    for name, qs in (("cursor_page", keyset),):
        sql, params = qs.query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN " + sql, params)
            out[name] = [row[0] for row in cursor.fetchall()]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks api-pages", description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=1_000_000)
    parser.add_argument("--limit", type=int, default=200, help="rows a page (the API's maximum: 200)")
    parser.add_argument("--depths", default="0,0.25,0.5,0.75,1", help="where the baseline is compared (0-1)")
    parser.add_argument("--requests", type=int, default=5, help="timed requests a depth for the baseline")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_URL))
    parser.add_argument("--keep", action="store_true", help="keep the database at the end")
    parser.add_argument("--reuse", action="store_true", help="keep the database, and measure a kept one")
    parser.add_argument(
        "--auth-baseline",
        action="store_true",
        help="also ask every page with the token authentication before the cache-counted rate limit, in turn",
    )
    parser.add_argument("--profile", action="store_true", help="add a cProfile of 20 requests of the first page")
    args = parser.parse_args(argv)

    serve_pages_as_the_tests_do()
    result = {"benchmark": "api-pages", "notes": args.notes, "limit": args.limit, "load_at_start": load_average()}
    reused = args.reuse and database_exists(args.database_url)
    if reused:
        use_database(args.database_url)
    else:
        use_new_database(args.database_url)
    try:
        from django.conf import settings
        from django.core.management import call_command
        from django.test import Client

        from webapp.api import tokens

        started = time.perf_counter()
        call_command("migrate", verbosity=0, stdout=io.StringIO())
        result["migrate_s"] = round(time.perf_counter() - started, 1)
        corpus = kept_corpus(args.notes) if reused else None
        if corpus is None:
            from webapp.corpus.models import Corpus

            Corpus.objects.filter(name=CORPUS).delete()
            result["build"] = build(args.notes, args.seed)
            corpus = kept_corpus(args.notes)
        else:
            result["build"] = "reused"
        from django.contrib.auth import get_user_model

        user = get_user_model().objects.get_or_create(username="bench-api-pages")[0]
        member(user, "researcher")
        _, secret = tokens.create(user, name="bench", projects=[default_project()], ceiling="read", days=1)
        settings.API_RATE_LIMIT_PER_MINUTE = 10**9  # thousands of requests a minute: still counted, never refused
        client = Client()
        headers = {"Authorization": f"Bearer {secret}"}
        result["rate_count"] = "shared cache" if tokens.cache_is_shared() else "token row (per-process cache)"
        result["cursor_every_page_by_api"] = walk_pages(client, headers, corpus, args.limit, args.auth_baseline)
        if args.profile:
            result["profile_20_requests"] = profile_one_request(client, headers, corpus, args.limit)
        depths = [float(d) for d in args.depths.split(",")]
        result["at_depths_function_only"] = compare_at_depths(user, corpus, args.limit, depths, args.requests)
        result["plans"] = plans(user, corpus, args.limit)
        p95 = result["cursor_every_page_by_api"]["all_pages"]["p95_ms"]
        result["target"] = {"p95_ms_every_page": TARGET_P95_MS, "met": p95 < TARGET_P95_MS}
    finally:
        if not (args.keep or args.reuse):
            drop_database(args.database_url)
    result["machine"] = describe()
    print(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
