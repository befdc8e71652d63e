"""One logger for every algorithm: progress bar on the terminal, metrics.csv, episodes.csv and TensorBoard.

Keys are grouped as `rollout/` (episodes seen while training), `train/` (losses and
statistics of the update), `eval/` (deterministic evaluation) and `time/`. Every row of
metrics.csv has the column `step` (environment steps; gradient updates for offline
algorithms). A new key adds a column: the file is rewritten with the wider header, which
happens a handful of times per run.

episodes.csv has a row per finished training episode, `step,episode,return,length`: the step
of the metrics row after which it was written (the episode ended in that row's iteration, at
most one iteration earlier), its number from 1, its undiscounted return and its length in
steps. metrics.csv holds only `rollout/ep_return_mean`, the mean of the last 100 episodes:
the design document's score plot (every episode's return against its number) and a learning
curve's raw returns need each one. Runs that play no episodes (offline) have no episodes.csv.
"""

from __future__ import annotations

import csv
import io
import math
import sys
import threading
from pathlib import Path

import numpy as np
from tqdm import tqdm

from acrl.core.files import atomic_path
from acrl.core.torch_fast import add_summary


def format_return(value: float) -> str:
    """An episode return for a console line: 3 decimals below 10 in magnitude (POPGym's returns lie in
    [-1, 1], where one decimal would hide the learning), else 1 ("0.048", "-0.264", "162.0", "-1,234.6")."""
    return f"{value:.3f}" if abs(value) < 10 else f"{value:,.1f}"


def console(line: str) -> None:
    """Print `line` on stderr above the progress bar, never onto it: with a bar showing, tqdm clears it,
    writes the line and draws the bar again below (`tqdm.write`); without one, a plain line."""
    tqdm.write(line, file=sys.stderr)


EPISODE_COLUMNS = ("step", "episode", "return", "length")
"""episodes.csv's header (see the module docstring)."""


