"""One logger for every algorithm: progress bar on the terminal, metrics.csv and TensorBoard.

Keys are grouped as `rollout/` (episodes seen while training), `train/` (losses and
statistics of the update), `eval/` (deterministic evaluation) and `time/`. Every row of
metrics.csv has the column `step` (environment steps; gradient updates for offline
algorithms). A new key adds a column: the file is rewritten with the wider header, which
happens a handful of times per run.
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


class Logger:
    """Write metrics rows to `run_dir/metrics.csv` and TensorBoard, and drive a progress bar.

    Args:
        run_dir: the run directory, or None to log nowhere but the progress bar.
        total_steps: length of the progress bar.
        start_step: the step a resumed run starts from; rows after it are dropped from the
            existing metrics.csv so that a resumed run does not repeat them.
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
        self.csv_path = self.writer = None
        if run_dir is not None:
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
        self.bar.close()
        if self.writer is not None:
            self.writer.close()
