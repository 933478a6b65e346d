"""On DynamoDB (moto): the tenant's users and a user's jobs, in pages (docs/api.md "Users", "Lists").

A user shows in the tenant's list once a summary or a fact is stored, never another tenant's, and
no longer once forgotten; jobs come newest first, each page after the last one given."""

TENANT = "/v1/tenants/acme"


def memory(user: str, tenant: str = TENANT) -> str:
    return f"{tenant}/users/{user}/memory"


def all_pages(service, path: str, limit: int) -> list[list[dict]]:
    pages, cursor = [], None
    while True:
        query = {"limit": str(limit)} | ({"cursor": cursor} if cursor else {})
        answer = service.call("GET", path, query=query)
        assert answer.status == 200, answer.body
        pages.append(answer.body["items"])
        cursor = answer.body["next_cursor"]
        if cursor is None:
            return pages


def test_the_users_list_holds_users_with_memory_or_facts_by_id_and_forgets_with_them(service):
    service.call("POST", memory("carol"), {"items": [{"id": "t1", "text": "I sell candles."}]})
    service.call("POST", memory("alice"), {"items": [{"id": "f1", "text": "Likes tea.", "infer": False}]})
    service.call("POST", memory("bob"), {"items": [{"id": "t1", "text": "I run a bakery."}]})
    service.call(
        "POST", memory("dave", "/v1/tenants/other"), {"items": [{"id": "f", "text": "x", "infer": False}]}
    )
    assert all_pages(service, TENANT + "/users", 10) == [[{"user_id": "alice"}]]  # turns not condensed yet
    service.drain()
    pages = all_pages(service, TENANT + "/users", 2)
    assert [[user["user_id"] for user in page] for page in pages] == [["alice", "bob"], ["carol"]]
    assert service.call("DELETE", memory("bob")).status == 204
    assert all_pages(service, TENANT + "/users", 10) == [[{"user_id": "alice"}, {"user_id": "carol"}]]
    service.call("POST", memory("bob"), {"items": [{"id": "f2", "text": "Back again.", "infer": False}]})
    listed = all_pages(service, TENANT + "/users", 10)[0]
    assert [user["user_id"] for user in listed] == ["alice", "bob", "carol"]


def test_a_users_jobs_come_newest_first_in_pages_that_never_repeat_one(service):
    for n in range(5):
        service.call(
            "POST", memory("alice"), {"items": [{"id": f"t{n}", "text": f"Turn {n} about candles."}]}
        )
    service.call("POST", memory("bob"), {"items": [{"id": "b", "text": "Not alice."}]})
    service.drain()
    pages = all_pages(service, memory("alice") + "/jobs", 2)
    assert [len(page) for page in pages] == [2, 2, 1]
    jobs = [job for page in pages for job in page]
    assert [job["item_id"] for job in jobs] == ["t4", "t3", "t2", "t1", "t0"]
    assert {job["status"] for job in jobs} == {"completed"}
    service.call("DELETE", memory("alice"))
    assert all_pages(service, memory("alice") + "/jobs", 10) == [[]]
