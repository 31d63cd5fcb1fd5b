import subprocess

from webapp.lib.code_version import code_version


def _git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_it_names_the_commit_and_says_when_tracked_files_changed(tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    _git(tmp_path, "add", "a.py")
    _git(tmp_path, "-c", "user.email=t@example.org", "-c", "user.name=t", "commit", "-qm", "one")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    assert code_version(tmp_path) == head
    code_version.cache_clear()
    (tmp_path / "a.py").write_text("x = 2\n")
    assert code_version(tmp_path) == head + "-dirty"
    code_version.cache_clear()


def test_without_a_checkout_it_gives_the_fallback(tmp_path):
    assert code_version(tmp_path / "nowhere", "abc123") == "abc123"
    assert code_version(tmp_path, "image-7") == "image-7"
    code_version.cache_clear()
