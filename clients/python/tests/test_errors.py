"""Why jobs fail, through the Python SDK against a real server (issue 36, item 2): a
handler's exception reaches the server with its class and traceback on both transports;
get_job shows them per attempt; `client.dlq.top_errors` groups the dead letters; a group
is requeued and deleted with `requeue_matching` / `delete_matching` as one act."""
from __future__ import annotations

import pytest
from conftest import eventually
from test_worker import TRANSPORTS, start

import sepp
from sepp._convert import error_class_and_stack


class PaymentDeclined(Exception):
    pass


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_class_and_traceback_per_attempt_top_errors_and_a_group_requeued(
        client: sepp.Client, queue: str, transport: str) -> None:
    for i in range(4):
        client.enqueue(queue, "charge" if i % 2 == 0 else "parse", json={"i": i}, max_attempts=1)

    def charge(job: sepp.WorkerJob) -> None:
        try:
            raise PaymentDeclined("card 4242 said no")
        except PaymentDeclined as error:
            raise sepp.DeadLetter("card declined") from error

    def parse(job: sepp.WorkerJob) -> None:
        job.data["missing"]  # a KeyError from the job's own code, on its last attempt

    worker, events = start(client, queue, transport, handlers={"charge": charge, "parse": parse})
    try:
        events.wait("failed", 4)
    finally:
        worker.close()

    top = client.dlq.top_errors(queue)
    assert top.dead_total == 4 and top.complete
    assert sorted((g.error_class, g.first_line, g.jobs) for g in top.groups) == [
        ("KeyError", "KeyError: 'missing'", 2),
        ("test_errors.PaymentDeclined", "card declined", 2),
    ]
    for letter in client.dlq.list(queue).jobs:
        [attempt] = client.get_job(letter.id).errors
        assert attempt.stack is not None and "Traceback (most recent call last)" in attempt.stack
        assert "test_errors.py" in attempt.stack, "the traceback of the job's own code"
        if attempt.error_class == "KeyError":
            assert attempt.stack.rstrip().endswith("KeyError: 'missing'")
        else:
            assert "PaymentDeclined: card 4242 said no" in attempt.stack

    declined = next(g for g in top.groups if g.error_class.endswith("PaymentDeclined"))
    assert client.jobs.requeue_matching(queue, states=["dead"], error_group=declined).changed == 2
    [rest] = client.dlq.top_errors(queue).groups
    assert rest.error_class == "KeyError"
    assert client.jobs.delete_matching(queue, states=["dead"], error_group=(rest.error_class, rest.first_line)).changed == 2
    assert eventually(lambda: client.dlq.top_errors(queue).groups == (), "no group left")


def test_error_class_and_stack_are_bounded_and_printable() -> None:
    empty: dict[str, int] = {}
    try:
        empty["k"]
    except KeyError as error:
        name, stack = error_class_and_stack(error)
    assert name == "KeyError" and stack.startswith("Traceback")
    odd = type("Bad\nName" + "y" * 300, (Exception,), {})
    name, _ = error_class_and_stack(odd("x"))
    assert "\n" not in name and len(name) == 256
