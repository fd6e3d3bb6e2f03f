"""Secure computation building blocks: additive secret sharing over Z_2^64, distributed
discrete noise, multi-server aggregation and function secret sharing (DCF).

Modules are imported explicitly, e.g. ``from privstats.secure.sharing import share``.
"""
