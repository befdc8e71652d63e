"""One checkpoint format for every algorithm, written atomically and read without running code.

A checkpoint is a `torch.save`d dict of tensors and plain data only, so it loads with
`torch.load(weights_only=True)`: opening a checkpoint someone sent you never executes code
from it. Layout:

    format: "acrl-checkpoint", format_version: 3, acrl_version: str,
    algo: "ppo" | "a3c" | ..., config: dict (the algorithm's config as plain data),
    state: dict (module and optimizer state dicts, normaliser statistics, counters),
    rng: dict (python, numpy and torch generator states)
    run_files: dict (optional; a run's latest.pt only): file name -> text of the run directory's
        history (metrics.csv, episodes.csv, sessions.json), so that the checkpoint alone carries a run
        to another machine (`restore_run_files`)

A change of layout bumps `FORMAT_VERSION` and adds to `MIGRATIONS` the function that turns a
payload of the version before into the new layout; `load_checkpoint` applies them in turn, so
every algorithm reads only the current layout and a checkpoint of any earlier version loads.
Renamed state-dict keys are migrated here too, never by a module's load hooks.
"""

from __future__ import annotations

import random
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from acrl.core.errors import InputError
from acrl.core.files import atomic_path, write_text_atomic
from acrl.core.version import __version__

FORMAT = "acrl-checkpoint"
FORMAT_VERSION = 3
"""The layout's version. 1: the first. 2: PPO's and A3C's optimizer state is over one flat
parameter tensor per network (`acrl.parts.optim.flatten_parameters`); version 1 could hold it
per layer. 3: PPO's and A3C's networks are one `acrl.parts.actor_critic.ActorCritic` (PPO's
`nets["model"]`, not `actor` and `critic`), whose keys and parameter order are its own; the keys of
before the policy heads (acrl 0.1: an actor's whole MLP under `mean`, `logits` or SAC's `net`, A3C's
`trunk`) are renamed as well."""


