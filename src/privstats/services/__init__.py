"""Services: the roles of a deployment as separate processes over HTTP (extra ``serve``).

Foundation shared by every role (generic over trust models and protocols):

* :mod:`~privstats.services.tasks` — task files: the public :class:`~privstats.services.tasks.Task`
  and per-party :class:`~privstats.services.tasks.RoleSecrets`.
* :mod:`~privstats.services.storage` — SQLAlchemy 2 schema with migrations; reports unique per
  (task, report id); mergeable aggregates; the durable budget ledger; collections; batches.
* :mod:`~privstats.services.security` — bearer tokens (constant-time) and HPKE.
* :mod:`~privstats.services.wire` — the compact binary upload and batch formats.
* :mod:`~privstats.services.app` — shared HTTP helpers and routes, and the ``privstats serve`` runner.
* :mod:`~privstats.services.collection` — the collection protocol of the collector and the analyzer
  (minimum batch, durable budget, idempotent collection ids, a status without counts).

Roles: :mod:`~privstats.services.collector` (local model), :mod:`~privstats.services.shuffler`
(shuffler and analyzer of the shuffle model), :mod:`~privstats.services.dap` (the secure model's
DAP-09 leader and helper, Prio3); :mod:`~privstats.services.opening` turns a secure task's two noisy
shares into its statistic.  The client SDK is :mod:`privstats.client`.
Nothing below ``services/`` imports it.
"""
