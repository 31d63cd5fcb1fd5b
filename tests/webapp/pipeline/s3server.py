"""An S3-compatible server for the storage tests: moto's standalone server (moto[s3] + Flask),
started by the test on a free local port, in this process. Real HTTP, real s3fs and botocore on
the client side: nothing of webapp.lib.storage is replaced."""

from __future__ import annotations

import socket
import uuid
from dataclasses import dataclass

import pytest

BUCKET = "artifacts"
# moto accepts any credentials; these are never real ones
KEY, SECRET, REGION = "testing", "testing", "us-east-1"


@dataclass
class S3Server:
    endpoint: str
    server: object

    @property
    def options(self) -> dict:
        """fsspec (s3fs) options reaching this server, as ARTIFACT_STORAGE_OPTIONS holds them."""
        return {"key": KEY, "secret": SECRET, "endpoint_url": self.endpoint, "client_kwargs": {"region_name": REGION}}

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=KEY,
            aws_secret_access_key=SECRET,
            region_name=REGION,
        )


def unreachable_options() -> dict:
    """Options of a storage nobody listens at (port 1), failing fast: one connection attempt."""
    return {
        "key": KEY,
        "secret": SECRET,
        "endpoint_url": "http://127.0.0.1:1",
        "client_kwargs": {"region_name": REGION},
        "config_kwargs": {"connect_timeout": 1, "retries": {"max_attempts": 1}},
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def s3_server():
    """A running S3-compatible server with an empty bucket BUCKET."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    running = S3Server(f"http://127.0.0.1:{port}", server)
    running.client().create_bucket(Bucket=BUCKET)
    yield running
    server.stop()


@pytest.fixture
def s3_storage(settings, s3_server):
    """ARTIFACT_STORAGE_URL and its options on the server, under a prefix of the test's own;
    returns a function listing the keys stored under that prefix (relative to it)."""
    prefix = f"test-{uuid.uuid4().hex[:12]}"
    settings.ARTIFACT_STORAGE_URL = f"s3://{BUCKET}/{prefix}"
    settings.ARTIFACT_STORAGE_OPTIONS = s3_server.options

    def keys() -> set[str]:
        listed = s3_server.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{prefix}/")
        return {o["Key"][len(prefix) + 1 :] for o in listed.get("Contents", [])}

    return keys
