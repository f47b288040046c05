"""Swarmbench's core: the facts every part shares, standard library only.

The bottom layer: imported by the runner (`python3 -m swarmbench headless` on a fresh clone), by the
Locust plugin inside the image, by the comparison, the analysis and the tests (which must never
import Locust: its gevent monkey-patching breaks subprocess for the whole pytest process). Nothing
here imports anything outside the standard library (pyproject.toml's `core` contract).
"""
