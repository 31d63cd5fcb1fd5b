"""A Hugging Face `datasets` folder (`datasets.load_from_disk(folder)`), prepared by a worker:
`Dataset.from_generator` over the rows (Arrow files written batch by batch into a cache inside a
temporary folder beside the output, memory-mapped), then `save_to_disk`. (`Dataset.from_parquet`
is not used: with datasets 5.0.1 its memory grows with the dataset, about 0.6 GB for 1 GB.)"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from django.utils.translation import gettext_lazy

from webapp.datasets.formats import EXPORT_BATCH, SCHEMA, DatasetFormat, ExportStopped

# What the generator of each export running in this process reads, by output folder: it gets the
# key, not the batches, because datasets hashes (pickles) its arguments
_RUNNING: dict[str, tuple] = {}  # key -> (batches, counter, progress)


def folder(batches, out: Path, counter, progress) -> None:
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import datasets

    datasets.disable_progress_bars()
    key = str(out)
    _RUNNING[key] = (batches, counter, progress)
    try:
        with tempfile.TemporaryDirectory(prefix=".dsm-export-", dir=out.parent) as tmp:
            try:
                hf = datasets.Dataset.from_generator(
                    rows,
                    gen_kwargs={"key": key},
                    features=datasets.Features.from_arrow_schema(SCHEMA),
                    cache_dir=str(Path(tmp) / "cache"),
                    keep_in_memory=False,
                    writer_batch_size=EXPORT_BATCH,
                )
            except Exception as exc:  # datasets wraps what the generator raised
                if isinstance(exc.__cause__, ExportStopped):
                    raise exc.__cause__ from None
                raise
            counter.rows = hf.num_rows
            hf.save_to_disk(str(out), max_shard_size="500MB")
            del hf  # release the memory-mapped cache files before the folder is removed
    finally:
        del _RUNNING[key]


def rows(key: str):
    """The rows one by one, for datasets.Dataset.from_generator (module level: it is hashed by name)."""
    batches, counter, progress = _RUNNING[key]
    counter.rows = 0
    for batch in batches:
        yield from batch
        counter.written(batch)
        progress(counter.rows)


FORMAT = DatasetFormat("hf", gettext_lazy("a Hugging Face dataset"), folder=folder)
