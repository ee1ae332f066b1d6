"""Test support shared by the tests and the lab: merger daemon processes, the Spark session fixture, watchers."""
