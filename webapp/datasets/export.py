"""Export a finished dataset version: JSON Lines, Parquet, or a Hugging Face `datasets` folder.

Every export carries a manifest describing how the dataset was made and who exported it, with
the build's account of the note-task pairs it read, kept and excluded by reason ("pairs")
(`manifest.json`; a Parquet file also holds it in its file key-value metadata under
`decselfmask.manifest`: `pyarrow.parquet.read_metadata(path).metadata`).
Every export is audited (who, which dataset, format, row count; never note text).

Data leaves only through the gate (webapp.deid.gate): a download, and a worker export when it is
requested (webapp.datasets.launch.request_export), of a dataset whose corpus is not de-identified
is refused unless a project admin confirmed (`confirm_identifiable`, audited). An export folder is
scanned as it is written (webapp.deid_ops.scanning.ExportScan: the masked input and the label of each
row, with the project's detector): its counts per identifier type, never a value, are kept on the
DatasetExport (`residual`) and in its audit row. A zip download made while it is sent is not
scanned (it would go at the detector's pace): prepare an export folder to have its counts.

The rows (one per example, in example order) are webapp.datasets.rows's. The formats are one
table of writers, one module each (webapp.datasets.formats: JSONL, Parquet, a Hugging Face
`datasets` folder; an unknown name is refused with the supported ones): a data file written
batch by batch, or a folder a worker prepares; the dataset page's buttons, the command, the API
and the writers here read it. Memory stays bounded whatever the size: rows are read
EXPORT_BATCH at a time and written batch by batch. Downloads from the pages are zip files
streamed as they are written (the zip format needs no seeking: sizes go in data descriptors);
nothing is built in memory or on disk for a data file.

Folder layout written by `write_export` (the command line and the export worker): the format's
data file (examples.jsonl, examples.parquet) or folder (the `datasets.save_to_disk` files:
`datasets.load_from_disk(folder)`), and manifest.json.

A worker export (`run_export`) is a unit of long work (webapp.lifecycle): it runs inside a
`Heartbeat` that carries the rows written so far, and stops after a batch when cancelled or
taken over by another worker. Each attempt writes from scratch into a folder of its own
(DATA_DIR/exports/dataset-D/.export-E-FMT/attempt-N, where an attempt also removes what earlier
attempts of a killed worker left) and moves it to its place only while it still holds the
export, its row locked: a worker presumed dead never overwrites the folder of the one that took
over.

With ARTIFACT_STORAGE_URL set, web and workers need not share DATA_DIR (webapp.shared_files):
the worker publishes its attempt's folder to `<storage>/exports/dataset-D/export-E-FMT/attempt-N/`
(manifest last; an attempt's own name, so two attempts never write into one folder), removes its
local copy, and ends the export DONE with that path while it still holds it (else it removes
what it published). A download streams a folder found under the web machine's DATA_DIR as
before, else file by file from the storage, each file's hash checked. A storage out of reach
fails the export (or refuses the download) in plain words naming the storage.
"""

from __future__ import annotations

import json
import shutil
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from ml.masking import DSM_INSTRUCTION
from webapp import shared_files
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.datasets.formats import COLUMNS, EXPORT_BATCH, FORMATS, ExportStopped, Relay, UnknownFormat, get_format
from webapp.datasets.formats.parquet import MANIFEST_KEY as PARQUET_MANIFEST_KEY
from webapp.datasets.models import DatasetExport, DatasetVersion
from webapp.datasets.rows import Counter, iter_batches
from webapp.deid import gate
from webapp.deid_ops.scanning import ExportScan
from webapp.lib.code_version import code_version
from webapp.lib.disk import disk_full
from webapp.lifecycle import units
from webapp.lifecycle.heartbeat import beating

MANIFEST = "manifest.json"
__all__ = ["COLUMNS", "EXPORT_BATCH", "ExportStopped", "FORMATS", "PARQUET_MANIFEST_KEY", "iter_batches"]


class ExportError(Exception):
    """Said to the user as written."""


@dataclass
class ExportResult:
    path: Path | str  # the folder written, or its URI in the storage once published there
    rows: int
    size_bytes: int
    manifest: dict
    residual: dict | None = None  # the residual scan of the rows written (webapp.deid_ops.scanning)


# ---------------------------------------------------------------- rows and manifest


