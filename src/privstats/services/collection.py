"""The collection protocol the collecting roles share (the collector; the shuffle model's analyzer).

A collection needs at least ``task.min_batch`` reports, spends ``task.guarantee`` from the durable
ledger in the same transaction that records its result (an overspend is refused and nothing is
released), and is idempotent per ``collection_id`` (:func:`run_collection`).  A refusal below the
minimum batch is always the same text (:data:`BELOW_MIN_BATCH`), and a status carries the budget
and the number of collections, never a report count (:func:`budget_status`); see
:mod:`privstats.services.collector`.
"""

import re
from typing import Any

from privstats.local.base import CountState
from privstats.services.storage import BudgetExceededError, Storage
from privstats.services.tasks import Task

__all__ = [
    "BELOW_MIN_BATCH",
    "STATE_NAME",
    "CollectError",
    "budget_status",
    "check_collection_id",
    "load_state",
    "run_collection",
]

STATE_NAME = "state"
#: the one refusal text below the minimum batch (never the count: repeated refusals reveal nothing more)
BELOW_MIN_BATCH = "the batch is below the minimum batch; nothing was released"


_COLLECTION_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class CollectError(ValueError):
    """A refused collection: ``code`` is ``batch_too_small``, ``budget_exceeded`` or ``bad_request``."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def check_collection_id(cid: Any) -> str:
    if not isinstance(cid, str) or not _COLLECTION_ID.match(cid):
        raise CollectError("bad_request", "collection_id must be 1-64 characters of [A-Za-z0-9_.-]")
    return cid


def load_state(
    storage: Storage, conn: Any, tid: bytes, oracle: Any, *, for_update: bool = False
) -> tuple[int, CountState]:
    """A role's stored ``(report count, aggregator state)``, the empty state if none is stored;
    ``for_update`` locks the row for the rest of the transaction."""
    row = storage.get_aggregate(conn, tid, STATE_NAME, for_update=for_update)
    return (0, oracle.new_state()) if row is None else (int(row[0]), CountState.from_bytes(row[1]))


def budget_status(storage: Storage, task: Task, role: str) -> dict:
    """The status a collecting role (collector, analyzer) serves: budget and collections, never a
    report count."""
    led = storage.ledger(None, task.id_bytes)
    return {
        "task_id": task.task_id,
        "role": role,
        "budget_total": led.total.to_dict(),
        "budget_spent": led.spent.to_dict(),
        "budget_remaining": led.remaining.to_dict(),
        "collections": len(led.entries),
    }


def run_collection(
    storage: Storage, task: Task, collection_id: Any, release: Any, min_reports: Any = None
) -> dict:
    """The collection protocol every role shares (collector, analyzer).

    In one transaction: return the stored result of ``collection_id`` if any; else
    ``release(conn) -> (n_reports, make_estimate)`` reads (and locks) the role's state; refuse below
    ``task.min_batch`` (:data:`BELOW_MIN_BATCH`, whatever the count); spend ``task.guarantee``
    from the durable ledger (BudgetExceededError ->
    :class:`CollectError`, nothing recorded); compute the estimate; store the result under
    ``collection_id``; commit.  Nothing is released unless all of it commits.
    """
    cid = check_collection_id(collection_id)
    if min_reports is not None:
        # an analyst-chosen threshold answered exactly and for free finds the count by bisection
        raise CollectError(
            "bad_request",
            "min_reports is not accepted: a threshold of the analyst's choosing would reveal the exact "
            "number of reports by bisection; the task's min_batch is the only floor",
        )
    floor = task.min_batch
    tid = task.id_bytes
    done = storage.get_collection(None, tid, cid)
    if done is not None:
        return done
    with storage.transaction() as conn:
        done = storage.get_collection(conn, tid, cid)
        if done is not None:
            return done
        n, make_estimate = release(conn)
        if n < floor:
            raise CollectError("batch_too_small", BELOW_MIN_BATCH)
        try:
            led = storage.spend(conn, tid, task.guarantee_value, f"collection {cid}")
        except BudgetExceededError as exc:
            raise CollectError("budget_exceeded", str(exc)) from None
        estimate = make_estimate()
        result = {
            "collection_id": cid,
            "estimate": estimate.to_dict(),
            "n": int(n),
            "budget_spent": led.spent.to_dict(),
            "budget_remaining": led.remaining.to_dict(),
        }
        storage.put_collection(conn, tid, cid, result)
    return result
