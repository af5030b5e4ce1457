"""The Python samples of docs/python.md and docs/workflows.md as a user runs them: each sample is
a region of this file (so `mypy --strict`, which checks the tests, checks the samples as written),
the page's block equals its region, and each region runs against a real server (the job-control
one in test_job_control.py). The producer's and the worker's quickstarts are examples/python's
(tests/interop/python-client.test.ts)."""
from __future__ import annotations

import contextlib
import io
import pathlib
import re
import textwrap
import threading
from typing import Any, Iterator

import sepp
from conftest import ADMIN_KEY, REPO, ServerProcess, eventually

HERE = pathlib.Path(__file__)
QUICKSTARTS = ("examples/python/producer.py#quickstart", "examples/python/worker.py#quickstart")


def page_samples(page: str) -> list[str]:
    """The ```python blocks of a docs page, but the quickstarts run from examples/python."""
    text = (REPO / "docs" / page).read_text()
    found = re.finditer(r"(?:<!-- (\S+) -->\n)?```python\n([\s\S]*?)```", text)
    return [m.group(2) for m in found if m.group(1) not in QUICKSTARTS]


def page_output(page: str, sample: str) -> str:
    """The ```text block the page shows after a sample ("It prints:")."""
    text = (REPO / "docs" / page).read_text()
    shown = re.search(re.escape(sample) + r"```\n\nIt prints:\n\n```text\n([\s\S]*?)```", text)
    assert shown is not None, f"docs/{page} shows no output after its sample"
    return shown.group(1)


def regions() -> dict[str, str]:
    """This file's regions, by name, dedented as the page shows them."""
    found = re.finditer(r"# region (\S+)\n([\s\S]*?)\n *# endregion \1\n", HERE.read_text())
    return {m.group(1): textwrap.dedent(m.group(2)) + "\n" for m in found}


def test_every_sample_of_the_pages_is_a_region_here() -> None:
    mine = regions()
    for page, names in (("python.md", ["wait-and-events", "job-control", "build", "export"]),
                        ("workflows.md", ["crawl"])):
        shown = page_samples(page)
        assert shown == [mine[f"{page}#{name}"] for name in names], (
            f"docs/{page}'s samples differ from their regions here (each is checked by mypy --strict and run below)")


def test_the_readme_installs_as_docs_python_md_says() -> None:
    """A user with pyenv's or another python3 first on the PATH gets a venv without Debian's grpc."""
    docs = (REPO / "docs" / "python.md").read_text()
    install = re.search(r"<!-- python.md#install -->\n```sh\n([\s\S]*?)```", docs)
    assert install is not None
    readme = (REPO / "clients" / "python" / "README.md").read_text()
    assert textwrap.indent(install.group(1), "    ") in readme


@contextlib.contextmanager
def printed() -> Iterator[io.StringIO]:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        yield out


def wait_and_events(client: sepp.Client) -> None:
    # region python.md#wait-and-events
    outcome = client.enqueue_and_wait("reports", "build", json={"week": 49}, timeout_ms=60_000)
    if outcome.state == "completed":
        print(outcome.result["url"])

    with client.events(queues=["reports"]) as stream:
        for event in stream:
            print(event.kind, event.job_id)
    # endregion python.md#wait-and-events


def job_control(client: sepp.Client) -> None:
    """Run as the page shows it by test_job_control.py (on the same queue: not run here too)."""
    # region python.md#job-control
    result = client.cancel_jobs("emails", type="newsletter", dry_run=True)
    print(f"would cancel {result.matched} newsletter jobs")
    client.update_jobs("emails", type="password-reset", run_now=True)
    for entry in client.audit_entries(target="queue:emails"):
        print(entry.at_ms, entry.actor, entry.action, entry.details)
    # endregion python.md#job-control


# region python.md#build
def build(job: sepp.WorkerJob) -> dict[str, str]:
    job.progress(50, {"step": "render"})
    return {"url": f"https://files.example.com/report-{job.data['week']}.pdf"}
# endregion python.md#build


uploaded: list[object] = []


def upload(chunk: object) -> None:
    uploaded.append(chunk)


