"""Parquet: examples.parquet, a row group per batch (pyarrow ParquetWriter, zstd), the manifest in
its key-value metadata under `decselfmask.manifest`
(`pyarrow.parquet.read_metadata(path).metadata`)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from webapp.datasets.formats import SCHEMA, DatasetFormat

MANIFEST_KEY = "decselfmask.manifest"


def steps(batches, sink, counter, describe) -> Iterator[None]:
    """`describe(rows)` -> the manifest, stored in the file's metadata when it is closed."""
    writer = pq.ParquetWriter(sink, SCHEMA, compression="zstd")
    try:
        for rows in batches:
            writer.write_table(pa.Table.from_pylist(rows, schema=SCHEMA))
            counter.written(rows)
            yield
        writer.add_key_value_metadata({MANIFEST_KEY: json.dumps(describe(counter.rows))})
    finally:
        writer.close()


FORMAT = DatasetFormat("parquet", "Parquet", "examples.parquet", steps, deflate=False)
