"""Did it get slower? `swarmbench compare BASELINE CANDIDATE`: two runs, or two sets of repeats,
compared metric by metric with a bootstrap confidence interval and a verdict (regressed, improved,
no change, inconclusive), from the run folders' exact histograms. numpy, hdrhistogram and core
(the `compare` extra); the verdict's rule is core/checks.py's.
"""