def rng_state(generator: np.random.Generator) -> dict[str, Any]:
    """Python, global numpy, torch and the agent's own numpy generator states, as plain data."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy_global": [kind, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, cached],
        "torch": torch.get_rng_state(),
        "generator": generator.bit_generator.state,
    }


def set_rng_state(state: dict[str, Any], generator: np.random.Generator) -> None:
    """Restore what `rng_state` captured (the agent's generator in place)."""
    random.setstate(_tuples(state["python"]))
    kind, keys, pos, has_gauss, cached = state["numpy_global"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    generator.bit_generator.state = state["generator"]


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value


RUN_FILES = ("metrics.csv", "episodes.csv", "sessions.json")
"""A run directory's history that its latest.pt carries: the curve (whose time/elapsed_s a resumed run's clock
goes on from), the training episodes and the sessions."""


def save_checkpoint(
    path: str | Path,
    algo: str,
    config: dict[str, Any],
    state: dict[str, Any],
    rng: dict[str, Any],
    run_files: dict[str, str] | None = None,
) -> None:
    """Write a checkpoint atomically (`acrl.core.files.atomic_path`), creating its directory.

    A crash mid-write leaves the previous checkpoint intact. `run_files` (names in `RUN_FILES` -> their
    text) is stored where given.
    """
    payload = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "acrl_version": __version__,
        "algo": algo,
        "config": config,
        "state": state,
        "rng": rng,
        **({"run_files": run_files} if run_files else {}),
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read and check a checkpoint with `torch.load(weights_only=True)`.

    Returns:
        the payload dict described in the module docstring.
    Raises:
        InputError: a missing file, a truncated or corrupt file, a file that is not an acrl
            checkpoint, or one from a newer format version.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(
            f"no checkpoint at {path}. A run directory has checkpoints/latest.pt and "
            "checkpoints/best.pt once training has written one."
        )
    try:
        with warnings.catch_warnings():  # a raw pickle makes torch warn about its protocol before failing
            warnings.filterwarnings("ignore", message="Detected pickle protocol", category=UserWarning)
            payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds for truncated/corrupt zip files
        # Only the exception's type: torch's message for a non-weights file advises loading it
        # with weights_only=False, which is exactly what a checkpoint from elsewhere must not get.
        raise InputError(
            f"{path} is not a readable checkpoint: truncated, corrupt or not a torch "
            f"file ({type(exc).__name__}). Use another checkpoint of the run or retrain."
        ) from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise InputError(f"{path} is a torch file but not an acrl checkpoint (no 'format: {FORMAT}').")
    version = payload.get("format_version", 1)
    if version > FORMAT_VERSION:
        raise InputError(
            f"{path} has checkpoint format {version}; this acrl "
            f"({__version__}) reads formats up to {FORMAT_VERSION}. Upgrade acrl."
        )
    missing = {"algo", "config", "state", "rng"} - payload.keys()
    if missing:
        raise InputError(f"{path} is an incomplete acrl checkpoint: missing {sorted(missing)}.")
    for old in range(version, FORMAT_VERSION):
        try:
            payload = MIGRATIONS[old](payload)
        except (KeyError, TypeError) as exc:
            raise InputError(
                f"{path} is a {payload['algo']} checkpoint of format {old} that cannot be read "
                f"({exc!r}): its state does not have that format's layout."
            ) from None
    return {**payload, "format_version": FORMAT_VERSION}


def run_files(run_dir: Path) -> dict[str, str]:
    """The `RUN_FILES` that `run_dir` holds, name -> text (what a run's latest.pt carries)."""
    return {name: (run_dir / name).read_text() for name in RUN_FILES if (run_dir / name).is_file()}


def restore_run_files(run_dir: Path) -> list[str]:
    """Write the run files that `run_dir/checkpoints/latest.pt` carries and `run_dir` lacks (each atomically):
    a run directory laid anew on another machine around a copied latest.pt gets its curve, episodes and
    sessions back, so that `acrl resume` continues them. Files the directory has are kept (where it has them
    all the checkpoint is not read). Returns the names written. Raises InputError as `load_checkpoint`; a name
    outside `RUN_FILES` (a checkpoint that would write elsewhere) is refused.
    """
    if all((run_dir / name).exists() for name in RUN_FILES):
        return []
    path = run_dir / "checkpoints" / "latest.pt"
    files = load_checkpoint(path).get("run_files", {})
    unknown = sorted(set(files) - set(RUN_FILES))
    if unknown:
        raise InputError(f"{path} carries run files {unknown}; a checkpoint carries only {list(RUN_FILES)}.")
    written = []
    for name, text in files.items():
        if not (run_dir / name).exists():
            write_text_atomic(run_dir / name, text)
            written.append(name)
    return written


def _flat_optimizer_state(payload: dict[str, Any]) -> dict[str, Any]:
    """Format 1 -> 2: PPO's and A3C's optimizer state per layer -> over one flat tensor per net,
    the nets in the checkpoint's order (PPO: actor, critic; A3C: its one model)."""
    if payload["algo"] not in ("ppo", "a3c"):
        return payload
    state = payload["state"]
    counts = [len(net) for net in state["nets"].values()]  # their state dicts hold parameters only
    optimizer = flatten_optimizer_state(state["optimizers"]["optimizer"], counts)
    return {**payload, "state": {**state, "optimizers": {**state["optimizers"], "optimizer": optimizer}}}


def _mlp_keys(state: dict[str, Any], old: str, hidden: str, output: str) -> dict[str, Any]:
    """The state dict with the keys of one MLP `{old}.{i}.*` (Linear layers at even i, the last one the
    output layer) renamed: `{hidden}{i}.*` for the hidden layers, `{output}*` for the last; order kept."""
    pattern = re.compile(re.escape(old) + r"\.(\d+)\.(.+)")
    layers = {key: match for key in state if (match := pattern.fullmatch(key))}
    last = max((int(match.group(1)) for match in layers.values()), default=-1)

    def renamed(key: str) -> str:
        match = layers.get(key)
        if match is None:
            return key
        index, name = int(match.group(1)), match.group(2)
        return f"{output}{name}" if index == last else f"{hidden}{index}.{name}"

    return {renamed(key): value for key, value in state.items()}


_ACTOR_CRITIC_RENAMES = (
    ("trunk.0.", "actor.encoder."),  # A3C's shared trunk before the heads
    ("policy_head.0.", "actor.linear."),
    ("value_head.0.", "value_head."),
    ("log_std", "actor.log_std"),  # the whole key
    ("actor.log_std", "actor.head.log_std"),  # the heads' layout (PPO's and A3C's actors) -> the actor-critic's
    ("actor.linear.", "actor.head.linear."),
    ("value_head.", "critic."),
)
"""(old, new) key prefixes of PPO's and A3C's models, applied in turn (a key `log_std` only whole)."""
_ACTOR_CRITIC_ORDER = ("actor.encoder.", "actor.core.", "actor.head.log_std", "actor.head.linear.", "critic.")
"""The order of an `ActorCritic`'s parameters (`module.parameters()`, the flat optimizer's layout)."""


def _actor_critic_key(key: str) -> str:
    """A key of PPO's or A3C's model in any earlier layout -> its `ActorCritic` key."""
    for old, new in _ACTOR_CRITIC_RENAMES:
        if key.startswith(old) and (old != "log_std" or key == old):
            key = new + key[len(old) :]
    return key


def _rank(key: str) -> int:
    """Where a key of an `ActorCritic` comes in its parameter order (`_ACTOR_CRITIC_ORDER`)."""
    return next(i for i, prefix in enumerate(_ACTOR_CRITIC_ORDER) if key.startswith(prefix))


def _reordered(flat: dict[str, Any], segments: list[tuple[int, int]]) -> dict[str, Any]:
    """One flat tensor's optimizer state with every per-element tensor (moments) permuted: the new layout is
    the old one's (offset, size) `segments`, in order; scalars (the step) as they are."""
    size = sum(n for _, n in segments)
    return {
        key: torch.cat([value[o : o + n] for o, n in segments])
        if torch.is_tensor(value) and value.dim() == 1 and len(value) == size
        else value
        for key, value in flat.items()
    }


def _one_actor_critic(payload: dict[str, Any]) -> dict[str, Any]:
    """Format 2 -> 3: PPO's and A3C's state dicts in the keys of `acrl.parts.actor_critic.ActorCritic` (PPO's
    two nets `actor` and `critic` become `model`, A3C's `model` stays), from the layout of the heads or from
    the one before them; their flat optimizer tensors (PPO: the actor's and the critic's; A3C: one) permuted
    into the new parameter order (a Gaussian's log-std now follows the encoder). SAC's actor of before the
    heads (`net.*`) gets the heads' keys (`encoder.*`, `linear.*`). A BC checkpoint of a Discrete action
    space (its softmax policy has an `encoder`; the tanh policy for a Box has `net.*`) becomes DiscreteBC's."""
    algo, state = payload["algo"], payload["state"]
    if algo == "bc" and any(key.startswith("encoder.") for key in state["nets"]["actor"]):
        return {**payload, "algo": "discrete_bc"}  # BC's softmax policy (a Discrete space) is DiscreteBC's now
    if algo == "sac":
        nets = {**state["nets"], "actor": _mlp_keys(state["nets"]["actor"], "net", "encoder.", "linear.")}
        return {**payload, "state": {**state, "nets": nets}}
    if algo not in ("ppo", "a3c"):
        return payload
    nets = state["nets"]
    # The parameters of each flat tensor in their old order: PPO's actor's and critic's, A3C's model's.
    if algo == "ppo":
        parts = [{f"{name}.{key}": value for key, value in nets[name].items()} for name in ("actor", "critic")]
    else:
        parts = [nets["model"]]
    model: dict[str, Any] = {}
    optimizer = state["optimizers"]["optimizer"]
    moments = dict(optimizer["state"])
    for index, part in enumerate(parts):
        for old in ("actor.mean", "actor.logits"):
            part = _mlp_keys(part, old, "actor.encoder.", "actor.linear.")
        keys = [_actor_critic_key(key) for key in part]
        sizes = [value.numel() for value in part.values()]
        offsets = np.cumsum([0, *sizes])
        order = sorted(range(len(keys)), key=lambda i: _rank(keys[i]))
        model.update((keys[i], list(part.values())[i]) for i in order)
        if index in moments:
            moments[index] = _reordered(moments[index], [(int(offsets[i]), sizes[i]) for i in order])
    optimizers = {**state["optimizers"], "optimizer": {**optimizer, "state": moments}}
    return {**payload, "state": {**state, "nets": {"model": model}, "optimizers": optimizers}}


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _flat_optimizer_state, 2: _one_actor_critic}
"""Format version N -> the function that turns a format-N payload into format N + 1."""


def flatten_optimizer_state(state_dict: dict[str, Any], counts: list[int] | None = None) -> dict[str, Any]:
    """An optimizer `state_dict()` over per-layer parameters -> the same state over their
    `flatten_parameters` tensors.

    Flat tensor k holds the next `counts[k]` parameters in order (default: all of them, one flat
    tensor). Each parameter group keeps its settings and gets the flat tensors of its
    parameters. Tensor states (moments) are flattened and concatenated in parameter order; the
    step count is the largest of the parameters' (with lock-free A3C updates they may differ by
    a few). A state already over len(counts) parameters is returned unchanged. The migration of
    format version 1 uses it (`MIGRATIONS`): PPO's and A3C's checkpoints written before they
    flattened their parameters (`acrl.parts.optim.flatten_parameters`).

    Raises:
        InputError: a flat tensor's parameters span two groups, counts do not add up to the
            number of parameters, or a parameter has no state.
    """
    groups = state_dict["param_groups"]
    ids = [i for group in groups for i in group["params"]]
    counts = [len(ids)] if counts is None else counts
    if len(ids) == len(counts):
        return state_dict
    if sum(counts) != len(ids):
        raise InputError(
            f"the optimizer state has {len(ids)} parameters; expected {len(counts)} (flat) "
            f"or {sum(counts)} (per layer)."
        )
    states = [state_dict["state"].get(i) for i in ids]
    if any(not s for s in states):
        raise InputError("the optimizer state has parameters without state (a checkpoint before any update?).")
    group_of = [g for g, group in enumerate(groups) for _ in group["params"]]
    flat_states: dict[int, dict[str, Any]] = {}
    new_groups: list[dict[str, Any]] = [{**group, "params": []} for group in groups]
    start = 0
    for k, count in enumerate(counts):
        chunk = states[start : start + count]
        if len(set(group_of[start : start + count])) != 1:
            raise InputError(f"flat parameter {k} would take parameters of two optimizer groups.")
        new_groups[group_of[start]]["params"].append(k)
        flat: dict[str, Any] = {}
        for key, value in chunk[0].items():
            if key == "step":
                flat[key] = max((s[key] for s in chunk), key=float)
            elif torch.is_tensor(value):
                flat[key] = torch.cat([s[key].reshape(-1) for s in chunk])
            else:
                flat[key] = value
        flat_states[k] = flat
        start += count
    return {"state": flat_states, "param_groups": new_groups}
