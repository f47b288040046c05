"""Exact latency, the layer on hdrhistogram: HDR histograms per request name and per 1 s window,
their encodings, the load generator's recorder, and merging them.

The plugin records with it, the comparison and the analysis read with it; Locust's own
percentiles are rounded to 2 significant digits, these keep 3. Imports hdrhistogram and core only.
"""
