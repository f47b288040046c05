"""An example of your own locustfile on Kubernetes, from the swarmbench-locustfiles ConfigMap:
set LOCUST_LOCUSTFILE=/mnt/locust/example.py in k8s/kustomization.yaml. The plugin (results
folder, run.json, thresholds) is put in front of it by the image's entrypoint, as for any locustfile."""

from locust import FastHttpUser, constant, task


class ExampleUser(FastHttpUser):
    wait_time = constant(0.1)

    @task(3)
    def list_albums(self) -> None:
        self.client.get("/albums")

    @task
    def one_album(self) -> None:
        self.client.get("/albums/1", name="/albums/{id}")
