"""Swarmbench: a Dockerized Locust load-testing harness with scaling analysis.

One package, four parts; the data flows left to right:

    core      standard library only: every fact the others share (run folder, run.json and
              sweep.json schemas, wait-time spec, thresholds, mixes, verdict rules, launch lines)
    plugin    the Locust plugin (needs Locust): options, run folders, run.json, thresholds
    runner    the host CLI, `python -m swarmbench up|headless|sweep|knee` (standard library only)
    analysis  run folders -> summaries, Amdahl/USL fits, charts, report (needs pandas)

plus `hdr` (swarmbench/latency/histogram.py) and `hdr_windows` (the same per 1-second window): the HDR latency
histograms' encoding, merging, percentiles and files, shared by the plugin, which records them, and
the analysis, which reads them (hdrhistogram only).

Importing `swarmbench` imports none of them.
"""

__version__ = "0.2.0"
