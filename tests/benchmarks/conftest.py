"""The ML tests' fixtures (tiny models, the patched child process) serve the benchmark tests too."""

from tests.ml.conftest import patched_child  # noqa: F401
