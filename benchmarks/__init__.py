"""Every benchmark of the project, run one way: `python -m benchmarks NAME [options]`
(`python -m benchmarks` lists them). Each prints one JSON object with its figures, a simple
baseline measured in the same process and the machine's load average; README's figures come
from these. The app benchmarks (import, datasets, review, long-note, lifecycle) make and drop a
PostgreSQL database of their own (benchmarks/database.py)."""
