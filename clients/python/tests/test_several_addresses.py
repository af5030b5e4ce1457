"""Several servers in one address (docs/python.md, "Several servers in one address"):
`ipv4:HOST1:PORT1,HOST2:PORT2`, grpc's own syntax. The channel takes the first address that
accepts a connection (grpc's pick_first) and stays on it; once that server is gone, the Client's
calls and its Worker go to the next. Two real servers with their own data (SQLite), the first
stopped under a running Worker. The TypeScript SDK's: tests/client/several-addresses.test.ts."""
from __future__ import annotations

import pytest
from conftest import ADMIN_KEY, eventually, running_server

import sepp


def test_a_client_given_two_servers_uses_the_first_and_the_second_once_the_first_stops() -> None:
    with running_server() as first, running_server() as second:
        ran: list[str] = []

        def handle(job: sepp.WorkerJob) -> None:
            ran.append(job.id)

        # As docs/python.md writes it.
        with sepp.Client(f"ipv4:{first.address},{second.address}", api_key=ADMIN_KEY) as client, \
                sepp.Client(first.address, api_key=ADMIN_KEY) as on_first, \
                sepp.Client(second.address, api_key=ADMIN_KEY) as on_second:
            one = client.enqueue("several", "t")
            # The first address took it: each server has its own SQLite file.
            assert on_first.get_job(one.id).state == "ready"
            with pytest.raises(sepp.SeppError, match="does not exist"):
                on_second.get_job(one.id)
            worker = client.worker(["several"], fallback=handle).start()
            try:
                eventually(lambda: one.id in ran or None, "the Worker ran the first server's job")
                assert first.stop() == 0, first.logs

                def enqueued() -> sepp.Enqueued | None:
                    try:
                        return client.enqueue("several", "t")
                    except sepp.SeppError:
                        return None

                two = eventually(enqueued, "an enqueue through the second address")
                # Only the second server is left to have stored it, and the Worker leased it there.
                eventually(lambda: two.id in ran or None, "the Worker ran the second server's job")
            finally:
                worker.close()
