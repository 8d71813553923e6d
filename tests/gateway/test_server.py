"""The gateway server against in-process fake replicas, with the database side stubbed (tests/gateway/fakes.py)."""

from __future__ import annotations

import asyncio

from multidict import CIMultiDict

from tests.gateway.fakes import (
    ACME_KEY,
    GLOBEX_KEY,
    Clock,
    FakeDatabase,
    bearer,
    replicas,
    route,
    running_gateway,
    unused_port,
)


def run(coroutine):
    return asyncio.run(coroutine)


def two_tenants(acme_replicas, **acme):
    return {
        ("acme", "classifier"): route(1, "acme", "classifier", acme_replicas, key=ACME_KEY, key_id=11, **acme),
        ("globex", "search"): route(2, "globex", "search", [], key=GLOBEX_KEY, key_id=22),
    }


def test_a_request_with_a_key_reaches_a_replica_with_path_query_and_body_and_without_the_key():
    async def scenario():
        async with replicas("r1") as (r1,):
            database = FakeDatabase(two_tenants([(101, r1.url)]))
            async with running_gateway(database) as (_, client):
                response = await client.post(
                    "/serve/acme/classifier/v1/predict?top=3", data=b'{"inputs": [1, 2]}', headers=bearer(ACME_KEY)
                )
                return response.status, await response.json(), response.headers.get("X-Model")

    status, body, model_header = run(scenario())
    assert status == 200
    assert body["replica"] == "r1" and body["method"] == "POST"
    assert body["path"] == "/v1/predict" and body["query"] == "top=3"
    assert body["body"] == '{"inputs": [1, 2]}'
    assert body["saw_authorization"] is False and body["saw_api_key"] is False
    assert body["prefix"] == "/serve/acme/classifier"
    assert model_header == "tiny"


def test_headers_sent_twice_pass_twice_both_ways():
    async def scenario():
        async with replicas("r1") as (r1,):
            async with running_gateway(FakeDatabase(two_tenants([(101, r1.url)]))) as (_, client):
                headers = CIMultiDict([("Authorization", f"Bearer {ACME_KEY}"), ("Accept", "a/b"), ("Accept", "c/d")])
                response = await client.get("/serve/acme/classifier/x", headers=headers)
                return (await response.json())["accept"], response.headers.getall("Set-Cookie")

    accept, cookies = run(scenario())
    assert accept == ["a/b", "c/d"]
    assert cookies == ["a=1", "b=2"]


def test_the_key_may_come_as_x_api_key():
    async def scenario():
        async with replicas("r1") as (r1,):
            async with running_gateway(FakeDatabase(two_tenants([(101, r1.url)]))) as (_, client):
                response = await client.get("/serve/acme/classifier/health", headers={"X-Api-Key": ACME_KEY})
                return response.status

    assert run(scenario()) == 200


def test_no_key_or_an_unknown_key_is_401_in_the_api_error_shape():
    async def scenario():
        async with replicas("r1") as (r1,):
            async with running_gateway(FakeDatabase(two_tenants([(101, r1.url)]))) as (_, client):
                missing = await client.post("/serve/acme/classifier/predict")
                unknown = await client.post("/serve/acme/classifier/predict", headers=bearer("isk_made-up"))
                return (
                    (missing.status, await missing.json(), missing.headers.get("WWW-Authenticate")),
                    (unknown.status, await unknown.json()),
                    r1.hits,
                )

    (missing_status, missing, challenge), (unknown_status, unknown), hits = run(scenario())
    assert missing_status == 401 and unknown_status == 401
    assert missing == {"code": "not_authenticated", "detail": "an inference key is required", "errors": {}}
    assert unknown["detail"] == "unknown or revoked inference key"
    assert challenge.startswith("Bearer")
    assert hits == 0


def test_another_tenants_key_and_an_unknown_service_are_the_same_404():
    async def scenario():
        async with replicas("r1") as (r1,):
            async with running_gateway(FakeDatabase(two_tenants([(101, r1.url)]))) as (_, client):
                foreign = await client.post("/serve/acme/classifier/predict", headers=bearer(GLOBEX_KEY))
                nowhere = await client.post("/serve/acme/nothing-here/predict", headers=bearer(ACME_KEY))
                return foreign.status, await foreign.json(), nowhere.status, await nowhere.json(), r1.hits

    foreign_status, foreign, nowhere_status, nowhere, hits = run(scenario())
    assert foreign_status == 404 and nowhere_status == 404
    assert foreign["code"] == nowhere["code"] == "not_found"
    assert hits == 0


