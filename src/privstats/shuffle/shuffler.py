"""The shuffler role: collect anonymous messages, wait for a minimum batch, permute with the OS CSPRNG.

The shuffler is the one trusted party of the shuffle model: it must not be the
analyzer and must not collude with it.  This one

* accepts *messages only* — there is no sender argument anywhere, so nothing it
  keeps can link a message to a user, or two messages to each other;
* treats messages as opaque ``bytes`` (it never parses them; optionally it
  enforces one fixed length so lengths cannot single messages out);
* refuses to release a batch smaller than ``min_batch`` (privacy comes from the
  other users' noise, so a small batch would break the accounting);
* releases a uniformly random permutation drawn from the OS CSPRNG and forgets the batch.

>>> s = Shuffler(min_batch=3)
>>> s.submit([b"a", b"b"]); s.submit([b"c"])
>>> sorted(s.release())
[b'a', b'b', b'c']
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from privstats.privacy.randomness import RNGLike, as_source
from privstats.validation import check_positive_int

__all__ = ["BatchTooSmallError", "Shuffler", "shuffle_rows"]


class BatchTooSmallError(ValueError):
    """The shuffler holds fewer messages than its minimum batch size."""


class Shuffler:
    """Batching shuffler over opaque byte messages.

    Parameters
    ----------
    min_batch : the smallest number of messages released at once.
    message_size : if given, every message must have exactly this many bytes.
    rng : randomness source for the permutation; ``None`` (the default) is the OS CSPRNG.
        A seed is accepted for tests only.
    """

    def __init__(self, min_batch: int, *, message_size: int | None = None, rng: RNGLike = None):
        self.min_batch = check_positive_int(min_batch, "min_batch")
        self.message_size = None if message_size is None else check_positive_int(message_size, "message_size")
        self._source = as_source(rng)
        self._pool: list[bytes] = []

    def __len__(self) -> int:
        return len(self._pool)

    def submit(self, messages: Iterable[bytes]) -> None:
        """Add messages to the pool (validated first: a bad batch adds nothing)."""
        batch = list(messages)
        for m in batch:
            if not isinstance(m, (bytes, bytearray)):
                raise TypeError(f"messages must be bytes, got {type(m).__name__}")
            if self.message_size is not None and len(m) != self.message_size:
                raise ValueError(f"messages must be exactly {self.message_size} bytes, got {len(m)}")
        self._pool.extend(bytes(m) for m in batch)

    def release(self) -> list[bytes]:
        """The pooled messages in uniformly random order; the pool is then emptied."""
        if len(self._pool) < self.min_batch:
            raise BatchTooSmallError(
                f"batch has {len(self._pool)} messages, below min_batch={self.min_batch}; waiting for more"
            )
        order = self._source.permutation(len(self._pool))
        pool, self._pool = self._pool, []
        return [pool[i] for i in order]

    def shuffle(self, messages: Iterable[bytes]) -> list[bytes]:
        """One-shot: submit ``messages`` to an empty shuffler and release them."""
        if self._pool:
            raise RuntimeError("shuffle() needs an empty pool; call release() first")
        self.submit(messages)
        try:
            return self.release()
        except BatchTooSmallError:
            self._pool = []
            raise


def shuffle_rows(messages: np.ndarray, *, min_batch: int = 1, rng: RNGLike = None) -> np.ndarray:
    """Vectorized shuffler for messages held as rows of a numpy array (simulation and services).

    >>> shuffle_rows(np.arange(4), rng=0).shape
    (4,)
    """
    arr = np.asarray(messages)
    if arr.ndim == 0:
        raise ValueError("messages must be an array with one row per message")
    if arr.shape[0] < min_batch:
        raise BatchTooSmallError(f"batch has {arr.shape[0]} messages, below min_batch={min_batch}")
    return arr[as_source(rng).permutation(arr.shape[0])]