def manifest(dataset: DatasetVersion, *, fmt: str, rows: int, actor=None, files=()) -> dict:
    """Everything needed to know how the exported rows were made."""
    profile, corpus, model = dataset.profile, dataset.corpus, dataset.model_version
    return {
        "dataset": {"id": dataset.pk, "name": dataset.name, "version": dataset.version},
        "corpus": {"id": corpus.pk, "name": corpus.name, "language": corpus.language},
        "model_version": {"id": model.pk, "name": model.name, "family": model.family, "path": model.path},
        "method": dataset.method,
        "template": dataset.template,
        "config_key": dataset.config_key,
        "profile": {"id": profile.pk, "name": profile.name, "version": profile.version, **profile.params.to_dict()},
        "mode": dataset.mode,
        "mask_token": dataset.mask_token,
        "seed": dataset.seed,
        "filters": dataset.filters,
        "jobs": sorted(dataset.jobs.values_list("pk", flat=True)),
        "stats": dataset.stats,
        "pairs": pairs_accounting(dataset.stats),
        "created": dataset.created.isoformat(),
        "created_by": dataset.created_by.get_username() if dataset.created_by else None,
        "exported": timezone.now().isoformat(),
        "exported_by": _actor_name(actor),
        "rows": rows,
        "format": fmt,
        "files": list(files),
        "columns": COLUMNS,
        "dsm_instruction": DSM_INSTRUCTION,
        "code_version": code_version(settings.BASE_DIR, settings.CODE_VERSION),
    }


def pairs_accounting(stats: dict) -> dict | None:
    """The build's account of every note-task pair of the selection, as it stored it:
    {"read", "kept", "excluded": {reason: {"label", "count"}}} (read = kept + the excluded
    counts); None for a version built before the builder kept one."""
    stored = (stats or {}).get("pairs_accounting")
    if not stored:
        return None
    return {
        "read": stored["read"],
        "kept": stored["kept"],
        "excluded": {reason: {"label": label, "count": count} for reason, label, count in stored["excluded"]},
    }


class _DataFiles(Mapping):
    """The formats downloadable at once, and their data file, as the table has them now."""

    def __getitem__(self, name: str) -> str:
        data_file = FORMATS[name].data_file
        if not data_file:
            raise KeyError(name)
        return data_file

    def __iter__(self):
        return (name for name, kind in FORMATS.items() if kind.data_file)

    def __len__(self) -> int:
        return sum(1 for _ in self)


DATA_FILES = _DataFiles()


# ---------------------------------------------------------------- to a folder (command line, worker)


def write_export(
    dataset: DatasetVersion, fmt: str, out_dir, actor=None, progress: Callable[[int], None] | None = None
) -> ExportResult:
    """Write the export folder `out_dir` (created; must not hold files) and audit it.
    `progress(rows_so_far)` is called after each batch; it may raise ExportStopped."""
    _check(dataset, fmt)
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(f"{out} already exists and is not an empty folder; choose a new folder.")
    out.mkdir(parents=True, exist_ok=True)
    corpus = dataset.corpus
    counter = Counter(ExportScan(corpus.project, corpus.language), corpus.pk)
    started = time.perf_counter()
    describe = lambda rows: manifest(dataset, fmt=fmt, rows=rows, actor=actor)  # noqa: E731
    get_format(fmt).write_folder(iter_batches(dataset), out, counter, progress or (lambda rows: None), describe)
    files = sorted(p.name for p in out.iterdir()) + [MANIFEST]
    info = manifest(dataset, fmt=fmt, rows=counter.rows, actor=actor, files=files)
    (out / MANIFEST).write_text(json.dumps(info, indent=2, ensure_ascii=False), encoding="utf-8")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    residual = counter.scan.summary()
    seconds = round(time.perf_counter() - started, 2)
    _audit(actor, dataset, fmt, counter.rows, delivery="folder", seconds=seconds, residual=residual)
    return ExportResult(out, counter.rows, size, info, residual)


# ---------------------------------------------------------------- downloads (zip streams)


def download_name(dataset: DatasetVersion, fmt: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in dataset.name)
    return f"{safe}-v{dataset.version}-{fmt}.zip"


def stream_download(dataset: DatasetVersion, fmt: str, actor, *, confirm_identifiable: bool = False) -> Iterator[bytes]:
    """Audit now, then return the zip (data file + manifest.json) as a stream of bytes, made
    from the database while it is sent. JSONL and Parquet only (HF folders: `stream_folder`).
    Raises gate.Refused for a corpus that is not de-identified, unconfirmed."""
    _check(dataset, fmt)
    if fmt not in DATA_FILES:
        raise ExportError(
            _("%(format)s is a folder a worker prepares first, then downloaded.") % {"format": FORMATS[fmt].label}
        )
    gate.release([dataset.corpus], actor, confirm_identifiable, what="dataset download", obj=dataset, format=fmt)
    _audit(actor, dataset, fmt, dataset.example_count, delivery="download")
    return _zip_download(dataset, fmt, actor)


