"""Many runs at once on Ray: grids (`acrl sweep`), Optuna search (`acrl tune`), their statistics.

Ray, Optuna and rliable are the `ray` extra; `import acrl` and single runs never import them.
"""