def test_requests_go_to_the_replica_with_the_fewest_outstanding():
    async def scenario():
        async with replicas("busy", "idle") as (busy, idle):
            busy.hold = True
            database = FakeDatabase(two_tenants([(101, busy.url), (102, idle.url)]))
            async with running_gateway(database) as (gateway, client):
                # The first request lands somewhere; make sure it is the held one by trying until it is.
                first = asyncio.create_task(client.get("/serve/acme/classifier/x", headers=bearer(ACME_KEY)))
                while busy.hits + idle.hits == 0:
                    await asyncio.sleep(0.01)
                if idle.hits:  # it went to the idle one and is done; send the held one its request
                    await first
                    first = asyncio.create_task(client.get("/serve/acme/classifier/x", headers=bearer(ACME_KEY)))
                    while busy.hits == 0:
                        await asyncio.sleep(0.01)
                assert gateway.balancer.outstanding == {101: 1}
                before = idle.hits
                answers = [await client.get("/serve/acme/classifier/x", headers=bearer(ACME_KEY)) for _ in range(5)]
                busy.release.set()
                await first
                return [a.status for a in answers], idle.hits - before, busy.hits

    statuses, to_idle, busy_hits = run(scenario())
    assert statuses == [200] * 5
    assert to_idle == 5  # none queued behind the held request
    assert busy_hits == 1


def test_a_dead_replica_is_retried_on_another_reported_once_and_then_skipped():
    async def scenario():
        async with replicas("alive") as (alive,):
            dead = f"http://127.0.0.1:{unused_port()}"
            database = FakeDatabase(two_tenants([(101, dead), (102, alive.url)]))
            async with running_gateway(database) as (gateway, client):
                answers = [await client.post("/serve/acme/classifier/p", headers=bearer(ACME_KEY)) for _ in range(6)]
                await asyncio.sleep(0.1)  # the report runs on the database thread
                await gateway.flush_traffic(final=True)
                return [a.status for a in answers], alive.hits, database

    statuses, alive_hits, database = run(scenario())
    assert statuses == [200] * 6
    assert alive_hits == 6
    assert [replica for replica, _ in database.failures] == [101]
    assert "could not reach it" in database.failures[0][1]
    rows = database.flushes[-1][1]
    assert sum(r.counts.retries for r in rows) == 1  # later requests skip the suspect instead of retrying
    assert sum(r.counts.errors for r in rows) == 0


def test_a_connection_dropped_under_a_request_is_retried_elsewhere_but_not_reported():
    async def scenario():
        async with replicas("dropping", "fine") as (dropping, fine):
            dropping.drop = True
            database = FakeDatabase(two_tenants([(101, dropping.url), (102, fine.url)]))
            async with running_gateway(database) as (_, client):
                answers = [await client.post("/serve/acme/classifier/p", headers=bearer(ACME_KEY)) for _ in range(4)]
                await asyncio.sleep(0.1)
                return [a.status for a in answers], dropping.hits, fine.hits, database.failures

    statuses, dropped, served, failures = run(scenario())
    assert statuses == [200] * 4
    assert dropped == 1 and served == 4  # tried once, then skipped as a suspect
    assert failures == []


def test_when_every_replica_is_gone_the_answer_is_502_and_with_none_ready_503():
    async def scenario():
        dead = [(101, f"http://127.0.0.1:{unused_port()}"), (102, f"http://127.0.0.1:{unused_port()}")]
        database = FakeDatabase(two_tenants(dead))
        async with running_gateway(database) as (_, client):
            gone = await client.post("/serve/acme/classifier/p", headers=bearer(ACME_KEY))
            none = await client.post("/serve/globex/search/p", headers=bearer(GLOBEX_KEY))
            return gone.status, await gone.json(), none.status, await none.json(), none.headers.get("Retry-After")

    gone_status, gone, none_status, none, retry_after = run(scenario())
    assert gone_status == 502 and gone["code"] == "bad_gateway" and "2 tried" in gone["detail"]
    assert none_status == 503 and none["code"] == "unavailable" and retry_after == "1"


def test_a_slow_replica_is_a_504_and_is_not_retried():
    async def scenario():
        async with replicas("slow", "other") as (slow, other):
            slow.delay_s = other.delay_s = 1.0
            database = FakeDatabase(two_tenants([(101, slow.url), (102, other.url)]))
            async with running_gateway(database, timeout_s=0.2) as (_, client):
                response = await client.get("/serve/acme/classifier/p", headers=bearer(ACME_KEY))
                return response.status, slow.hits + other.hits, database.failures

    status, hits, failures = run(scenario())
    assert status == 504
    assert hits == 1
    assert failures == []


def test_a_replica_error_passes_through_and_counts_as_an_error():
    async def scenario():
        async with replicas("broken") as (broken,):
            broken.status = 500
            database = FakeDatabase(two_tenants([(101, broken.url)]))
            async with running_gateway(database) as (gateway, client):
                response = await client.get("/serve/acme/classifier/p", headers=bearer(ACME_KEY))
                await gateway.flush_traffic(final=True)
                return response.status, database.flushes[-1][1]

    status, rows = run(scenario())
    assert status == 500
    assert sum(r.counts.errors for r in rows) == 1 and sum(r.counts.requests for r in rows) == 1


