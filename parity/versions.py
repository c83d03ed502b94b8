"""What ``parity --version`` prints: parity's version, torch's, and each backend's stack.

Read from the installed packages' metadata (``importlib.metadata``), so nothing heavy is
imported: no torch, no jax.

Example::

    >>> lines = version_lines()
    >>> lines[0].startswith("parity "), lines[1].startswith("torch ")
    (True, True)
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from .backends.registry import BUILTIN_BACKENDS, _entry_points, pip_install_line


def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution``, or None when it is not installed."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def version_lines() -> list[str]:
    """``parity X``, ``torch Y``, then one line per backend with its stack's versions
    (or that its extra is not installed); plugins name the distribution that registers them."""
    lines = [f"parity {installed_version('parity')}", f"torch {installed_version('torch')}"]
    for name, builtin in BUILTIN_BACKENDS.items():
        stack = [(module, installed_version(module)) for module in builtin.requires]
        if not stack:
            lines.append(f"backend {name}: built in")
        elif any(v is None for _, v in stack):
            lines.append(f"backend {name}: not installed ({pip_install_line(builtin.extra)})")
        else:
            lines.append(f"backend {name}: " + ", ".join(f"{module} {v}" for module, v in stack))
    for name, entry_point in sorted(_entry_points().items()):
        if name not in BUILTIN_BACKENDS:
            dist = getattr(entry_point, "dist", None)
            source = f"{dist.name} {dist.version}" if dist is not None else entry_point.value
            lines.append(f"backend {name}: plugin from {source}")
    return lines
