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
from privstats.privacy.guarantees import ApproxDP, Guarantee, PureDP, ZCDP, guarantee_from_dict
from privstats.privacy.ledger import BudgetExceededError, BudgetLedger
from privstats.privacy.randomness import GeneratorSource, RandomSource, SecureSource, as_generator, as_source
from privstats.privacy.samplers import bernoulli_exp, discrete_gaussian, discrete_laplace, gaussian, laplace

__all__ = [
    "Guarantee", "PureDP", "ApproxDP", "ZCDP", "guarantee_from_dict",
    "basic_composition", "advanced_composition", "optimal_composition", "optimal_composition_delta",
    "zcdp_composition", "zcdp_to_approx", "pure_to_zcdp", "parallel_composition", "compose",
    "BudgetLedger", "BudgetExceededError",
    "RandomSource", "SecureSource", "GeneratorSource", "as_source", "as_generator",
    "bernoulli_exp", "discrete_laplace", "discrete_gaussian", "laplace", "gaussian",
    "shuffled_epsilon", "local_epsilon_for",
]
