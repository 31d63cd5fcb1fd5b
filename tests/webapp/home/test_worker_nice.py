"""Workers start at a lower CPU priority than the web server: the demo's worker launch carries
`nice -n WORKER_NICE`, and compose's workers carry it too with a quarter of the web's CPU weight."""

from pathlib import Path

import yaml

from webapp.home.management.commands import rundemo

ROOT = Path(__file__).resolve().parents[3]


def test_every_demo_worker_starts_under_nice(settings):
    settings.WORKER_NICE = 10
    for cmd, _ in rundemo.worker_processes("python", cores=2):
        assert cmd[:4] == ["nice", "-n", "10", "python"]


def test_a_nice_level_of_zero_starts_them_as_they_were(settings):
    settings.WORKER_NICE = 0
    assert all(cmd[0] == "python" for cmd, _ in rundemo.worker_processes("python", cores=2))


def test_compose_workers_run_under_nice_with_less_cpu_weight_than_the_web():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    workers = [name for name in services if name.startswith("worker-")]
    assert len(workers) == 4
    for name in workers:
        assert services[name]["command"][:3] == ["nice", "-n", "${WORKER_NICE:-19}"], name
        assert services[name]["cpu_shares"] * 4 == services["web"]["cpu_shares"], name
    assert "WORKER_NICE" in (ROOT / "docs" / "operations.md").read_text()
