"""Swarmbench's plugin for ANY locustfile: `locust -f locustfiles/swarmbench_plugin.py,my_test.py`.

Defines no users. With it, your own test gets the same results folder, run.json and options as the
bundled albums scenario (compose puts it in front of LOCUST_LOCUSTFILE for you).
"""

from swarmbench.plugin import install

install()
