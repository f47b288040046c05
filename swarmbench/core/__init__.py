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
    schema      typed JSON records: one dataclass per object, its key table derived from its fields
    sections    run.json's sections (CPU, target, totals, open model, events, ...) as records
    status      run statuses, who started a run, run modes, event kinds
    durations   the one duration grammar (500ms, 30s, 1m30s)
    steps       the one step grammar 'START STEP SECONDS MAX' (user steps and rate steps)
    arrival     the --arrival-rate stage grammar, the rate it offers, its constant-rate holds
    arrival_counts  what open-model generators counted, summed; run.json's open_model summary
    slots       a generator's share of the open-model schedule as numbered slots
    experiment  request mixes, store strategies, sweep modes
    pacing      the rate cap the users' measured pacing allows
    verdict     every rule that judges a run: bottleneck, open-model capacity, knee bound
    target      the bundled target's /metrics (scrape, parse, delta)
    launch      the Locust command line of a master, a worker or a standalone run
    gitinfo     the commit a run was made from
"""
