"""The run page, the layer between the exact latency and its users: every run folder's report.html
(the run's answer, its warnings, its charts, its settings and files) and the stdlib SVG charts that
page and compare.html draw with.

The plugin writes the page when a run ends (inside the Locust image: no numpy, pandas or
matplotlib), the analysis shows it for a one-run report and links it from a sweep's, compare.html
draws its charts with page/svg.py. Standard library, hdrhistogram (through swarmbench.latency) and
core only (pyproject.toml's `page` contract).
"""
