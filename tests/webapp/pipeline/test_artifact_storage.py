"""Artifacts every worker can reach (webapp.lib.storage, webapp.pipeline.modelcache).

Object storage: a real S3-compatible server (moto's standalone server, tests/webapp/pipeline/
s3server.py) reached over HTTP by s3fs. Shared filesystem: a temporary folder plays the share;
the "trainer" writes under its own DATA_DIR, publishes to the share and its folder is then
deleted, and the "worker" (another DATA_DIR and cache) loads the model from the share.
"""

import os
import shutil
import threading
from pathlib import Path

import pytest
import torch

from tests.webapp.pipeline import s3server
from tests.webapp.pipeline.factories import make_model_version
from tests.webapp.pipeline.s3server import BUCKET, unreachable_options
from webapp.lib import storage
from webapp.pipeline import modelcache

s3_server = s3server.s3_server  # the fixture (session-scoped: one server)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A tiny random Llama and its tokenizer in a folder (the trainer's final/ folder)."""
    from tests.ml.conftest import build_model, build_tokenizer

    folder = tmp_path_factory.mktemp("final")
    tokenizer = build_tokenizer("chatml")
    build_model("llama", len(tokenizer)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(autouse=True)
def _fresh_model_cache():
    modelcache.clear()
    yield
    modelcache.clear()


def files_of(folder: Path) -> dict[str, bytes]:
    skip = {storage.MANIFEST, ".last-used"}
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and p.name not in skip
    }


def weights(loaded) -> dict[str, torch.Tensor]:
    return {name: p.detach().float().cpu() for name, p in loaded.model.state_dict().items()}


def test_a_model_published_to_object_storage_is_fetched_into_the_cache_and_loads(
    db, settings, s3_server, tiny_model, tmp_path
):
    settings.ARTIFACT_STORAGE_URL = f"s3://{BUCKET}/run-a"
    settings.ARTIFACT_STORAGE_OPTIONS = s3_server.options
    settings.ARTIFACT_CACHE_DIR = tmp_path / "cache"
    uri = modelcache.publish_model(tiny_model, "run1-dsm")
    manifest = storage.read_manifest(uri, s3_server.options)
    assert uri == f"s3://{BUCKET}/run-a/models/run1-dsm-{manifest['digest'][:12]}"
    stored = {o["Key"] for o in s3_server.client().list_objects_v2(Bucket=BUCKET, Prefix="run-a/")["Contents"]}
    assert stored == {
        f"run-a/models/run1-dsm-{manifest['digest'][:12]}/{rel}" for rel in [*manifest["files"], storage.MANIFEST]
    }

    version = make_model_version(uri, name="tiny+dsm-run1")
    loaded = modelcache.loaded_model(version, "float32")
    cached = settings.ARTIFACT_CACHE_DIR / manifest["digest"][:32]
    assert Path(loaded.path) == cached
    assert files_of(cached) == files_of(tiny_model)  # byte for byte
    from ml.models import load_model

    original = load_model(str(tiny_model), device="cpu", dtype=torch.float32)
    # the same bytes on disk give the same tensors: exact equality, no tolerance
    assert all(torch.equal(weights(loaded)[k], v) for k, v in weights(original).items())


def test_a_fetched_model_is_used_again_without_reaching_the_storage(s3_server, tiny_model, tmp_path):
    uri = storage.publish_named(tiny_model, f"s3://{BUCKET}/reuse", "m", s3_server.options)
    first = storage.fetch(uri, tmp_path / "cache", s3_server.options)
    assert storage.fetch(uri, tmp_path / "cache", unreachable_options()) == first
    with pytest.raises(storage.StorageError, match="unreachable"):
        storage.fetch(uri, tmp_path / "other-cache", unreachable_options())


def test_a_file_that_does_not_match_its_manifest_is_refused_and_nothing_is_cached(s3_server, tiny_model, tmp_path):
    uri = storage.publish_named(tiny_model, f"s3://{BUCKET}/tampered", "m", s3_server.options)
    key = uri.removeprefix(f"s3://{BUCKET}/") + "/config.json"
    s3_server.client().put_object(Bucket=BUCKET, Key=key, Body=b'{"changed": true}')
    with pytest.raises(storage.StorageError, match="config.json does not match its manifest"):
        storage.fetch(uri, tmp_path / "cache", s3_server.options)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == []  # no partial folder left behind


def test_a_folder_without_its_manifest_is_not_complete_and_is_not_fetched(s3_server, tiny_model, tmp_path):
    uri = f"s3://{BUCKET}/half-written"
    s3_server.client().put_object(Bucket=BUCKET, Key="half-written/config.json", Body=b"{}")
    with pytest.raises(storage.StorageError, match="no artifact-manifest.json"):
        storage.fetch(uri, tmp_path / "cache", s3_server.options)