def _zip_download(dataset, fmt, actor) -> Iterator[bytes]:
    counter = Counter()
    pipe = _Pipe()
    kind = get_format(fmt)
    describe = lambda rows: manifest(dataset, fmt=fmt, rows=rows, actor=actor)  # noqa: E731
    with zipfile.ZipFile(pipe, "w", allowZip64=True) as zf:
        name = kind.data_file
        with zf.open(_entry(name, kind.deflate), "w", force_zip64=True) as entry:
            for _ in kind.steps(iter_batches(dataset), Relay(entry), counter, describe):
                yield pipe.take()
        info = manifest(dataset, fmt=fmt, rows=counter.rows, actor=actor, files=[name, MANIFEST])
        zf.writestr(_entry(MANIFEST, True), json.dumps(info, indent=2, ensure_ascii=False))
    yield pipe.take()


def stream_folder(export: DatasetExport, actor, *, confirm_identifiable: bool = False) -> Iterator[bytes]:
    """Audit now, then stream a finished export folder as a zip, 1 MB at a time. Raises
    gate.Refused for a corpus that is not de-identified, unconfirmed."""
    if export.expired:
        raise ExportError(
            _("The files of this export were removed on %(date)s under the project's retention; prepare it again.")
            % {"date": f"{export.expired:%Y-%m-%d}"}
        )
    if not export.is_done or not export.path:
        raise ExportError(_("This export is not ready yet."))
    gone = ExportError(_("The files of this export are no longer on the server; prepare it again."))
    folder = export_folder(export)
    if folder.is_dir():
        files = _local_files(folder)
    elif shared_files.enabled():
        try:
            files = shared_files.files(export.path)
        except shared_files.NotPublished:
            raise gone from None
        except shared_files.StorageError as exc:
            raise ExportError(
                _("The files of this export could not be read from the shared storage (%(error)s).") % {"error": exc}
            ) from None
    else:
        raise gone
    what = "dataset export download"
    gate.release([export.dataset.corpus], actor, confirm_identifiable, what=what, obj=export, format=export.format)
    _audit(actor, export.dataset, export.format, export.rows or 0, delivery="download", export_id=export.pk)
    return _zip_files(files)


def _local_files(folder: Path) -> list[tuple[str, Iterator[bytes]]]:
    def chunks(path: Path) -> Iterator[bytes]:
        with open(path, "rb") as src:
            while chunk := src.read(1 << 20):
                yield chunk

    paths = sorted(p for p in folder.rglob("*") if p.is_file())
    return [(path.relative_to(folder).as_posix(), chunks(path)) for path in paths]


def _zip_files(files: list[tuple[str, Iterator[bytes]]]) -> Iterator[bytes]:
    """A zip of (name, its bytes in chunks), made as it is sent, a chunk at a time."""
    pipe = _Pipe()
    with zipfile.ZipFile(pipe, "w", allowZip64=True) as zf:
        for arcname, chunks in files:
            with zf.open(_entry(arcname, arcname.endswith(".json")), "w", force_zip64=True) as entry:
                for chunk in chunks:
                    entry.write(chunk)
                    yield pipe.take()
    yield pipe.take()


class _Pipe:
    """A write-only, unseekable file whose bytes the generator takes out as they come."""

    def __init__(self):
        self.chunks: list[bytes] = []

    def write(self, data) -> int:
        self.chunks.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def take(self) -> bytes:
        data = b"".join(self.chunks)
        self.chunks.clear()
        return data


def _entry(name: str, deflate: bool) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
    info.compress_type = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED  # Parquet/Arrow: compressed already
    return info


# ---------------------------------------------------------------- worker exports


def export_folder(export: DatasetExport) -> Path:
    return Path(settings.DATA_DIR) / export.path


def _place(export: DatasetExport) -> Path:
    """Where a worker export's folder goes, relative to DATA_DIR."""
    return Path("exports") / f"dataset-{export.dataset_id}" / f"export-{export.pk}-{export.format}"


def scratch_space(export: DatasetExport) -> Path:
    """The folder the attempts of a worker export write in before their result is moved in place."""
    place = Path(settings.DATA_DIR) / _place(export)
    return place.with_name(f".{place.name}")


def claim_export(export_id: int, worker: str = "") -> DatasetExport | None:
    """Take a queued export, or one whose worker is lost (webapp.lifecycle.units); None when
    there is nothing to do. Its rows count again from 0."""
    return units.claim(
        DatasetExport,
        export_id,
        worker,
        rows=None,
        size_bytes=None,
        path="",
        residual=None,
        select_related=(
            "dataset__profile",
            "dataset__corpus__project",
            "dataset__model_version",
            "created_by",
        ),
    )


