"""The BCQ papers' application layer: collecting their datasets (`collect`) and their experiments, each an
`ExperimentSpec` (`spec`) that one job builder runs (`jobs`, driven by `experiments.run_experiment`) and one
report draws (`report`)."""
