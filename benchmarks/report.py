"""Build docs/benchmarks.md from benchmarks/results/*.json.

Every number in the tables, and every figure the prose draws from a measurement, is read from a
result file; the prose around each table (what was measured, the conditions, whether a target is
met and why) is written beside it, one module of benchmarks/sections/ per part of the page
(`formats` holds the number formats and a result's conditions, `glance` the README's table). A few
figures in the prose were measured by hand (a profile, an earlier day's run) and have no result
file: the text says so where it gives them. tests/unit/test_benchmarks_doc.py checks that the
committed page is what this script writes, so a result changed without rebuilding the page fails
the tests.

It also writes the README's "results at a glance" table, between `<!-- results:start -->` and
`<!-- results:end -->`.

    ./run bench report                  # rewrite docs/benchmarks.md and the README's results table
    python benchmarks/report.py --check # exit 1 when either is out of date
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from sections import a3c, bcq, dqn, impala, memory, off_policy, offline, pixels, ppo, precision, spectrum, sweep
from sections.glance import glance

from acrl.core.files import write_text_atomic

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"
README = ROOT / "README.md"
GLANCE = ("<!-- results:start -->\n", "<!-- results:end -->")


# A section returns "" while its result file does not exist yet (the page then leaves it out).
def header(results: dict[str, dict]) -> str:
    return """# Benchmarks

Built by `./run bench report` (`benchmarks/report.py`) from the JSON in `benchmarks/results/`;
do not edit by hand. Each section names the command that regenerates its result file and the
conditions the file records.

Measured on this project's 2-core machines (no GPU; one torch thread per process unless a table says
otherwise; each section names the CPU its file records), each peer run side by side in the same
script.
The machine's speed varies a lot from day to day (Stable-Baselines3 PPO on CartPole ran at
1,400–2,100 steps/s here on 2026-11-30 and 5,500 on 2026-12-01, raw Ant-v5 stepping at
1,300–2,300 and 4,900; hand-read, no result file), and some runs shared it with other jobs, as
noted: the ratios, measured side by side in one run, are what to read. A benchmark writes to
`benchmarks/results/tmp/` unless given `--out benchmarks/results/NAME.json`."""


SECTIONS: list[Callable[[dict[str, dict]], str]] = [
    header,
    ppo.ppo_throughput,
    ppo.vector_env,
    ppo.ppo_solve,
    ppo.ppo_ant_long,
    a3c.a3c_scaling,
    a3c.a3c_vs_a2c,
    a3c.a3c_pendulum,
    impala.impala,
    off_policy.update_roofline,
    precision.precision,
    bcq.bcq_pendulum,
    bcq.bcq_hopper,
    bcq.bcq_halfcheetah,
    bcq.bcq_walker2d,
    spectrum.bcq_spectrum_hopper,
    off_policy.sac_hopper,
    sweep.sweep_speedup,
    pixels.minatar_vs_sb3,
    pixels.atari_speed,
    pixels.atari_profile,
    pixels.a3c_profile,
    pixels.pong,
    pixels.breakout,
    memory.memory,
    dqn.dqn_vs_sb3,
    dqn.dqn_minatar,
    bcq.discrete_bcq_breakout,
    offline.d4rl_hopper,
    offline.offline_vs_d3rlpy,
]
"""The page's sections in order."""


def load_results(directory: Path = RESULTS) -> dict[str, dict]:
    """Every `*.json` in `directory` (not its tmp/ scratch folder), keyed by file stem."""
    return {path.stem: json.loads(path.read_text()) for path in sorted(directory.glob("*.json"))}


def render(directory: Path = RESULTS) -> str:
    """The text of docs/benchmarks.md for the results in `directory`."""
    results = load_results(directory)
    return "\n\n".join(text for section in SECTIONS if (text := section(results))) + "\n"


def with_glance(readme: str, directory: Path = RESULTS) -> str:
    """`readme` with the text between its results markers replaced by `glance` of the results in `directory`."""
    start, end = readme.index(GLANCE[0]) + len(GLANCE[0]), readme.index(GLANCE[1])
    return readme[:start] + glance(load_results(directory)) + "\n" + readme[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/benchmarks.md differs, write nothing")
    args = parser.parse_args(argv)
    text, readme = render(), with_glance(README.read_text())
    if args.check:
        stale = [p.name for p, t in ((PAGE, text), (README, readme)) if not p.exists() or p.read_text() != t]
        if stale:
            print(f"{' and '.join(stale)} out of date: run ./run bench report", file=sys.stderr)
        return 1 if stale else 0
    write_text_atomic(PAGE, text)
    write_text_atomic(README, readme)
    print(f"wrote {PAGE.relative_to(ROOT)} and the results block of {README.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
