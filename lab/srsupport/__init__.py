"""Support shared by the tests and the lab: daemons, Spark sessions, watchers of the SLAQ epoch loop."""
