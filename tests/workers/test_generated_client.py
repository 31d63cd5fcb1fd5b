"""A client generated from the live server's own OpenAPI document runs a researcher's automation:
openapi-python-client (pinned in requirements.txt) writes a Python package from
`/api/openapi.json` into a temporary folder (no network: the document comes from the live
server of this test), the test imports it and, through it alone, imports notes, computes
relevance with a tiny random Llama on a REAL worker, builds a dataset from the maps (refused by
the de-identification gate until the corpus is marked de-identified) and downloads it. Every
answer is read as the generated client's typed model (attributes, not dict keys), so an
operation whose schema the generator cannot read, or that answers untyped, fails here by name.

Operations are found by method and path in the document, so renaming an operation's function
moves nothing here; a body's class is read from the generated function's signature."""

import importlib
import io
import json
import subprocess
import sys
import typing
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.projects import default_project
from tests.webapp.pipeline.factories import make_model_version
from tests.workers.conftest import wait_for
from webapp.api import tokens
from webapp.corpus.models import Corpus, Task
from webapp.deid.gate import mark_deidentified
from webapp.pipeline.models import PeakProfile

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

GENERATOR = Path(sys.executable).parent / "openapi-python-client"
PACKAGE = "dsm_client"
NOTES = [
    {"id": "gen-1", "text": "Heart rate 120 bpm, blood pressure 90/60, started on a beta blocker."},
    {"id": "gen-2", "text": "Afebrile; pulse 64 and regular; no chest pain on review."},
]
ENDED = ("done", "failed", "cancelled")


def snake(name: str) -> str:
    """The generator's module and folder names: snake case of an operationId or a tag."""
    import re

    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


class Generated:
    """The generated package, and its operations by method and path."""

    def __init__(self, spec: dict, folder: Path):
        self.spec = spec
        (folder / "openapi.json").write_text(json.dumps(spec))
        (folder / "config.yml").write_text(f"package_name_override: {PACKAGE}\npost_hooks: []\n")
        done = subprocess.run(
            [str(GENERATOR), "generate", "--path", str(folder / "openapi.json"), "--meta", "none"]
            + ["--output-path", str(folder / PACKAGE), "--config", str(folder / "config.yml")],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        self.warnings = done.stdout + done.stderr
        sys.path.insert(0, str(folder))
        self.package = importlib.import_module(PACKAGE)

    def operation(self, method: str, path: str):
        found = self.spec["paths"][path][method.lower()]
        tag = snake(found["tags"][0]) if found.get("tags") else "default"
        name = f"{PACKAGE}.api.{tag}.{snake(found['operationId'])}"
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            said = [block for block in self.warnings.split("WARNING") if f"{method.upper()} {path} " in block]
            pytest.fail(f"{method} {path} was not generated ({name}): {said or self.warnings[-2000:]}")

    def body(self, operation):
        return typing.get_type_hints(operation.sync)["body"]

    def close(self, folder: Path):
        sys.path.remove(str(folder))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


@pytest.fixture
def generated(live_server, researcher, tmp_path):
    """(the generated package, an authenticated client of it, the token's secret)."""
    _, secret = tokens.create(researcher, name="generated", projects=[default_project()], ceiling="roles", days=1)
    spec = httpx.get(f"{live_server.url}/api/openapi.json", headers={"Authorization": f"Bearer {secret}"}).json()
    made = Generated(spec, tmp_path)
    client = made.package.AuthenticatedClient(base_url=live_server.url, token=secret, timeout=httpx.Timeout(60.0))
    yield made, client
    made.close(tmp_path)


def status(answer) -> str:
    return str(getattr(answer.status, "value", answer.status))


def test_import_job_dataset_and_download_through_a_generated_client(
    generated, start_worker, tiny_model_dir, admin_user
):
    made, client = generated
    start_worker("default,relevance")
    Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    model = make_model_version(str(tiny_model_dir), name="tiny-generated")
    # thresholds of 0: each map's whole note is one peak, so the one-peak build has one example a map
    profile = PeakProfile.objects.create(name="generated-flow", kernel_size=1, lower=0.0, upper=0.0)

    def follow(path: str, **ids):
        read = made.operation("GET", path)
        wait_for(lambda: status(read.sync(client=client, **ids)) in ENDED, timeout=120, message=path)
        answer = read.sync(client=client, **ids)
        assert status(answer) == "done", answer
        return answer

    File = importlib.import_module(f"{PACKAGE}.types").File
    launch_import = made.operation("POST", "/api/imports")
    upload = File(payload=io.BytesIO("".join(json.dumps(n) + "\n" for n in NOTES).encode()), file_name="notes.jsonl")
    body = made.body(launch_import)(
        file=upload, project=default_project().slug, kind="notes", corpus="generated ward", language="en"
    )
    imported = launch_import.sync(client=client, body=body)
    assert type(imported).__name__ == "ImportOut", imported
    assert follow("/api/imports/{job_id}", job_id=imported.id).created_count == 2

    corpora = made.operation("GET", "/api/corpora").sync(client=client, limit=200)
    assert type(corpora).__name__ == "CorpusOutPage" and corpora.next_ is None
    (corpus,) = [c for c in corpora.items if c.name == "generated ward"]
    notes = made.operation("GET", "/api/corpora/{corpus_id}/notes").sync(client=client, corpus_id=corpus.id, limit=1)
    assert len(notes.items) == 1 and "cursor=" in notes.next_  # `next` is a builtin: the generator names it next_

    launch_job = made.operation("POST", "/api/jobs")
    job_body = made.body(launch_job)(
        corpus=corpus.id, model_version=model.pk, task_selection="list", tasks=["heart-rate"]
    )
    job = launch_job.sync(client=client, body=job_body)
    assert type(job).__name__ == "JobOut", job
    assert follow("/api/jobs/{job_id}", job_id=job.id).done == 2

    launch_dataset = made.operation("POST", "/api/datasets")
    dataset_body = made.body(launch_dataset)(
        name="generated flow", corpus=corpus.id, model_version=model.pk, profile=profile.pk, mode="one_peak"
    )
    refused = launch_dataset.sync(client=client, body=dataset_body)
    assert type(refused).__name__ == "Conflict" and "not de-identified" in refused.detail
    mark_deidentified(Corpus.objects.get(pk=corpus.id), admin_user, confirm=True)
    built = launch_dataset.sync(client=client, body=dataset_body)
    assert type(built).__name__ == "DatasetOut", built
    dataset = follow("/api/datasets/{dataset_id}", dataset_id=built.id)
    assert dataset.stats["examples"] == 2

    download = made.operation("GET", "/api/datasets/{dataset_id}/download/{fmt}")
    answer = download.sync_detailed(client=client, dataset_id=dataset.id, fmt="jsonl")
    assert answer.status_code == 200
    archive = zipfile.ZipFile(io.BytesIO(answer.content))
    (rows_file,) = [name for name in archive.namelist() if name.endswith(".jsonl")]
    assert len(archive.read(rows_file).decode().splitlines()) == 2
