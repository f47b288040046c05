"""The Kubernetes manifests (k8s/): no cluster runs here, so every manifest is validated against the
schema of a pinned Kubernetes version (kubernetes-validate ships the schemas: no network), the
kustomize build too where kustomize is installed (`make tools`; mandatory in CI), and the settings
they give the image are checked through the one builder of Locust command lines.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from harness import ROOT, missing, run_locust
from runs import manifest, only_run

from swarmbench.core.launch import Launch, from_env

K8S = ROOT / "k8s"
KUBERNETES_VERSION = "1.33.0"
"""The Kubernetes release the manifests are validated against (a version clusters widely run)."""


def docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def kustomization() -> dict:
    return docs(K8S / "kustomization.yaml")[0]


def resources() -> list[dict]:
    """Every resource the kustomization lists, plus the tools (the results reader)."""
    files = [K8S / f for f in kustomization()["resources"]] + sorted((K8S / "tools").glob("*.yaml"))
    return [d for f in files for d in docs(f)]


def settings() -> dict[str, str]:
    gen = {g["name"]: g for g in kustomization()["configMapGenerator"]}
    return dict(lit.split("=", 1) for lit in gen["swarmbench-settings"]["literals"])


def by_kind(kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in resources() if d["kind"] == kind}


def pod_specs() -> list[tuple[str, dict]]:
    out = []
    for d in resources():
        spec = d["spec"]["template"]["spec"] if d["kind"] in ("Job", "Deployment") else d.get("spec")
        if d["kind"] in ("Job", "Deployment", "Pod"):
            out.append((d["metadata"]["name"], spec))
    return out


def test_every_manifest_is_valid_for_the_pinned_kubernetes():
    checked = []
    for d in resources():
        # strict: an unknown field (a typo) is an error too, not silently dropped by the API server.
        kubernetes_validate.validate(d, KUBERNETES_VERSION, strict=True)
        checked.append(d["kind"])
    assert sorted(checked) == sorted(["Namespace", "PersistentVolumeClaim", "Deployment", "Service"] * 1
                                     + ["Job", "Service", "Job", "Pod"])  # fmt: skip


def test_a_broken_manifest_is_caught():
    """The validator really checks: a misspelt field and a wrong type both fail."""
    job = by_kind("Job")["swarmbench-master"]
    typo = {**job, "spec": {**job["spec"], "backofLimit": 0}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(typo, KUBERNETES_VERSION, strict=True)
    wrong = {**job, "spec": {**job["spec"], "backoffLimit": "none"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(wrong, KUBERNETES_VERSION, strict=True)


def test_kustomization_lists_every_file_and_every_file_exists():
    k = kustomization()
    listed = set(k["resources"])
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == on_disk
    for gen in k["configMapGenerator"]:
        for f in gen.get("files", []):
            assert (K8S / f).is_file(), f
    assert {i["name"] for i in k["images"]} == {"swarmbench-locust", "swarmbench-target"}


def test_master_is_a_job_that_runs_once_and_workers_match_workers():
    master = by_kind("Job")["swarmbench-master"]
    spec = master["spec"]["template"]["spec"]
    assert spec["restartPolicy"] == "Never" and master["spec"]["backoffLimit"] == 0
    assert spec["containers"][0]["args"] == ["master", "--headless"]
    mounts = {m["mountPath"]: m["name"] for m in spec["containers"][0]["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert (
        volumes[mounts["/swarmbench/results"]]["persistentVolumeClaim"]["claimName"] == "swarmbench-results"
    )
    workers = by_kind("Job")["swarmbench-worker"]
    n = int(settings()["WORKERS"])
    assert workers["spec"]["parallelism"] == workers["spec"]["completions"] == n
    assert workers["spec"]["template"]["spec"]["containers"][0]["args"] == ["worker"]


def test_the_settings_make_the_launch_lines_the_image_runs():
    """The ConfigMap's settings, through swarmbench.core.launch (the image's entrypoint)."""
    env = settings()
    master = from_env("master", True, env).argv()
    assert f"--expect-workers={env['WORKERS']}" in master and "--headless" in master
    assert f"--run-time={env['LOCUST_RUN_TIME']}" in master
    worker = from_env("worker", False, env).argv()
    assert "--master-host=master" in worker
    services = {s["metadata"]["name"]: s for s in by_kind("Service").values()}
    assert env["SWARMBENCH_MASTER_HOST"] in services
    assert env["LOCUST_HOST"] == f"http://target:{services['target']['spec']['ports'][0]['port']}"


def test_every_pod_is_non_root_and_limited():
    for name, spec in pod_specs():
        sc = spec["securityContext"]
        assert sc["runAsNonRoot"] is True and sc["runAsUser"] != 0, name
        for c in spec["containers"]:
            assert c["securityContext"]["allowPrivilegeEscalation"] is False, name
            assert c["securityContext"]["capabilities"]["drop"] == ["ALL"], name
            assert {"cpu", "memory"} <= set(c["resources"]["limits"]), name


def kustomize() -> str | None:
    local = ROOT / ".venv" / "bin" / "kustomize"
    return str(local) if local.exists() else shutil.which("kustomize")


def test_kustomize_build_is_valid():
    """What `kubectl apply -k k8s/` would send: generated ConfigMaps, hashed names, image tags."""
    exe = kustomize()
    if exe is None:
        missing("kustomize is not installed (make tools)")
    out = subprocess.run([exe, "build", str(K8S)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    built = [d for d in yaml.safe_load_all(out.stdout) if d]
    for d in built:
        kubernetes_validate.validate(d, KUBERNETES_VERSION, strict=True)
        if d["kind"] != "Namespace":
            assert d["metadata"]["namespace"] == "swarmbench", d["metadata"]["name"]
    maps = [d["metadata"]["name"] for d in built if d["kind"] == "ConfigMap"]
    assert len(maps) == 2 and all(
        m.startswith(("swarmbench-settings-", "swarmbench-locustfiles-")) for m in maps
    )
    images = {c["image"] for d in built if d["kind"] in ("Job", "Deployment")
              for c in d["spec"]["template"]["spec"]["containers"]}  # fmt: skip
    assert images == {"swarmbench-locust:2.47.0", "swarmbench-target:1"}


def test_the_example_locustfile_runs_with_the_plugin(albums_target, tmp_path):
    """The ConfigMap's example is a real locustfile: a short run against the real target."""
    launch = Launch(
        role="standalone", locustfile=str(K8S / "locustfiles" / "example.py"), headless=True,
        run_time="3s", host=albums_target.url, results_dir=str(tmp_path),
    )  # fmt: skip
    res = run_locust(*launch.argv(), "--users=2", "--spawn-rate=2", timeout=60, env={"PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr[-2000:]
    m = manifest(only_run(tmp_path))
    assert m["user_classes"] == ["ExampleUser"] and m["totals"]["requests"] > 0
    assert m["totals"]["failures"] == 0
    assert m["locustfile"].split(",")[0] == "locustfiles/swarmbench_plugin.py"