def test_processes_fetching_at_once_end_with_one_complete_folder(tiny_model, tmp_path):
    uri = "file://" + storage.publish_named(tiny_model, str(tmp_path / "share"), "m")
    results, errors = [], []

    def fetch():
        try:
            results.append(storage.fetch(uri, tmp_path / "cache"))
        except Exception as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=fetch) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(set(results)) == 1
    assert sorted(p.name for p in (tmp_path / "cache").iterdir() if not p.name.startswith(".uris")) == [results[0].name]
    assert files_of(results[0]) == files_of(tiny_model)


def test_the_cache_keeps_within_its_bound_dropping_the_least_recently_used(tmp_path):
    uris = {}
    for name in "abc":
        folder = tmp_path / "src" / name
        folder.mkdir(parents=True)
        (folder / "weights.bin").write_bytes(os.urandom(1_000_000))
        uris[name] = "file://" + storage.publish_named(folder, str(tmp_path / "share"), name)
    cache = tmp_path / "cache"
    a = storage.fetch(uris["a"], cache, max_bytes=2_500_000)
    b = storage.fetch(uris["b"], cache, max_bytes=2_500_000)
    os.utime(b / ".last-used", (1, 1))  # b is now the least recently used
    os.utime(a / ".last-used", (2, 2))
    c = storage.fetch(uris["c"], cache, max_bytes=2_500_000)
    assert {p.name for p, _, _ in storage.cached(cache)} == {a.name, c.name}
    assert sum(size for _, size, _ in storage.cached(cache)) <= 2_500_000
    assert storage.fetch(uris["b"], cache, max_bytes=2_500_000).is_dir()  # fetched again when needed


def _trainer_run(tmp_path):
    """A DSM training run launched through the domain (its model version: the registry default)."""
    from tests.webapp.training.factories import make_dataset, make_labeled_corpus
    from tests.webapp.training.factories import make_model_version as make_base
    from webapp.training import runs

    corpus, base = make_labeled_corpus(8), make_base("smollm2-135m-instruct")
    spec = runs.RunSpec(
        kind="dsm",
        preset="",
        model_version=base,
        config={"train": {"warmup_ratio": 0.0}},
        dataset=make_dataset(corpus, base),
    )
    return runs.launch(spec)


@pytest.mark.parametrize("scheme", ["", "file://"])
def test_a_trained_model_registered_on_a_shared_folder_loads_on_another_machine(
    db, settings, tiny_model, tmp_path, scheme
):
    """The share is a real folder; the trainer's own DATA_DIR is gone when the worker loads. A
    plain path is read in place (nothing cached); file:// is copied into the worker's cache."""
    from webapp.training import runtime

    share = tmp_path / "share"
    trainer_final = tmp_path / "trainer-data" / "training" / "run-1" / "final"
    shutil.copytree(tiny_model, trainer_final)
    settings.ARTIFACT_STORAGE_URL = f"{scheme}{share}"
    run = _trainer_run(tmp_path)
    version = runtime.register(run, trainer_final, "dsm")
    assert version.path.startswith(f"{scheme}{share}/models/run{run.pk}-dsm-")
    assert runtime.register(run, trainer_final, "dsm") == version  # idempotent: published once
    shutil.rmtree(tmp_path / "trainer-data")  # the training machine's disk is not reachable

    settings.DATA_DIR = tmp_path / "worker-data"
    settings.ARTIFACT_CACHE_DIR = tmp_path / "worker-data" / "artifact-cache"
    loaded = modelcache.loaded_model(version, "float32")
    assert files_of(Path(loaded.path)) == files_of(tiny_model)
    if scheme:
        assert Path(loaded.path).parent == settings.ARTIFACT_CACHE_DIR
    else:
        assert Path(loaded.path) == share / version.path.removeprefix(f"{share}/")
        assert not settings.ARTIFACT_CACHE_DIR.exists()


def test_a_model_this_worker_cannot_reach_raises_model_unavailable(db, settings, s3_server, tiny_model, tmp_path):
    settings.ARTIFACT_CACHE_DIR = tmp_path / "cache"
    uri = storage.publish_named(tiny_model, f"s3://{BUCKET}/unreachable", "m", s3_server.options)
    settings.ARTIFACT_STORAGE_OPTIONS = unreachable_options()
    with pytest.raises(modelcache.ModelUnavailable, match="storage unreachable"):
        modelcache.loaded_model(make_model_version(uri, name="remote"))
    with pytest.raises(modelcache.ModelUnavailable, match="no model"):
        modelcache.loaded_model(make_model_version(str(tmp_path / "not-here"), name="missing"))


def test_the_uri_in_messages_never_carries_credentials():
    assert storage.safe("s3://user:secret@host/bucket/x") == "s3://host/bucket/x"
    assert storage.scheme("/mnt/share/models/x") == "" and storage.scheme("file:///mnt/x") == "file"
