"""Building blocks the algorithms share: networks, buffers, returns, normalisation, optimizers, datasets, statistics,
Hogwild worker processes."""
