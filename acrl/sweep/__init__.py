"""Many runs at once: grids (`acrl sweep`), Optuna search (`acrl tune`), their statistics, and the
executors they and the offline experiments run on: the job contract (`jobs`), `run_jobs`
(`executor`), a local process pool (`local`) or a Ray cluster (`cluster`).

Ray and Optuna are the `ray` extra (`--address`, `acrl tune`); `import acrl`, single runs, and
sweeps and experiments on this machine never import them.
"""
