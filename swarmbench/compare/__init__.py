"""`python -m swarmbench compare BASELINE CANDIDATE`: did it get slower? Two runs, or two sets of
repeats, compared metric by metric with a bootstrap confidence interval and a verdict (regressed,
improved, no change, inconclusive). Analysis side: numpy, the run folders' exact histograms.

dists.py (t and F quantiles) <- stats.py (the bootstrap, pure) <- noise.py (run-to-run noise,
calibration) ; verdict.py (band and verdict) ; load.py (run folders) ->
grid.py (the shared bucket grids) ; fairness.py (the settings that differ) ; report.py, html.py,
svg.py (outputs) <- cli.py (the only code that writes files) ; floor.py (an A/A run's noise floor,
`make ab` with B = A).
"""
