"""Two agents, one user: a research agent and a writing agent share what the user taught both and
keep their own notes private (docs/api.md "Agent scopes"). Run against `make dev`:

    .venv/bin/python examples/agents.py            # shell 2
    .venv/bin/hippocampus events --follow          # shell 3, before or after: every change, live

examples/README.md says what it prints and why.
"""

import argparse
import os
import secrets
import sys

from hippocampus_client import MemoryClient

DEFAULT_ENDPOINT = "http://127.0.0.1:3000"


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", default=os.getenv("HIPPOCAMPUS_ENDPOINT") or DEFAULT_ENDPOINT)
    parser.add_argument("--tenant", default=os.getenv("HIPPOCAMPUS_TENANT") or "acme")
    parser.add_argument("--user", default=f"dana-{secrets.token_hex(3)}", help="default: a new user each run")
    parser.add_argument("--keep", action="store_true", help="do not forget the user at the end")
    return parser.parse_args()


def show(title: str, text: str | None) -> None:
    print(f"  {title}: {text or '(nothing)'}")


def main() -> int:
    args = arguments()
    research = MemoryClient(args.endpoint, args.tenant, agent="research", strict=True)
    writer = MemoryClient(args.endpoint, args.tenant, agent="writer", strict=True)
    user = args.user
    print(f"user {user} of tenant {args.tenant}, agents 'research' and 'writer' on {args.endpoint}\n")

    print("1. The user tells the research agent something both agents should know (share=True),")
    print("   and each agent keeps a note of its own (private by default).")
    research.add(user, "I'm a marine biologist in Lisbon and I prefer short answers.", share=True, wait=True)
    research.add(user, "Found three 2024 papers on coral bleaching in the Red Sea.", wait=True)
    writer.add(user, "I'm writing a blog post called 'Reefs at Risk' in a warm tone.", wait=True)

    print("\n2. What each agent reads (GET …/agents/{agent_id}/memory): the shared memory and its own.")
    for name, client in (("research", research), ("writer", writer)):
        scopes = client.get_scopes(user)
        assert scopes is not None
        print(f" {name}:")
        show("shared", scopes.scopes.shared.memory)
        episodes = client.episodes(user) or []
        show("its own", scopes.scopes.agent.memory or f"no summary; {len(episodes)} turn(s) kept to search")

    print("\n3. What each agent finds for 'coral bleaching papers' (shared + its own, never the other's).")
    for name, client in (("research", research), ("writer", writer)):
        answer = client.query(user, "coral bleaching papers", top_k=3)
        assert answer is not None
        found = [f"[{result.scope} {result.type}] {result.text}" for result in answer.results] or [
            "(nothing)"
        ]
        print(f" {name}: " + "\n         ".join(found))

    print("\n4. The writer's notes are forgotten; the research agent and the shared memory stay.")
    receipt = writer.forget(user)
    print(f"  receipt of the writer's scope: {receipt}")
    scopes = research.get_scopes(user)
    assert scopes is not None
    show("research still reads", scopes.scopes.agent.memory)

    if not args.keep:
        print("\n5. The user is forgotten: the shared memory and every agent's scope.")
        everything = MemoryClient(args.endpoint, args.tenant, strict=True)
        receipt = everything.forget(user)
        counts = everything.deletion(user, receipt) if receipt else None
        print(f"  receipt of the user: {receipt}")
        if counts is not None:
            print(f"  agent scopes erased with it: {counts.erased.dynamodb.agent_scopes}")
        everything.close()
    research.close()
    writer.close()
    print("\n`hippocampus events --follow` showed each change above, and the receipts of both forgets.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
