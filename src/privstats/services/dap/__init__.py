"""DAP-09 with Prio3 (VDAF-08): privstats' secure-aggregation deployment in the standard's wire format.

An unmodified DAP client (e.g. the npm package ``@divviup/dap`` 0.9.1) uploads Prio3Histogram reports
to the leader; the leader and helper prepare them (the Prio3 validity check, robust against
malicious clients, private while one aggregator is honest), each adds its own discrete-Laplace
noise share to its aggregate share once per batch, and privstats' collector turns the opened noisy
histogram into the task's statistic.

* :mod:`~privstats.services.dap.codec` — DAP-09 messages; :mod:`~privstats.services.dap.hpke` —
  RFC 9180 base mode with aad.
* :mod:`~privstats.services.dap.task` — the task file's ``dap`` object.
* :mod:`~privstats.services.dap.store` — durable tables (SQLite, PostgreSQL).
* :mod:`~privstats.services.dap.leader`, :mod:`~privstats.services.dap.collect_jobs`,
  :mod:`~privstats.services.dap.helper` — the two aggregators.
* :mod:`~privstats.services.dap.dp` — noise shares and the opening.
* :mod:`~privstats.services.dap.client` — privstats' own client and collector.
* :mod:`~privstats.services.dap.cli` — ``privstats dap ...``.
"""

#: ``privstats serve leader|helper`` builds these apps for a task with a ``dap`` object
ROLE_FACTORIES = {
    "leader": "privstats.services.dap.leader:create_leader_app",
    "helper": "privstats.services.dap.helper:create_helper_app",
}
