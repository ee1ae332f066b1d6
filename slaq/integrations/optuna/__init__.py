"""SLAQ for Optuna studies: each running trial a SLAQ job (:mod:`~slaq.integrations.optuna.trials`, switched on
with SLAQ itself, no code change) and the pruner (:mod:`~slaq.integrations.optuna.pruner`, public as
:class:`slaq.optuna.Pruner`), which predicts a trial's final value with SLAQ's loss curve
(:mod:`~slaq.integrations.optuna.rule`). Importing this package never imports Optuna; the pruner module does.
"""
