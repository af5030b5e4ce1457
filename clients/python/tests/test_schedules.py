"""client.schedules against a real server: create, upsert, get with next runs, list,
pause, resume, trigger, delete; ticks arriving as jobs; the errors refusals become."""
from __future__ import annotations

import pytest
from conftest import PRODUCER_KEY, ServerProcess, eventually

import sepp


def test_a_schedule_ticks_and_is_operated(client: sepp.Client, queue: str) -> None:
    name = f"py-{queue}"
    schedule = client.schedules.create(
        name, cron="* * * * * *",
        job=sepp.ScheduleJob(queue, "tick", json={"n": 1}, priority=3, metadata={"a": "b"}, execution_timeout_ms=90_000),
        overlap="allow",
    )
    assert schedule.job.execution_timeout_ms == 90_000
    assert schedule.source == "api" and schedule.cron == "* * * * * *" and schedule.timezone == "UTC"
    assert schedule.next_tick_ms is not None and schedule.misfire == "run_latest"
    job = eventually(lambda: next(iter(client.reserve([queue], lease_ms=60_000)), None), "a tick's job")
    assert job.type == "tick" and job.json() == {"n": 1} and job.priority == 3 and job.metadata == {"a": "b"}
    assert job.idempotency_key is not None and job.idempotency_key.startswith(f"schedule:{name}:")
    assert client.get_job(job.id).timeout_ms == 90_000, "the template's timeout reaches the job"
    client.ack(job)

    got = client.schedules.get(name, next_runs=3)
    assert len(got.next_runs_ms) == 3 and got.next_runs_ms == sorted(got.next_runs_ms)
    assert got.job.payload == b'{"n":1}' and got.job.content_type == "application/json"
    assert got.ticks_enqueued >= 1 and got.last_outcome in ("enqueued", "skipped_misfire")
    listed = [s for s in client.schedules.list() if s.name == name]
    assert len(listed) == 1 and listed[0].job.payload is None and listed[0].job.payload_bytes == 7

    assert client.schedules.pause(name).paused
    assert not client.schedules.resume(name).paused
    triggered = client.schedules.trigger(name)
    assert client.get_job(triggered.id).idempotency_key is not None
    # The trigger's run, found by its job: the schedule ticks every second, so on a loaded
    # machine a tick's run can be newer than it by the time the runs are read.
    [run] = [r for r in client.schedules.runs(name) if r.job_id == triggered.id]
    assert (run.outcome, run.tick_ms) == ("triggered", None)
    client.schedules.delete(name)
    with pytest.raises(sepp.SeppError) as missing:
        client.schedules.get(name)
    assert missing.value.code == "not_found"


def test_upsert_and_the_errors_refusals_become(server: ServerProcess, client: sepp.Client, queue: str) -> None:
    name = f"py-up-{queue}"
    job = sepp.ScheduleJob(queue, "sync")
    schedule, created = client.schedules.upsert(name, interval_ms=3_600_000, job=job, misfire="catch_up", catch_up_max=2)
    assert created and schedule.interval_ms == 3_600_000 and schedule.catch_up_max == 2
    again, created_again = client.schedules.upsert(name, interval_ms=3_600_000, job=sepp.ScheduleJob(queue, "sync2"))
    assert not created_again and again.job.type == "sync2" and again.next_tick_ms == schedule.next_tick_ms

    with pytest.raises(sepp.SeppError) as exists:
        client.schedules.create(name, interval_ms=60_000, job=job)
    assert exists.value.code == "already_exists"
    with pytest.raises(sepp.SeppError) as bad_cron:
        client.schedules.create(f"{name}-bad", cron="61 * * * *", job=job)
    assert bad_cron.value.code == "invalid_argument" and bad_cron.value.message.startswith("cron: ")
    with pytest.raises(sepp.SeppError) as bad_zone:
        client.schedules.create(f"{name}-bad", cron="0 3 * * *", timezone="Nowhere/Else", job=job)
    assert bad_zone.value.message.startswith("timezone: ")
    with pytest.raises(sepp.SeppError) as bad_policy:
        client.schedules.create(f"{name}-bad", cron="0 3 * * *", job=job, misfire="never")  # type: ignore[arg-type]
    assert bad_policy.value.code == "invalid_argument" and "misfire" in bad_policy.value.message
    with pytest.raises(sepp.SeppError) as missing:
        client.schedules.upsert(f"{name}-missing", cron="0 3 * * *", job=job, create=False)
    assert missing.value.code == "not_found"
    with sepp.Client(server.address, api_key=PRODUCER_KEY) as producer:
        assert any(s.name == name for s in producer.schedules.list())
        with pytest.raises(sepp.SeppError) as denied:
            producer.schedules.delete(name)
        assert denied.value.code == "permission_denied"
    client.schedules.delete(name)