class Logger:
    """Write metrics rows to `run_dir/metrics.csv` and TensorBoard, training episodes to
    `run_dir/episodes.csv` (`log_episodes`), and drive a progress bar.

    Args:
        run_dir: the run directory, or None to log nowhere but the progress bar.
        total_steps: length of the progress bar.
        start_step: the step a resumed run starts from; rows after it are dropped from the
            existing metrics.csv and episodes.csv so that a resumed run does not repeat them.
        progress: show the progress bar (steps, fps and recent return).
        unit: what the bar counts, "step" (environment steps) or "update" (gradient updates).
        label: the bar's description, e.g. "bcq on imperfect" (default: none).

    The bar reads "bcq on final:  40%|####      | 26,214/65,536 updates [00:10<00:15, updates/s=2,613,
    return=12.3, eval=15.1]": the count and its unit apart, and the rate once, as the rows measure it
    (`time/fps`), not again as tqdm's own; returns as `format_return` writes them. It shrinks to the
    terminal's width.
    """

    def __init__(
        self,
        run_dir: str | Path | None,
        total_steps: int,
        start_step: int = 0,
        progress: bool = True,
        unit: str = "step",
        label: str | None = None,
    ):
        self.rows: list[dict[str, float | int]] = []
        self.columns: list[str] = ["step"]
        self.csv_path = self.episodes_path = self.writer = None
        self.episodes = 0
        """Training episodes written to episodes.csv so far (a resumed run's kept ones included)."""
        if run_dir is not None:
            self.episodes_path = Path(run_dir) / "episodes.csv"
            if self.episodes_path.exists():
                self._trim_episodes(start_step)
            self.csv_path = Path(run_dir) / "metrics.csv"
            if self.csv_path.exists():
                with self.csv_path.open() as f:
                    reader = csv.DictReader(f)
                    self.columns = list(reader.fieldnames or ["step"])
                    self.rows = [
                        {k: int(float(v)) if k == "step" else float(v) for k, v in row.items() if v != ""}
                        for row in reader
                        if float(row["step"]) <= start_step
                    ]
                self._rewrite()
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(run_dir), purge_step=start_step or None)
        self.rate_label = "fps" if unit == "step" else f"{unit}s/s"
        self.bar = tqdm(
            total=total_steps,
            initial=start_step,
            disable=not progress,
            desc=label,
            dynamic_ncols=True,
            leave=True,
            bar_format="{l_bar}{bar}| {n:,}/{total:,} " + unit + "s [{elapsed}<{remaining}{postfix}]",
        )
        self.step = start_step
        """The step of the last row (or where the run started)."""
        self._bar_lock = threading.Lock()

    def log(self, step: int, metrics: dict[str, float]) -> None:
        """Record `metrics` at `step`: one CSV row, TensorBoard scalars, progress-bar update."""
        row = {"step": int(step), **{k: float(v) for k, v in metrics.items()}}
        self.rows.append(row)
        if self.csv_path is not None:
            new = [k for k in row if k not in self.columns]
            if new:
                self.columns += new
                self._rewrite()
            else:
                with self.csv_path.open("a", newline="") as f:
                    csv.DictWriter(f, self.columns).writerow(row)
        if self.writer is not None:
            for key, value in metrics.items():
                if math.isfinite(value):
                    self.writer.add_scalar(key, value, step)
        if step > self.bar.total:  # a last whole rollout may pass the budget: the bar keeps a total
            self.bar.total = step
        self.show_progress(step)
        self.step = step
        rate, shown = metrics.get("time/fps"), {}
        if rate is not None:
            shown[self.rate_label] = f"{rate:,.0f}"
        for name, key in (("return", "rollout/ep_return_mean"), ("eval", "eval/return_mean")):
            if metrics.get(key) is not None:
                shown[name] = format_return(metrics[key])
        self.bar.set_postfix(shown, refresh=False)

    def log_episodes(self, step: int, episodes: list[tuple[float, float]]) -> None:
        """Append a row `step,episode,return,length` to episodes.csv per (return, length) of `episodes`,
        numbered on from the episodes already written (nothing without a run_dir or episodes)."""
        if self.episodes_path is None or not episodes:
            return
        new = not self.episodes_path.exists()
        with self.episodes_path.open("a", newline="") as f:
            writer = csv.writer(f)
            if new:
                writer.writerow(EPISODE_COLUMNS)
            for episode_return, length in episodes:
                self.episodes += 1
                writer.writerow([int(step), self.episodes, float(episode_return), int(length)])

    def _trim_episodes(self, start_step: int) -> None:
        """Keep the rows of episodes.csv up to `start_step` (a resume continues after them), rewritten atomically."""
        with self.episodes_path.open() as f:
            rows = [row for row in csv.reader(f)][1:]
        kept = [row for row in rows if int(row[0]) <= start_step]
        self.episodes = len(kept)
        if len(kept) < len(rows):
            with atomic_path(self.episodes_path) as tmp, tmp.open("w", newline="") as f:
                csv.writer(f).writerows([EPISODE_COLUMNS, *kept])

    def show_progress(self, step: int) -> None:
        """Move the progress bar forward to `step` without writing a row (also from the run
        loop's refresher thread, inside a long iteration)."""
        with self._bar_lock:
            if step > self.bar.n:
                self.bar.update(step - self.bar.n)

    def add_video(self, tag: str, frames: np.ndarray, step: int, fps: float) -> None:
        """Log (T, H, W, 3) uint8 `frames` to TensorBoard as a video summary at `step` (nothing without a run_dir).

        TensorBoard shows a video summary as an animated GIF in its Images tab; the GIF is
        drawn at half the frames' size to keep the event file small. torch's `add_video`
        would need moviepy 1.x (`moviepy.editor`, gone since moviepy 2.0) and logs nothing
        without it, so the summary is built here with Pillow.
        """
        if self.writer is None:
            return
        from PIL import Image
        from tensorboard.compat.proto.summary_pb2 import Summary

        height, width = frames.shape[1] // 2, frames.shape[2] // 2
        images = [Image.fromarray(frame).resize((width, height)) for frame in frames]
        buffer = io.BytesIO()
        images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:], duration=1000 / fps, loop=0)
        image = Summary.Image(height=height, width=width, colorspace=3, encoded_image_string=buffer.getvalue())
        add_summary(self.writer, Summary(value=[Summary.Value(tag=tag, image=image)]), step)

    def _rewrite(self) -> None:
        with atomic_path(self.csv_path) as tmp, tmp.open("w", newline="") as f:
            writer = csv.DictWriter(f, self.columns)
            writer.writeheader()
            writer.writerows(self.rows)

    def close(self) -> None:
        """Close the progress bar and the TensorBoard writer (the CSV files are written as rows arrive)."""
        self.bar.close()
        if self.writer is not None:
            self.writer.close()
