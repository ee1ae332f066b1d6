"""Riffle's driver side: map-output events -> merge policy -> merger placement -> merges -> commit."""
