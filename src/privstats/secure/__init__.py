"""Secure computation building blocks: additive secret sharing over Z_2^64, distributed
discrete noise, multi-server aggregation, function secret sharing (DCF), VDAF-08 Prio3
(:mod:`~privstats.secure.vdaf`) and the grid-histogram release that the DAP deployment and the
in-process ``model="secure"`` share (:mod:`~privstats.secure.histogram`).

Modules are imported explicitly, e.g. ``from privstats.secure.sharing import share``.
"""