def test_a_key_over_its_rate_limit_gets_429_with_retry_after():
    clock = Clock()

    async def scenario():
        async with replicas("r1") as (r1,):
            database = FakeDatabase(two_tenants([(101, r1.url)], rate=2))
            async with running_gateway(database, clock=clock) as (gateway, client):
                burst = [await client.get("/serve/acme/classifier/p", headers=bearer(ACME_KEY)) for _ in range(3)]
                refused = burst[-1]
                clock.now += 0.5  # one token back at 2/s
                later = await client.get("/serve/acme/classifier/p", headers=bearer(ACME_KEY))
                await gateway.flush_traffic(final=True)
                return [b.status for b in burst], refused.headers.get("Retry-After"), later.status, database

    statuses, retry_after, later, database = run(scenario())
    assert statuses == [200, 200, 429]
    assert retry_after == "1"
    assert later == 200
    rows = database.flushes[-1][1]
    assert sum(r.counts.throttled for r in rows) == 1
    assert sum(r.counts.requests for r in rows) == 3  # a refused request is not load on the replicas


def test_traffic_is_flushed_in_batches_not_per_request():
    clock = Clock(2_000_000.2)

    async def scenario():
        async with replicas("r1") as (r1,):
            database = FakeDatabase(two_tenants([(101, r1.url)]))
            async with running_gateway(database, clock=clock) as (gateway, client):
                for _ in range(20):
                    await client.get("/serve/acme/classifier/p", headers=bearer(ACME_KEY))
                await gateway.flush_traffic()  # the current second is not over: nothing to write
                nothing_yet = len(database.flushes)
                clock.now += 1
                await gateway.flush_traffic()
                return nothing_yet, database.flushes

    nothing_yet, flushes = run(scenario())
    assert nothing_yet == 0
    assert len(flushes) == 1
    gateway_id, rows, used_keys = flushes[0]
    assert gateway_id == "test:1"
    assert [(r.service_id, r.second, r.counts.requests) for r in rows] == [(1, 2_000_000, 20)]
    assert sum(rows[0].counts.buckets) == 20 and rows[0].counts.latency_sum_ms > 0
    assert list(used_keys) == [11]


def test_a_failed_flush_keeps_the_counts_for_the_next_one():
    clock = Clock(2_000_000.5)

    async def scenario():
        async with replicas("r1") as (r1,):
            database = FakeDatabase(two_tenants([(101, r1.url)]))
            async with running_gateway(database, clock=clock) as (gateway, client):
                await client.get("/serve/acme/classifier/p", headers=bearer(ACME_KEY))
                clock.now += 1
                database.down = True
                await gateway.flush_traffic()
                database.down = False
                await gateway.flush_traffic()
                return database.flushes

    flushes = run(scenario())
    assert len(flushes) == 1
    assert flushes[0][1][0].counts.requests == 1


def test_the_routing_table_follows_the_database_and_survives_it_being_down():
    async def scenario():
        async with replicas("r1", "r2") as (r1, r2):
            database = FakeDatabase(two_tenants([(101, r1.url)]))
            async with running_gateway(database) as (_, client):
                first = await (await client.get("/serve/acme/classifier/p", headers=bearer(ACME_KEY))).json()
                database.routes = two_tenants([(102, r2.url)])
                await asyncio.sleep(0.2)
                moved = await (await client.get("/serve/acme/classifier/p", headers=bearer(ACME_KEY))).json()
                database.down = True
                await asyncio.sleep(0.2)
                kept = await client.get("/serve/acme/classifier/p", headers=bearer(ACME_KEY))
                return first["replica"], moved["replica"], kept.status

    assert run(scenario()) == ("r1", "r2", 200)


def test_health_says_how_old_the_routing_table_is():
    async def scenario():
        async with running_gateway(FakeDatabase(two_tenants([]))) as (_, client):
            response = await client.get("/healthz")
            return response.status, await response.json()

    status, body = run(scenario())
    assert status == 200 and body["table_age_s"] >= 0
    assert "acme" not in str(body) and set(body) == {"status", "table_age_s"}


def test_health_is_503_until_the_routing_table_was_read_once():
    async def scenario():
        database = FakeDatabase(two_tenants([]), down=True)
        async with running_gateway(database) as (_, client):
            response = await client.get("/healthz")
            return response.status, await response.json()

    assert run(scenario()) == (503, {"status": "starting", "table_age_s": None})


def test_a_path_outside_serve_is_a_404_in_the_api_error_shape():
    async def scenario():
        async with running_gateway(FakeDatabase(two_tenants([]))) as (_, client):
            response = await client.get("/admin/")
            return response.status, await response.json()

    status, body = run(scenario())
    assert status == 404 and body["code"] == "not_found" and "/serve/<tenant>/<service>/" in body["detail"]
