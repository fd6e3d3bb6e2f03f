"""privstats: differentially private statistics over distributed data.

One statistic, four trust models (``local``, ``shuffle``, ``secure``, ``central``):
the public functions take the model as a parameter and return an :class:`Estimate`.
"""

from privstats.estimate import Estimate

__version__ = "0.1.0"
__all__ = ["Estimate", "__version__"]
