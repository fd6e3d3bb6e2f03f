"""Degree-2 U-statistics under local DP (Protocols A and B), pairwise 2PC (Protocol C) and a
central baseline (Bell, Bellet, Gascón, Kulkarni, AISTATS 2020).  The public functions live in
:mod:`privstats.stats.pairwise`; this package holds the protocol roles and parameter helpers."""
