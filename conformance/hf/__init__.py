"""The Hugging Face zoo: real ``transformers`` architectures through every backend.

:data:`ARCHITECTURES` lists them (tiny configs, random weights, no download);
:func:`~.check.run_entry` runs one through a compiler next to eager torch and a float64
run. ``parity conform --models hf`` puts them in the matrix.

Example::

    >>> from parity.conformance.hf import ARCHITECTURES, get_architecture
    >>> get_architecture("mixtral").note
    'MoE, top-2 of 4 experts'
"""

from __future__ import annotations

from .architectures import ARCHITECTURES, get_architecture
from .spec import HFSpec

__all__ = ["ARCHITECTURES", "HFSpec", "get_architecture"]