def fail_export(export: DatasetExport, exc: BaseException) -> str:
    """Record a failed export in plain words (only while this attempt holds it). Returns the message."""
    if isinstance(exc, ExportError):
        message = str(exc)
    elif isinstance(exc, shared_files.StorageError):
        message = f"The export could not be put in the shared storage ({exc}); prepare it again once it can be reached."
    elif full := disk_full(exc):
        message = (
            f"The export stopped: {full} ({type(exc).__name__}). Free some space under the data folder, "
            "then prepare it again."
        )
    else:
        message = (
            f"The export stopped because of an unexpected error ({type(exc).__name__}). "
            f"The worker log has the details under export {export.pk}; preparing it again may work."
        )
    if units.fail(export, message):
        shutil.rmtree(scratch_space(export) / f"attempt-{export.attempts}", ignore_errors=True)
    return message


def run_export(export: DatasetExport, heart=None) -> ExportResult | None:
    """Write a claimed DatasetExport's folder under DATA_DIR/exports from scratch, inside `heart`
    (the runner's) or a Heartbeat of its own, and end it DONE. None when it stopped early:
    cancelled (ended CANCELLED) or taken over by another worker (nothing more written). See the
    module doc."""
    scratch = scratch_space(export)
    mine = scratch / f"attempt-{export.attempts}"
    if scratch.exists():  # what earlier attempts (a killed worker) left: start again from nothing
        for leftover in scratch.iterdir():
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)
    with beating(export, heart) as heart:

        def progress(rows: int) -> None:
            heart.report(rows=rows)
            if heart.cancelling or heart.lost:
                raise ExportStopped

        try:
            result = write_export(export.dataset, export.format, mine, actor=export.created_by, progress=progress)
        except ExportStopped:
            shutil.rmtree(mine, ignore_errors=True)
            if not heart.lost and units.cancelled(export):
                _remove_empty(scratch)
            return None
        return _publish(export, result) if shared_files.enabled() else _move_in_place(export, result)


def _publish(export: DatasetExport, result: ExportResult) -> ExportResult | None:
    """End the export with its folder published to the storage (module doc)."""
    relative = (_place(export) / f"attempt-{export.attempts}").as_posix()
    try:
        if not units.owned(export).exists():  # taken over meanwhile: not worth the upload
            return None
        published = shared_files.put(result.path, relative)
        done = units.finish(
            export, path=relative, rows=result.rows, size_bytes=result.size_bytes, residual=result.residual
        )
        if not done:
            shared_files.remove(relative)  # taken over while publishing: its worker publishes its own
            return None
    finally:
        shutil.rmtree(result.path, ignore_errors=True)
        _remove_empty(Path(result.path).parent)
    result.path = published
    return result


def _move_in_place(export: DatasetExport, result: ExportResult) -> ExportResult | None:
    relative = _place(export)
    target = Path(settings.DATA_DIR) / relative
    with transaction.atomic():
        if not units.owned(export).select_for_update().exists():  # taken over: its worker writes the folder
            shutil.rmtree(result.path, ignore_errors=True)
            _remove_empty(result.path.parent)
            return None
        if target.exists():
            shutil.rmtree(target)
        result.path.rename(target)
        units.finish(
            export, path=str(relative), rows=result.rows, size_bytes=result.size_bytes, residual=result.residual
        )
    _remove_empty(result.path.parent)
    result.path = target
    return result


def discard_scratch(export: DatasetExport) -> None:
    """Remove what the attempts of an export ended without them (cancelled while its worker was lost)."""
    shutil.rmtree(scratch_space(export), ignore_errors=True)


def _remove_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:  # not empty (another attempt's files) or already gone
        pass


# ---------------------------------------------------------------- helpers


def _check(dataset: DatasetVersion, fmt: str) -> None:
    try:
        get_format(fmt)
    except UnknownFormat as exc:
        raise ExportError(str(exc)) from None
    if not dataset.is_done:
        raise ExportError(
            _("Only a finished dataset can be exported; this one is %(status)s.")
            % {"status": dataset.get_status_display().lower()}
        )
    if not dataset.example_count:
        raise ExportError(_("This dataset has 0 examples: there is nothing to export."))


def _audit(actor, dataset, fmt, rows, **details) -> None:
    record(
        actor,
        AuditEvent.Action.EXPORT,
        dataset,
        name=dataset.name,
        version=dataset.version,
        format=fmt,
        rows=rows,
        **details,
    )


def _actor_name(actor) -> str:
    if getattr(actor, "is_authenticated", False):
        return actor.get_username()
    return str(actor) if actor else "system"
