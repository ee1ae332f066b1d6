"""Where one job's tasks go in an offer round when some are held for the executor caching their data, as Spark's
``resourceOffers`` places one task set's tasks (pure; :mod:`slaq.sim.replay` keeps each stage's timer).

Every executor first takes the job's tasks held for it, then any of its tasks no executor holds; a core left
over while tasks are still held elsewhere is refused, so it goes to the next job in the order. Once the stage's
held tasks have waited out ``spark.locality.wait`` (``anywhere``), they also take the cores left, after every
executor has taken its own (one host: Spark's next level, node-local).
"""

from __future__ import annotations


def place(free: list[int], held: list[int], loose: int, anywhere: bool) -> tuple[list[int], int, bool]:
    """Tasks launched on each executor with ``free`` cores, how many of them on their own executor, and whether a
    core was refused. ``held`` (per executor, or empty: none held) is drawn down in place; ``loose`` tasks run anywhere."""
    waiting_held = sum(held)
    own = 0
    took = [0] * len(free)
    for e, cores in enumerate(free):
        if cores:
            n = min(cores, held[e]) if held else 0
            m = min(cores - n, loose)
            if n:
                held[e] -= n
                waiting_held -= n
                own += n
            loose -= m
            took[e] = n + m
    if anywhere and waiting_held:
        f = 0
        for e, cores in enumerate(free):
            room = cores - took[e]
            while room and waiting_held:
                while not held[f]:
                    f += 1
                m = min(room, held[f])
                held[f] -= m
                waiting_held -= m
                room -= m
                took[e] += m
    return took, own, bool(waiting_held) and any(c > n for c, n in zip(free, took))
