"""The two kinds of error acrl raises on purpose.

`InputError` means the user asked for something acrl cannot do (an unknown environment, a
bad hyperparameter, a corrupt checkpoint or dataset). It is raised before any work is lost,
its message says what was wrong and what would be right, and the CLI turns it into exit
code 2 without a traceback.

`TrainingError` means a run went wrong after it started (a loss or parameter that became NaN
or infinite, a worker process that died). The CLI turns it into exit code 1; the last good
checkpoint is kept.
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad input from the user: an unknown id, an unsupported space, a bad value or file.

    Raised before any training work starts or any file that could be mistaken for a
    finished run is written. The CLI reports it with exit code 2.

    Args:
        message: what was wrong and what would be right, in the Python API's terms (keyword
            arguments, e.g. `env_id=`).
        cli: the same in the command line's terms (its flags, e.g. `--env`), where they differ;
            the CLI prints it instead of `message`.
    """

    def __init__(self, message: str, cli: str | None = None):
        super().__init__(message)
        self.cli = cli


class TrainingError(RuntimeError):
    """A run failed while training: a non-finite loss or parameter, a dead worker.

    The message names the step and the quantity. The CLI reports it with exit code 1.
    """
