"""The names of the dataset kinds' tasks, for callers that import them (tests, scripts): every kind
runs through the one task of workers.runner; the work is webapp.datasets.building / export."""

from workers.runner import TASKS

build_dataset = TASKS["dataset build"]
export_dataset = TASKS["export"]
