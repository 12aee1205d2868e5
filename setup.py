"""Package list for setuptools; all other metadata is in pyproject.toml.

pyproject.toml's `packages` is either an explicit list or a `find` directive, never both. sagepy needs both:
discovery for `sagepy` and its subpackages, plus `sagepy._grammar` and `sagepy._stdlib`, which are mapped
onto the top-level grammar/ and stdlib/ directories (see [tool.setuptools.package-dir]) and so cannot be
found by scanning sagepy/.
"""
from setuptools import find_packages, setup

setup(packages=find_packages(include=["sagepy*"]) + ["sagepy._grammar", "sagepy._stdlib"])
