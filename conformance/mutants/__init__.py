"""Mutation testing: how many planted faults the conformance suite catches.

A *mutant* is one fault class (:data:`FAULTS`) planted at the executable boundary of
one backend (:class:`Planted`) for one op × dtype cell; the cell's ``--quick`` cases run
on it, and it is *killed* when the cell fails where the backend's own run does not. The
kill rate per class, and every surviving mutant with its op and cases, is the suite's
measured strength (:func:`run_mutants`; ``parity conform --mutants``;
``pytest --parity-backend NAME --mutants``).
"""

from .faults import FAULTS, Facts, Fault, Rule, Site, step_ulps
from .planted import Planted, PlantedFault
from .run import Mutant, MutantRun, run_mutants

__all__ = ["FAULTS", "Facts", "Fault", "Mutant", "MutantRun", "Planted", "PlantedFault", "Rule", "Site",
           "run_mutants", "step_ulps"]
