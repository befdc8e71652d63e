"""Number formats, markdown tables and a result's conditions: what every section of docs/benchmarks.md
writes its numbers with."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

MINUS = "\u2212"


def n(x: float, digits: int = 0) -> str:
    """`x` with thousands separators and a typographic minus: -1632.4 -> '−1,632'."""
    text = f"{x:,.{digits}f}"
    return text.replace("-", MINUS) if text.lstrip("-0.,") else text.lstrip("-")


def signed(x: float, digits: int = 0) -> str:
    """A value estimate with its sign: +742, −686."""
    return ("+" if x >= 0 else "") + n(x, digits)


def pm(pair: list[float], digits: int = 0) -> str:
    """A [mean, std] pair as 'mean ± std'."""
    return f"{n(pair[0], digits)} ± {n(pair[1], digits)}"


def x(ratio: float, digits: int = 2) -> str:
    """A ratio: 1.95×."""
    return f"{ratio:.{digits}f}×"


def pct(fraction: float) -> str:
    return f"{100 * fraction:.0f}%"


def kilo(steps: float) -> str:
    """Environment steps in thousands, or millions from 1M on where that is exact to a tenth: 450560 -> '451k',
    1000000 -> '1M', 2500000 -> '2.5M'."""
    if steps >= 1_000_000 and steps % 100_000 == 0:
        return f"{steps / 1_000_000:g}M"
    return f"{steps / 1000:.0f}k"


def met(ok: bool) -> str:
    return "**met**" if ok else "**not met**"


def table(header: list[str], align: str, rows: Iterable[list[str]]) -> str:
    """A markdown table; `align` has one character per column, 'l' or 'r' (ValueError otherwise: a delimiter row
    of another width is not a table to a markdown renderer)."""
    if len(align) != len(header):
        raise ValueError(f"table: {len(header)} columns but align {align!r} has {len(align)}")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------- conditions of a result
def _first(d: dict, *paths: str) -> Any:
    """The value at the first dotted path that exists in `d`, else None."""
    for path in paths:
        value: Any = d
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None:
            return value
    return None


def _load(value: Any) -> str:
    return f"{value[0]:.2f}" if isinstance(value, list) else f"{value:.2f}"


def conditions(d: dict, **given: str) -> str:
    """One paragraph: the command that regenerates a result and the conditions its file records.

    Reads `provenance()`'s block (`meta`, acrl/core/provenance.py) where a result has one, else the
    fields older results kept in their own places; names what the file does not record instead of
    guessing it. `given` supplies fields stated elsewhere in the same file (e.g. a round's date).
    """
    facts = {
        "commit": given.get("commit") or _first(d, "meta.commit", "commit"),
        "date": given.get("date") or _first(d, "meta.date", "date"),
        "CPU": _first(d, "meta.cpu", "machine.cpu"),
        "load before": _first(
            d, "meta.load_average_before", "machine.load_average_before", "machine.load_average", "load_average_before"
        ),
        "load after": _first(d, "meta.load_average_after", "machine.load_average_after", "machine.load_average_end"),
        "versions": _first(d, "meta.versions")
        or {
            k: d["machine"][k]
            for k in ("torch", "gymnasium", "numpy", "stable_baselines3")
            if isinstance(d.get("machine"), dict) and k in d["machine"]
        },
    }
    said = []
    if facts["commit"]:
        dirty = " with uncommitted changes to acrl/" if _first(d, "meta.dirty", "dirty") else ""
        said.append(f"commit {str(facts['commit'])[:7]}{dirty}")
    if facts["date"]:
        said.append(str(facts["date"]).replace("T", " ").replace("+00:00", " UTC"))
    if facts["CPU"]:
        said.append(str(facts["CPU"]))
    if facts["load before"] is not None:
        after = f" before and {_load(facts['load after'])} after" if facts["load after"] is not None else " before"
        said.append(f"load average {_load(facts['load before'])}{after}")
    elif facts["load after"] is not None:
        said.append(f"load average {_load(facts['load after'])} after")
    if facts["versions"]:
        said.append(", ".join(f"{k} {v}" for k, v in facts["versions"].items()))
    missing = [k for k in ("commit", "date", "CPU", "load before", "load after", "versions") if not facts[k]]
    command = given.get("command") or _first(d, "command", "meta.command")
    text = f"Regenerate: `{command}`. " if command else ""
    text += "Recorded: " + "; ".join(said) + "." if said else "Recorded: nothing of the machine."
    if missing:
        why = "" if "meta" in d else " (the file predates `provenance()`)"
        text += f" Not recorded{why}: {', '.join(missing)}."
    if "commands" in d:
        text += " Its runs: " + "; ".join(f"`{c}`" for c in d["commands"]) + "."
    if "conditions" in d:
        text += f" Conditions: {d['conditions']}"
    return text
