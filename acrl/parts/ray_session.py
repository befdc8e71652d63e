"""Joining or starting Ray (the `ray` extra): the one place where acrl connects a process to Ray, for the sweep's
Ray tasks (`acrl.sweep.cluster.Cluster`) and IMPALA's actors (`acrl.parts.actors`).

- `require`: import Ray or Optuna, or say which extra to install.
- `connect(ray, address)`: without an address, start a Ray instance on this machine (never a cluster that
  RAY_ADDRESS names) whose processes start with SIGINT blocked, so that a Ctrl-C in the terminal reaches only
  the driver, which stops in order and shuts Ray down; with `auto` or HOST:PORT, join that cluster once its
  port answers (`reachable`) and it runs this driver's Ray, Python (`check_versions`) and acrl.

Ray is imported inside the functions that use it: importing this module needs no Ray.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import signal
import socket
import subprocess
import sys
from typing import Any

from acrl.core.errors import InputError

CONNECT_TIMEOUT_S = 10.0
"""How long `--address HOST:PORT` may take to answer before acrl gives up (exit 2)."""
EXTRA_HINT = "install acrl's ray extra: pip install -e '.[ray]' (./run setup does)"
QUIET = {"include_dashboard": False, "logging_level": logging.ERROR, "log_to_driver": False}
"""`ray.init` settings of every acrl driver: no dashboard, Ray's own logging at ERROR, workers' output not echoed."""


def require(module: str, purpose: str) -> Any:
    """Import an optional dependency of the ray extra (ray, optuna) or raise `InputError`.

    Raises:
        InputError: the module is not installed; the message names the extra to install.
    """
    from importlib import import_module

    try:
        return import_module(module)
    except ImportError:
        raise InputError(f"{purpose} needs {module}, which is not installed: {EXTRA_HINT}.") from None


def connect(ray: Any, address: str | None) -> bool:
    """Connect this process to Ray: start a local instance (address None, with this machine's CPUs) or join the
    cluster at `address` ("auto" or HOST:PORT). Returns True when it started Ray here: the caller then shuts it
    down (`ray.shutdown()`) when it is done; a cluster joined keeps running.

    Raises:
        InputError: see `reachable` and `check_versions`; a cluster that refuses the connection, or whose
            workers cannot import this acrl or run another version of it.
    """
    if address is None:
        # Ray's own processes (GCS, raylet, and the workers they start) inherit SIGINT blocked, so a Ctrl-C
        # in the terminal reaches only this driver. A Ctrl-C during start-up waits until init returns.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            ray.init(address="local", num_cpus=os.cpu_count(), **QUIET)  # never a cluster RAY_ADDRESS names
        except BaseException:
            ray.shutdown()  # whatever init started
            raise
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        return True
    from acrl.core.version import __version__

    address = reachable(address)
    check_versions(address, cluster_metadata(address))
    try:
        ray.init(address=address, **{k: v for k, v in QUIET.items() if k != "include_dashboard"})
    except ConnectionError as exc:
        raise InputError(
            f"could not join the Ray cluster at --address {address}: {exc} Start one with "
            "`ray start --head`, or drop --address to run on this machine."
        ) from None
    try:
        found = ray.get(ray.remote(num_cpus=0, max_retries=0)(_acrl_version).remote(), timeout=60)
    except Exception as exc:  # the worker could not import acrl, or never started
        ray.shutdown()
        why = " ".join(str(exc).split())[:300]
        raise InputError(
            f"the Ray cluster at {address} cannot run acrl ({type(exc).__name__}: {why}); "
            f"install acrl {__version__} on every node."
        ) from None
    if found != __version__:
        ray.shutdown()
        raise InputError(
            f"the Ray cluster at {address} runs acrl {found}, this driver acrl {__version__}; install "
            "the same acrl on every node."
        )
    return False


def reachable(address: str) -> str:
    """HOST:PORT of `address` ("auto": the cluster Ray finds on this machine), once its port answers.

    Raises:
        InputError: a malformed address, no cluster for "auto", a port that does not answer
            within `CONNECT_TIMEOUT_S`.
    """
    if address == "auto":
        from ray._private.services import canonicalize_bootstrap_address

        found = canonicalize_bootstrap_address("auto")  # RAY_ADDRESS, else the cluster `ray start` started here
        if found is None:
            raise InputError(
                "--address auto: no Ray cluster runs on this machine; start one with `ray start "
                "--head`, or drop --address to run on this machine."
            )
        address = found
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(
            f"--address must be auto or HOST:PORT (the head's GCS port, 6379 by default), got {address!r}."
        )
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise InputError(
            f"no Ray cluster answers at {address} within {CONNECT_TIMEOUT_S:.0f} s ({exc}); "
            "start one with `ray start --head` there, or drop --address to run on this "
            "machine."
        ) from None
    return address


GCS_PROBE = (
    "import json, sys, ray._raylet; from ray._common.usage.usage_lib import get_cluster_metadata; "
    "print(json.dumps(get_cluster_metadata(ray._raylet.GcsClient(address=sys.argv[1]))))"
)
"""Prints the cluster metadata (Ray and Python versions) a Ray head at argv[1] holds."""


def cluster_metadata(address: str) -> dict[str, Any]:
    """The metadata of the Ray cluster whose head's GCS is at `address` ({"ray_version",
    "python_version", ...}), asked in a subprocess that may take `CONNECT_TIMEOUT_S` seconds
    (Ray's own client waits 40 s and prints its C++ warnings before it gives up on a port that
    is not a GCS).

    Raises:
        InputError: no answer as a Ray head within `CONNECT_TIMEOUT_S`.
    """
    try:
        probe = subprocess.run(
            [sys.executable, "-c", GCS_PROBE, address], capture_output=True, text=True, timeout=CONNECT_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        probe = None
    if probe is None or probe.returncode != 0:
        raise InputError(
            f"{address} answers, but not as the head of a Ray cluster within {CONNECT_TIMEOUT_S:.0f} s "
            "(the GCS port `ray start --head` prints, 6379 by default); check --address, or drop it to "
            "run on this machine."
        )
    return json.loads(probe.stdout.strip().splitlines()[-1])


def check_versions(address: str, metadata: dict[str, Any]) -> None:
    """Raise `InputError` unless the cluster at `address` runs this driver's Ray and Python
    (`cluster_metadata`), which Ray requires of every process that joins it; say what was found."""
    import ray

    found = (metadata.get("ray_version"), metadata.get("python_version"))
    here = (ray.__version__, platform.python_version())
    if found != here:
        raise InputError(
            f"the Ray cluster at {address} runs Ray {found[0]} on Python {found[1]}, this driver Ray "
            f"{here[0]} on Python {here[1]}; join a cluster started from acrl's environment (`ray start "
            "--head` there), or drop --address to run on this machine."
        )


def _acrl_version() -> str:
    """acrl's version where this runs (a Ray task: the cluster's workers)."""
    from acrl.core.version import __version__ as version

    return version