# region python.md#export
def export(job: sepp.WorkerJob) -> None:
    for chunk in job.data["chunks"]:
        job.raise_if_cancelled()
        upload(chunk)
        if job.cancelled.wait(1.0):  # pause between chunks, but wake up to stop
            return
# endregion python.md#export


def crawl(client: sepp.Client) -> None:
    # region workflows.md#crawl
    import queue
    from typing import Any

    import sepp

    added = client.create_batch(
        on_complete=sepp.JobSpec("crawl", "crawled"),
        jobs=[sepp.JobSpec("crawl", "page", json={"url": "/", "depth": 0})],
        seal=True,
    )
    ended: queue.Queue[dict[str, Any]] = queue.Queue()


    def page(job: sepp.WorkerJob) -> None:
        url, depth = job.data["url"], job.data["depth"]
        if depth == 2:
            return
        assert job.batch_id is not None
        links = [sepp.JobSpec("crawl", "page", json={"url": f"{url}{link}/", "depth": depth + 1}) for link in "ab"]
        client.add_to_batch(job.batch_id, links, from_member=job.id)


    worker = client.worker(["crawl"], handlers={"page": page, "crawled": lambda job: ended.put(job.data["batch"])})
    worker.start()
    batch = ended.get(timeout=30)
    worker.close()
    print(f"{batch['completed']} pages crawled, same batch: {batch['id'] == added.batch.id}")
    # endregion workflows.md#crawl


def test_results_progress_waiting_and_events_as_shown(server: ServerProcess) -> None:
    """The build handler's result reaches enqueue_and_wait; the events loop prints each event of
    the next job until the program closes its client."""
    ended: list[sepp.SeppError] = []

    def run_sample() -> None:
        try:
            wait_and_events(client)
        except sepp.SeppError as error:
            ended.append(error)

    streams: list[sepp.EventStream] = []

    def events(**options: Any) -> sepp.EventStream:
        streams.append(sepp.Client.events(client, **options))
        return streams[-1]

    with sepp.Client(server.address, api_key=ADMIN_KEY) as client, printed() as out:
        setattr(client, "events", events)  # To know when the sample's subscription is live.
        worker = client.worker(["reports"], handlers={"build": build})
        worker.start()
        sample = threading.Thread(target=run_sample)
        sample.start()
        eventually(lambda: len(streams) == 1 and streams[0].caught_up.is_set(), "the sample's subscription")
        job = client.enqueue("reports", "build", json={"week": 50})
        eventually(lambda: f"completed {job.id}" in out.getvalue(), "the second job's events")
        worker.close()
        client.close()  # Ends the sample's loop: its iteration raises, saying why.
        sample.join(10)
        lines = out.getvalue().splitlines()
    assert not sample.is_alive()
    assert [(e.code, e.message) for e in ended] == [("cancelled", "events: the sepp client is closed")]
    assert lines == ["https://files.example.com/report-49.pdf"] + [
        f"{kind} {job.id}" for kind in ("enqueued", "leased", "progress", "completed")
    ]


def test_export_uploads_every_chunk_and_stops_when_cancelled(client: sepp.Client) -> None:
    worker = client.worker(["exports"], handlers={"export": export})
    worker.start()
    try:
        done = client.enqueue_and_wait("exports", "export", json={"chunks": [1]}, timeout_ms=30_000)
        assert (done.state, uploaded) == ("completed", [1])
        stopped = client.enqueue("exports", "export", json={"chunks": [2, 3, 4]})
        eventually(lambda: uploaded == [1, 2], "the first chunk of the second export")
        client.cancel_job(stopped.id)
        assert client.wait_for(stopped.id, timeout_ms=30_000).state == "cancelled"
        # Stopped in its pause after chunk 2 (or, on a slow machine, after chunk 3), not run to the end.
        assert uploaded in ([1, 2], [1, 2, 3]), uploaded
    finally:
        worker.close()


def test_the_crawl_prints_what_workflows_md_shows(client: sepp.Client) -> None:
    with printed() as out:
        crawl(client)
    [sample] = page_samples("workflows.md")
    assert out.getvalue() == page_output("workflows.md", sample)
