"""The error raised by the VDAF layer.

Example:
    >>> from privstats.secure.vdaf.errors import VdafError
    >>> issubclass(VdafError, ValueError)
    True
"""

__all__ = ["VdafError"]


class VdafError(ValueError):
    """A report or message fails VDAF verification or decoding (ERR_VERIFY / ERR_DECODE of the draft)."""
