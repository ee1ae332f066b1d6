"""Riffle: merge many small Spark shuffle map outputs into few large files."""
