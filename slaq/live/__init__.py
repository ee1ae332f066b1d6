"""SLAQ on a live Spark application: configuration, the per-epoch loop, and the user API's state."""
