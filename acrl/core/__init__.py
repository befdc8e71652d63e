"""The lowest layer: the run loop, configs and presets, checkpoints, logging, evaluation, environments, errors."""
