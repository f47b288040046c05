"""The naive way, for comparison in bench_report.py: read everything, plot every point.

python bench/naive_report.py RUN_FOLDER OUT_FOLDER
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

run, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
stats = pd.read_csv(run / "locust_stats.csv")
history = pd.read_csv(run / "locust_stats_history.csv")
stats.to_csv(out / "summary.csv", index=False)

fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 5.6), sharex=True)
for name, rows in history.groupby("Name"):
    for col in ("50%", "95%", "99%"):
        values = pd.to_numeric(rows[col], errors="coerce")
        top.plot(rows["Timestamp"], values, label=f"{col} {name}")
    bottom.plot(rows["Timestamp"], rows["Requests/s"], label=name)
top.set_ylabel("response time (ms)")
bottom.set_ylabel("throughput (requests/s)")
bottom.set_xlabel("time (s)")
top.legend(fontsize=6)
fig.savefig(out / "over_time.png", dpi=100)
