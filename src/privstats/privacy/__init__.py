"""Privacy layer: guarantees, composition, the budget ledger, exact samplers, randomness policy."""

from privstats.privacy.amplification import local_epsilon_for, shuffled_epsilon
from privstats.privacy.composition import (
    advanced_composition,
    basic_composition,
    compose,
    optimal_composition,
    optimal_composition_delta,
    parallel_composition,
    pure_to_zcdp,
    zcdp_composition,
    zcdp_to_approx,
)
from privstats.privacy.guarantees import ZCDP, ApproxDP, Guarantee, PureDP, guarantee_from_dict
from privstats.privacy.ledger import BudgetExceededError, BudgetLedger
from privstats.privacy.randomness import GeneratorSource, RandomSource, SecureSource, as_generator, as_source
from privstats.privacy.samplers import bernoulli_exp, discrete_gaussian, discrete_laplace, gaussian, laplace

__all__ = [
    "ZCDP",
    "ApproxDP",
    "BudgetExceededError",
    "BudgetLedger",
    "GeneratorSource",
    "Guarantee",
    "PureDP",
    "RandomSource",
    "SecureSource",
    "advanced_composition",
    "as_generator",
    "as_source",
    "basic_composition",
    "bernoulli_exp",
    "compose",
    "discrete_gaussian",
    "discrete_laplace",
    "gaussian",
    "guarantee_from_dict",
    "laplace",
    "local_epsilon_for",
    "optimal_composition",
    "optimal_composition_delta",
    "parallel_composition",
    "pure_to_zcdp",
    "shuffled_epsilon",
    "zcdp_composition",
    "zcdp_to_approx",
]
