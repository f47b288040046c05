"""Swarmbench's core: the facts every part shares, standard library only.

Imported by the host runner (stdlib-only `python3 -m swarmbench`), by the Locust plugin inside the
image (which has Locust but no pandas), by the analysis and by the tests (which must never import
Locust: its gevent monkey-patching breaks subprocess for the whole pytest process). So nothing in
this package may import Locust, gevent, psutil, pandas or anything else outside the standard library.

    exits       exit codes, one table for the runner, the plugin and CI
    errors      die(), UsageError, InputError
    folder      run-folder and sweep-folder file names, run ids, atomic writes
    manifest    run.json: RunManifest (one reader, one writer)
    sweepstate  sweep.json: SweepState and SweepPoint (one reader, one writer)
    wait        the --wait-time spec: parsed once, think time and offered-rate cap
    checks      the threshold grammar `[NAME:]METRIC OP VALUE`
    headerlines request-header lines (`Name: value`): parsed and validated, values never echoed
    arrival     the --arrival-rate stage grammar, iteration counts, the open-model verdict
    rate_steps  stepped arrival rates (knee --rates) and the constant-rate steps of a schedule
    experiment  request mixes, store strategies, sweep modes, the step-load spec
    verdict     the bottleneck rules, their thresholds and their wording
    target      the bundled target's /metrics (scrape, parse, delta)
    launch      the Locust command line of a master, a worker or a standalone run
    gitinfo     the commit a run was made from
"""
