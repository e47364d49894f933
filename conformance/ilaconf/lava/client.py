"""A LAVA server's REST API (v0.2, as in LAVA 2023.01), the few calls make
lava needs: submit, follow, read the log, cancel. Standard library only, so
that pointing at a remote lab needs nothing installed on the host.
"""

import json
import urllib.error
import urllib.request
from dataclasses import dataclass


class LabError(RuntimeError):
    pass


@dataclass
class Job:
    id: int
    state: str  # Submitted, Scheduling, Scheduled, Running, Canceling, Finished
    health: str  # Unknown, Complete, Incomplete, Canceled
    device: str
    failure_comment: str
    times: tuple[str, str, str]  # submitted, started, ended (ISO 8601, "" while unknown)


class Lab:
    def __init__(self, url: str, token: str, timeout: float = 30) -> None:
        self.url, self.token, self.timeout = url.rstrip("/"), token, timeout

    def _call(self, path: str, body: dict | None = None) -> bytes:
        req = urllib.request.Request(
            f"{self.url}/api/v0.2/{path}", method="POST" if body is not None else "GET",
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return r.read()
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")[:500]
            raise LabError(f"{self.url}: {path}: HTTP {e.code}: {text}") from e
        except (urllib.error.URLError, OSError) as e:
            raise LabError(f"{self.url}: {path}: {e}") from e

    def submit(self, definition: str) -> int:
        answer = json.loads(self._call("jobs/", {"definition": definition}))
        ids = answer.get("job_ids") or []
        if len(ids) != 1:
            raise LabError(f"submit: unexpected answer {answer}")
        return int(ids[0])

    def job(self, job_id: int) -> Job:
        j = json.loads(self._call(f"jobs/{job_id}/"))
        return Job(job_id, j["state"], j["health"], j.get("actual_device") or "",
                   j.get("failure_comment") or "",
                   tuple(j.get(k) or "" for k in ("submit_time", "start_time", "end_time")))

    def log(self, job_id: int) -> str:
        """The job's log: LAVA's YAML, one entry per line."""
        return self._call(f"jobs/{job_id}/logs/").decode(errors="replace")

    def cancel(self, job_id: int) -> None:
        self._call(f"jobs/{job_id}/cancel/")

    def worker_of(self, device: str) -> str:
        return json.loads(self._call(f"devices/{device}/"))["worker_host"]

    def worker_state(self, worker: str) -> str:
        """Online or Offline (the server's view: the worker's last ping)."""
        return json.loads(self._call(f"workers/{worker}/"))["state"]
