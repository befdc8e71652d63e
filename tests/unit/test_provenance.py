"""acrl.core.provenance: what a result records about the run that produced it."""

from __future__ import annotations

import subprocess
import sys

from acrl.core import provenance as prov
from tests.conftest import ROOT, git_head


def test_provenance_records_the_conditions_and_the_commit_of_this_checkout():
    meta = prov.provenance([0.5, 0.25, 0.125], ["no-such-distribution"])
    assert meta["load_average_before"] == [0.5, 0.25, 0.125] and len(meta["load_average_after"]) == 3
    assert meta["versions"]["no-such-distribution"] is None and meta["versions"]["acrl"]
    assert meta["date"].endswith("+00:00") and meta["cores"] >= 1
    assert meta["commit"] == git_head() and prov.CHECKOUT == ROOT
    merged = prov.provenance(None)  # a result that measures nothing: no load average
    assert merged["load_average_before"] is None and merged["load_average_after"] is None


def test_provenance_keeps_the_commit_taken_when_the_work_started():
    origin = {"commit": "0" * 40, "dirty": True}
    meta = prov.provenance([0.0, 0.0, 0.0], origin=origin)
    assert meta["commit"] == "0" * 40 and meta["dirty"] is True


def test_an_installed_copy_inside_another_repository_records_no_commit(tmp_path, monkeypatch):
    """A copy of acrl in site-packages of a virtualenv that lies inside some git repository is not that
    repository's code: no commit rather than the wrong one."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    site = tmp_path / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    monkeypatch.setattr(prov, "CHECKOUT", site)
    assert prov.source() == {"commit": None, "dirty": False}


def test_the_command_line_is_the_one_to_type_again(monkeypatch):
    cases = [
        (["/venv/bin/acrl", "train", "--env", "a b"], "acrl train --env 'a b'"),
        ([str(ROOT / "acrl" / "__main__.py"), "evaluate", "runs/x"], "python -m acrl evaluate runs/x"),
        ([str(ROOT / "benchmarks" / "vector_env.py"), "--out", "y"], "python benchmarks/vector_env.py --out y"),
        (["/elsewhere/script.py", "-v"], "python /elsewhere/script.py -v"),
    ]
    for argv, expected in cases:
        monkeypatch.setattr(sys, "argv", argv)
        assert prov.command_line() == expected
