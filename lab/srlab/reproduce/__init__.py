"""``slaq reproduce``: one command per key figure of the SLAQ paper, each writing a PNG and its JSON to ``out/``."""
