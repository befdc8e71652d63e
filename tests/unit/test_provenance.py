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


XEON = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu sse2 avx avx2 avx512f avx512_bf16 amx_bf16 amx_tile

processor\t: 1
model name\t: another
"""


def test_the_cpu_is_recorded_with_its_generation_and_vector_extensions(tmp_path, monkeypatch):
    """A virtual machine's model name alone ("AMD EPYC") does not tell Zen 3 from Zen 4: the record adds the
    vendor, family and model numbers and the extensions that change torch's speed, from the first processor."""
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(XEON)
    expected = "Intel(R) Xeon(R) Processor (GenuineIntel family 6 model 143; AVX-512, AVX512-BF16, AMX-BF16)"
    assert prov.cpu_model(cpuinfo) == expected
    zen3 = "vendor_id : AuthenticAMD\ncpu family : 25\nmodel : 1\nmodel name : AMD EPYC\nflags : sse2 avx avx2\n"
    cpuinfo.write_text(zen3)
    assert prov.cpu_model(cpuinfo) == "AMD EPYC (AuthenticAMD family 25 model 1; AVX2)"
    cpuinfo.write_text("model name : Some CPU\n")  # nothing more known: the name alone
    assert prov.cpu_model(cpuinfo) == "Some CPU"
    monkeypatch.setattr(prov.platform, "processor", lambda: "arm")  # no model name (Arm's cpuinfo), or no file
    cpuinfo.write_text("processor : 0\nFeatures : fp asimd bf16\n")
    assert prov.cpu_model(cpuinfo) == "arm" and prov.cpu_model(tmp_path / "missing") == "arm"
